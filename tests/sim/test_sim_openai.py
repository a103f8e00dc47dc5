"""OpenAI protocol of the simulated engine, over real HTTP on loopback."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from touchstone_ray.sim import SimConfig, SimModelKnobs, SimServer

TOKENS = 20
MSGS = [
    {"role": "system", "content": "Du bist hilfreich."},
    {"role": "user", "content": "Wie plane ich meinen Tag?"},
]
PROMPT_WORDS = 3 + 5


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    half = {"reasoning_share": 0.5}
    config = SimConfig(
        ttft_ms=5,
        tps=2000,
        answer_tokens=TOKENS,
        model_overrides={
            "rc": SimModelKnobs(reasoning_channel="reasoning_content", **half),
            "r": SimModelKnobs(reasoning_channel="reasoning", **half),
            "tt": SimModelKnobs(reasoning_channel="think_tag", **half),
            "th": SimModelKnobs(reasoning_channel="thinking", **half),
            "slow": SimModelKnobs(ttft_ms=150, tps=50, answer_tokens=10),
            "cmt": SimModelKnobs(comment_rate=1.0),
        },
    )
    with SimServer(config) as sim:
        assert sim.url is not None
        yield sim.url


def stream(url: str, **body: Any) -> tuple[list[str], list[Any]]:
    """Raw lines and parsed events (dicts, or the string ``[DONE]``)."""
    payload = {"model": "m", "messages": MSGS, "stream": True, **body}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=payload, timeout=10) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = list(r.iter_lines())
    events: list[Any] = []
    for line in lines:
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return lines, events


def deltas(events: list[Any]) -> list[dict[str, Any]]:
    return [e["choices"][0]["delta"] for e in events if isinstance(e, dict) and e["choices"]]


def test_stream_shape_usage_and_done(url: str) -> None:
    _, events = stream(url, stream_options={"include_usage": True})
    assert events[-1] == "[DONE]"
    first, *rest = events[:-1]
    assert first["object"] == "chat.completion.chunk"
    assert first["choices"][0]["delta"] == {"role": "assistant"}
    usage_chunk = rest[-1]
    assert usage_chunk["choices"] == []
    final = rest[-2]["choices"][0]
    assert final["finish_reason"] == "stop" and final["delta"] == {}
    tokens = [d["content"] for d in deltas(rest[:-2])]
    usage = usage_chunk["usage"]
    assert usage["completion_tokens"] == len(tokens) == TOKENS
    assert usage["prompt_tokens"] == PROMPT_WORDS
    assert usage["total_tokens"] == TOKENS + PROMPT_WORDS
    assert "".join(tokens).endswith("⟦sim q=0.70⟧")
    assert all(e["usage"] is None for e in rest[:-1])


def test_no_usage_chunk_unless_asked(url: str) -> None:
    _, events = stream(url)
    assert all(e == "[DONE]" or e["choices"] for e in events)
    assert all("usage" not in e for e in events if isinstance(e, dict))


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_max_tokens_stops_with_length(url: str, field: str) -> None:
    _, events = stream(url, stream_options={"include_usage": True}, **{field: 7})
    tokens = [d["content"] for d in deltas(events[1:]) if d.get("content")]
    assert len(tokens) == 7
    assert events[-3]["choices"][0]["finish_reason"] == "length"
    assert events[-2]["usage"]["completion_tokens"] == 7


@pytest.mark.parametrize(
    ("model", "field"),
    [("rc", "reasoning_content"), ("r", "reasoning"), ("th", "reasoning_content")],
)
def test_reasoning_channels(url: str, model: str, field: str) -> None:
    _, events = stream(url, model=model, stream_options={"include_usage": True})
    ds = deltas(events[1:-2])
    reasoning = [d[field] for d in ds if field in d]
    content = [d["content"] for d in ds if "content" in d]
    assert len(reasoning) == len(content) == TOKENS // 2
    assert ds.index({"content": content[0]}) == TOKENS // 2  # reasoning first
    usage = events[-2]["usage"]
    assert usage["completion_tokens"] == TOKENS
    assert usage["completion_tokens_details"]["reasoning_tokens"] == TOKENS // 2


def test_think_tag_channel(url: str) -> None:
    _, events = stream(url, model="tt")
    content = [d["content"] for d in deltas(events[1:-1]) if "content" in d]
    assert len(content) == TOKENS
    assert content[0].startswith("<think>")
    assert content[TOKENS // 2 - 1].endswith("</think>\n\n")
    assert "<think>" not in "".join(content[1:])


def test_thinking_off_drops_reasoning(url: str) -> None:
    body = {"chat_template_kwargs": {"enable_thinking": False}}
    _, events = stream(url, model="rc", stream_options={"include_usage": True}, **body)
    assert not any("reasoning_content" in d for d in deltas(events))
    assert events[-2]["usage"]["completion_tokens"] == TOKENS // 2


def test_non_stream_matches_stream(url: str) -> None:
    _, events = stream(url, model="rc")
    ds = deltas(events)
    r = httpx.post(f"{url}/v1/chat/completions", json={"model": "rc", "messages": MSGS})
    body = r.json()
    assert body["object"] == "chat.completion"
    message = body["choices"][0]["message"]
    assert message["content"] == "".join(d.get("content", "") for d in ds)
    assert message["reasoning_content"] == "".join(d.get("reasoning_content", "") for d in ds)
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == TOKENS


def _text(url: str, **body: Any) -> str:
    _, events = stream(url, **body)
    return "".join(d.get("content", "") for d in deltas(events))


def test_deterministic_per_model_messages_seed(url: str) -> None:
    assert _text(url) == _text(url)
    assert _text(url) != _text(url, model="other")
    sampled = {"temperature": 0.7, "seed": 1}
    assert _text(url, **sampled) == _text(url, **sampled)
    assert _text(url, **sampled) != _text(url, temperature=0.7, seed=2)
    with SimServer(SimConfig(ttft_ms=5, tps=2000, answer_tokens=TOKENS, seed=1)) as other:
        assert other.url is not None
        assert _text(other.url) != _text(url)
        assert len(_text(other.url).split()) == len(_text(url).split())


def test_ttft_and_pacing(url: str) -> None:
    payload = {"model": "slow", "messages": MSGS, "stream": True}
    arrivals: list[float] = []
    with httpx.Client() as client:  # built first: its SSL context takes ~20-100 ms
        t0 = time.perf_counter()
        with client.stream("POST", f"{url}/v1/chat/completions", json=payload) as r:
            for line in r.iter_lines():
                if line.startswith("data: {") and '"content"' in line:
                    arrivals.append(time.perf_counter() - t0)
    assert len(arrivals) == 10
    assert arrivals[0] == pytest.approx(0.150, abs=0.030)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert all(g == pytest.approx(0.020, abs=0.030) for g in gaps)
    assert arrivals[-1] == pytest.approx(0.150 + 9 * 0.020, abs=0.030)  # no drift


def test_sse_comment_lines(url: str) -> None:
    lines, events = stream(url, model="cmt")
    assert lines.count(": keep-alive") == TOKENS
    assert events[-1] == "[DONE]"


def test_models_version_and_404() -> None:
    with SimServer(SimConfig(models=["a", "b"])) as sim:
        assert httpx.get(f"{sim.url}/version").json() == {"version": "sim"}
        listing = httpx.get(f"{sim.url}/v1/models").json()
        assert listing["object"] == "list"
        assert [(m["id"], m["object"]) for m in listing["data"]] == [
            ("a", "model"),
            ("b", "model"),
        ]
        r = httpx.post(f"{sim.url}/v1/chat/completions", json={"model": "zzz", "messages": MSGS})
        assert r.status_code == 404
        assert "zzz" in r.json()["error"]["message"]
        r = httpx.post(f"{sim.url}/v1/chat/completions", json={"model": "a", "messages": []})
        assert r.status_code == 400
