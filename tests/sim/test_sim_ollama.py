"""Ollama protocol of the simulated engine, over real HTTP on loopback."""

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
MSGS = [{"role": "user", "content": "Bitte hilf mir beim Aufräumen."}]
FINAL_KEYS = {
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = SimConfig(
        ttft_ms=5,
        tps=2000,
        answer_tokens=TOKENS,
        model_overrides={
            "think": SimModelKnobs(reasoning_share=0.25, reasoning_channel="think_tag"),
            "slow": SimModelKnobs(ttft_ms=150, tps=50, answer_tokens=10),
            "short": SimModelKnobs(default_num_ctx=3, context_length=32768),
        },
    )
    with SimServer(config) as sim:
        assert sim.url is not None
        yield sim.url


def chat(url: str, **body: Any) -> list[dict[str, Any]]:
    payload = {"model": "m", "messages": MSGS, **body}
    with httpx.stream("POST", f"{url}/api/chat", json=payload, timeout=10) as r:
        assert r.status_code == 200, r.read()
        return [json.loads(line) for line in r.iter_lines() if line]


def test_stream_ndjson_shape_and_counts(url: str) -> None:
    lines = chat(url)
    *tokens, final = lines
    assert len(tokens) == TOKENS
    for line in tokens:
        assert line["done"] is False and line["model"] == "m"
        assert line["message"]["role"] == "assistant"
        assert "thinking" not in line["message"]
        assert line["created_at"].endswith("Z")
    assert final["done"] is True and final["done_reason"] == "stop"
    assert final.keys() >= FINAL_KEYS
    assert all(isinstance(final[k], int) for k in FINAL_KEYS)
    assert final["eval_count"] == TOKENS
    assert final["prompt_eval_count"] == 5
    assert final["eval_duration"] == round(TOKENS / 2000 * 1e9)
    assert "".join(t["message"]["content"] for t in tokens).endswith("⟦sim q=0.70⟧")


def test_thinking_channel_and_think_false(url: str) -> None:
    *tokens, final = chat(url, model="think")
    thinking = [t["message"]["thinking"] for t in tokens if "thinking" in t["message"]]
    content = [t["message"]["content"] for t in tokens if t["message"]["content"]]
    assert len(thinking) == 5 and len(content) == 15
    assert final["eval_count"] == TOKENS
    assert not any("<think>" in c for c in content)  # Ollama always uses message.thinking
    *tokens, final = chat(url, model="think", think=False)
    assert not any("thinking" in t["message"] for t in tokens)
    assert final["eval_count"] == len(tokens) == 15


def test_num_predict_length(url: str) -> None:
    *tokens, final = chat(url, options={"num_predict": 4, "temperature": 0, "seed": 3})
    assert len(tokens) == 4
    assert final["done_reason"] == "length" and final["eval_count"] == 4


def test_non_stream_is_one_object(url: str) -> None:
    streamed = "".join(t["message"]["content"] for t in chat(url))
    r = httpx.post(f"{url}/api/chat", json={"model": "m", "messages": MSGS, "stream": False})
    body = r.json()
    assert body["done"] is True and body["message"]["content"] == streamed
    assert body["eval_count"] == TOKENS


def test_deterministic(url: str) -> None:
    def text(**body: Any) -> str:
        return "".join(t["message"]["content"] for t in chat(url, **body))

    assert text() == text()
    sampled = {"options": {"temperature": 0.8, "seed": 5}}
    assert text(**sampled) == text(**sampled)
    assert text(**sampled) != text(options={"temperature": 0.8, "seed": 6})


def test_ttft_and_pacing(url: str) -> None:
    payload = {"model": "slow", "messages": MSGS}
    arrivals: list[float] = []
    with httpx.Client() as client:  # built first: its SSL context takes ~20-100 ms
        t0 = time.perf_counter()
        with client.stream("POST", f"{url}/api/chat", json=payload) as r:
            for line in r.iter_lines():
                if line and not json.loads(line)["done"]:
                    arrivals.append(time.perf_counter() - t0)
    assert len(arrivals) == 10
    assert arrivals[0] == pytest.approx(0.150, abs=0.030)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert all(g == pytest.approx(0.020, abs=0.030) for g in gaps)
    assert arrivals[-1] == pytest.approx(0.150 + 9 * 0.020, abs=0.030)


def test_keep_alive_zero_unloads_and_ps(url: str) -> None:
    chat(url, model="kept")
    ps = httpx.get(f"{url}/api/ps").json()["models"]
    kept = [m for m in ps if m["name"] == "kept"]
    assert kept and kept[0]["expires_at"] and kept[0]["size_vram"] > 0
    chat(url, model="kept", keep_alive=0)
    assert "kept" not in [m["name"] for m in httpx.get(f"{url}/api/ps").json()["models"]]
    chat(url, model="kept", keep_alive="10m")
    assert "kept" in [m["name"] for m in httpx.get(f"{url}/api/ps").json()["models"]]


def test_load_and_unload_requests(url: str) -> None:
    r = httpx.post(f"{url}/api/chat", json={"model": "ctl", "messages": []})
    assert r.json()["done_reason"] == "load" and r.json()["done"] is True
    assert "ctl" in [m["name"] for m in httpx.get(f"{url}/api/ps").json()["models"]]
    r = httpx.post(f"{url}/api/chat", json={"model": "ctl", "messages": [], "keep_alive": 0})
    assert r.json()["done_reason"] == "unload" and r.json()["done"] is True
    assert "ctl" not in [m["name"] for m in httpx.get(f"{url}/api/ps").json()["models"]]


def test_tags_and_version(url: str) -> None:
    assert httpx.get(f"{url}/api/version").json() == {"version": "0.0.0-sim"}
    chat(url, model="listed")
    models = httpx.get(f"{url}/api/tags").json()["models"]
    entry = next(m for m in models if m["name"] == "listed")
    assert {"name", "model", "modified_at", "size", "digest", "details"} <= entry.keys()
    with SimServer(SimConfig(models=["only"])) as sim:
        tags = httpx.get(f"{sim.url}/api/tags").json()["models"]
        assert [m["name"] for m in tags] == ["only"]
        r = httpx.post(f"{sim.url}/api/chat", json={"model": "nope", "messages": MSGS})
        assert r.status_code == 404 and "nope" in r.json()["error"]


def test_a_prompt_longer_than_the_context_is_cut_silently(url: str) -> None:
    # MSGS is 5 words = 5 prompt tokens; "short" has a default context of 3
    *_, final = chat(url, model="short")
    assert (final["prompt_eval_count"], final["done_reason"]) == (3, "stop")
    *_, final = chat(url, model="short", options={"num_ctx": 4})
    assert final["prompt_eval_count"] == 4
    *_, final = chat(url, model="short", options={"num_ctx": 4096})
    assert final["prompt_eval_count"] == 5
    *_, final = chat(url, model="m")  # no default context: nothing cut
    assert final["prompt_eval_count"] == 5


def test_show_reports_the_context_length_where_known(url: str) -> None:
    shown = httpx.post(f"{url}/api/show", json={"model": "short"}, timeout=10).json()
    assert shown["model_info"] == {"general.architecture": "sim", "sim.context_length": 32768}
    shown = httpx.post(f"{url}/api/show", json={"model": "m"}, timeout=10).json()
    assert shown["model_info"] == {"general.architecture": "sim"}
    models = httpx.get(f"{url}/v1/models", timeout=10).json()["data"]
    assert {m["id"]: m.get("max_model_len") for m in models}["short"] == 32768
