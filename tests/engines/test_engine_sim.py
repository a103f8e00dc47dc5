"""Both protocols against the simulator (``engine: simulated``), checked against its trace."""

from __future__ import annotations

import itertools
import json
import statistics
from typing import Any

import pytest
from engine_helpers import REQ, run, settings

from touchstone_ray.engines import ChatRequest, ChatResult, Engine, create_engine
from touchstone_ray.errors import ConfigError, EngineConnectError

FAST = {"ttft_ms": 40, "tps": 400, "answer_tokens": 12}
TOL = 0.020
"""Seconds between the sim's true send time and what the client measured (a busy 2-core
machine can delay either side)."""


def sim_chat(
    api: str, knobs: dict[str, Any], req: ChatRequest = REQ, **kw: Any
) -> tuple[ChatResult, list[dict[str, Any]]]:
    """One chat through ``create_engine("simulated")``; returns the result and the sim's
    traces (oldest first)."""
    engine = create_engine("simulated", settings("unused", **kw), sim={"api": api, **knobs})

    async def go() -> tuple[ChatResult, list[dict[str, Any]]]:
        try:
            result = await engine.chat(req)
            root = engine.base_url.removesuffix("/v1")
            _, data = await engine.request_json("GET", root + "/sim/trace?limit=50")
            return result, data["traces"]
        finally:
            await engine.aclose()

    out: tuple[ChatResult, list[dict[str, Any]]] = run(go())
    return out


def token_times(trace: dict[str, Any]) -> list[float]:
    return [t for t, ch in trace["chunks"] if ch in ("content", "reasoning")]


@pytest.mark.parametrize(
    ("api", "channel", "source"),
    [
        ("openai", "reasoning_content", "reasoning_content"),
        ("openai", "reasoning", "reasoning"),
        ("openai", "think_tag", "think_tag"),
        ("ollama", "thinking", "thinking"),
    ],
)
def test_sim_answer_and_timing_match_the_trace(api: str, channel: str, source: str) -> None:
    knobs = {**FAST, "reasoning_share": 0.25, "reasoning_channel": channel}
    r, traces = sim_chat(api, knobs)
    assert r.ok and r.attempt == 1 and r.engine_version == "sim"
    assert (r.reasoning_source, r.finish_reason, r.truncated) == (source, "stop", False)
    assert r.reasoning_text and r.response_text and not r.content_empty
    assert "<think>" not in r.response_text + r.reasoning_text
    assert (r.token_count_source, r.completion_tokens) == ("server", 12)
    assert r.prompt_tokens == 5  # words of the prompt
    (trace,) = traces
    sent = token_times(trace)
    assert len(sent) == 12
    assert r.t_start is not None and r.ttft_s is not None and r.e2e_s is not None
    assert r.t_start + r.ttft_s == pytest.approx(sent[0], abs=TOL)
    first_answer = next(t for t, ch in trace["chunks"] if ch == "content")
    if source == "think_tag":  # the closing tag rides on the last reasoning token
        first_answer = sent[sent.index(first_answer)]
    assert r.ttfa_s is not None
    assert r.t_start + r.ttfa_s == pytest.approx(first_answer, abs=TOL)
    true_gaps = sorted(b - a for a, b in itertools.pairwise(sent))
    assert r.itl_p50_s == pytest.approx(statistics.median(true_gaps), abs=0.003)
    assert r.tpot_s == pytest.approx((r.e2e_s - r.ttft_s) / 11)
    if api == "ollama":
        assert r.request == {"temperature": 0.0, "seed": 42, "num_predict": 64}
    else:
        assert r.request == {"temperature": 0.0, "seed": 42, "max_tokens": 64}


@pytest.mark.parametrize("api", ["openai", "ollama"])
def test_sim_reasoning_only_length_stop(api: str) -> None:
    req = REQ.model_copy(update={"max_tokens": 5})
    r, _ = sim_chat(api, {**FAST, "reasoning_share": 1.0}, req)
    assert r.ok and r.reasoning_only and r.content_empty and r.truncated
    assert (r.finish_reason, r.completion_tokens, r.ttfa_s) == ("length", 5, None)


@pytest.mark.parametrize("api", ["openai", "ollama"])
def test_sim_retries_first_failures_and_loading(api: str) -> None:
    r, traces = sim_chat(api, {**FAST, "fail_first_n": 2})
    assert (r.ok, r.attempt, len(traces)) == (True, 3, 3)
    assert [t["status"] for t in traces] == [500, 500, 200]
    r, traces = sim_chat(
        api, {**FAST, "load_s": 0.4}, max_attempts=1, backoff_base_s=0.1, backoff_max_s=0.2
    )
    assert r.ok and r.attempt == len(traces) >= 2
    assert traces[0]["outcome"] == "loading" and traces[-1]["status"] == 200


@pytest.mark.parametrize("api", ["openai", "ollama"])
@pytest.mark.parametrize(
    ("fault", "kind", "attempts"),
    [
        ("error_event_rate", "protocol", 1),
        ("garbage_rate", "protocol", 1),
        ("disconnect_rate", "protocol", 2),
        ("stall_rate", "timeout", 2),
    ],
)
def test_sim_faults(api: str, fault: str, kind: str, attempts: int) -> None:
    r, traces = sim_chat(api, {**FAST, fault: 1.0}, timeout_s=0.4, max_attempts=2)
    assert (r.ok, r.error_kind, r.attempt, len(traces)) == (False, kind, attempts, attempts)


def test_sim_judge_schema_gives_json() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "red_flag": {"type": "boolean"},
            "rationale": {"type": "string"},
        },
        "required": ["score", "red_flag", "rationale"],
    }
    for api in ("openai", "ollama"):
        req = REQ.model_copy(update={"json_schema": schema, "extra_body": {"think": False}})
        r, _ = sim_chat(api, FAST, req)
        assert r.ok, r.error
        verdict = json.loads(r.response_text)
        assert 1 <= verdict["score"] <= 5 and isinstance(verdict["red_flag"], bool)


def test_sim_metadata_and_aclose_stops_the_server() -> None:
    engine = create_engine("simulated", settings("unused"), sim={"api": "ollama", **FAST})

    async def go(engine: Engine) -> None:
        assert await engine.server_info() == ("sim", None)
        assert (await engine.chat(REQ.model_copy(update={"keep_alive": "5m"}))).ok
        assert await engine.list_models() == ["m"]
        assert await engine.loaded_models() == ["m"]
        await engine.unload("m")
        assert await engine.loaded_models() == []
        await engine.aclose()
        with pytest.raises(EngineConnectError):
            await engine.list_models()
        await engine.aclose()

    run(go(engine))


def test_sim_bad_knobs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"sim\.api"):
        create_engine("simulated", settings("unused"), sim={"api": "grpc"})
    with pytest.raises(ConfigError, match="invalid sim knobs"):
        create_engine("simulated", settings("unused"), sim={"tps_typo": 3})
