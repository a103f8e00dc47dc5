"""The server-specific engines (llamacpp, vllm, lmstudio) against a replay server on loopback:
recorded streams, identity, context limits, tokenizers and metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import REQ, ReplayServer, Reply, run, settings

from touchstone_ray.engines import ChatRequest, ChatResult, Engine, EngineSettings, create_engine
from touchstone_ray.engines.llamacpp import LlamaCppEngine
from touchstone_ray.engines.openai import OpenAIEngine
from touchstone_ray.engines.vllm import TTFT_METRIC, histogram_totals, ttft_check

RECORDINGS = Path(__file__).parent / "recordings"
CHAT = "/v1/chat/completions"


def recorded(name: str, delay_s: float = 0.01) -> Reply:
    """The recording ``name`` replayed event by event, ``delay_s`` apart."""
    raw = (RECORDINGS / name).read_bytes()
    events = [e + b"\n\n" for e in raw.split(b"\n\n") if e]
    return Reply(chunks=[(delay_s, e) for e in events])


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, [(0, json.dumps(data).encode())], content_type="application/json")


def call(engine: Engine, coro_name: str, *args: Any) -> Any:
    async def go() -> Any:
        try:
            return await getattr(engine, coro_name)(*args)
        finally:
            await engine.aclose()

    return run(go())


def make(kind: str, replay: ReplayServer, **kw: Any) -> Engine:
    return create_engine(kind, settings(replay.url + "/v1", **kw))


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        (
            "vllm",
            "vllm_reasoning_content.sse",
            ("Berlin ist die Hauptstadt.", "Die Frage ist einfach.", "reasoning_content"),
        ),
        ("vllm", "vllm_reasoning.sse", ("Ja.", "Kurz nachdenken.", "reasoning")),
        ("lmstudio", "lmstudio_reasoning.sse", ("Guten Tag!", "Hmm, gut", "reasoning")),
    ],
)
def test_recorded_streams(
    replay: ReplayServer, kind: str, name: str, expected: tuple[str, str, str]
) -> None:
    replay.set(CHAT, recorded(name))
    r: ChatResult = call(make(kind, replay), "chat", REQ)
    assert r.ok and r.attempt == 1
    assert (r.response_text, r.reasoning_text, r.reasoning_source) == expected
    assert r.token_count_source == "server" and r.server_timings is None


def test_vllm_recording_counts_and_cache() -> None:
    server = ReplayServer()
    server.start()
    try:
        server.set(CHAT, recorded("vllm_reasoning_content.sse"))
        r: ChatResult = call(make("vllm", server), "chat", REQ)
        server.set(CHAT, recorded("vllm_reasoning.sse"))
        r2: ChatResult = call(make("vllm", server), "chat", REQ)
    finally:
        server.stop()
    assert (r.prompt_tokens, r.completion_tokens, r.finish_reason) == (18, 11, "stop")
    assert (r.cached_tokens, r.prompt_cached) == (16, True)
    assert r.ttft_s is not None and r.prefill_tps == pytest.approx((18 - 16) / r.ttft_s)
    # prompt_tokens_details: null -> the server said nothing about its cache
    assert (r2.cached_tokens, r2.prompt_cached, r2.finish_reason, r2.truncated) == (
        None,
        False,
        "length",
        True,
    )


def test_vllm_identity_context_and_tokenizer(replay: ReplayServer) -> None:
    replay.set("/version", json_reply({"version": "0.8.1"}))
    models = {"data": [{"id": "Qwen/Qwen3-8B", "root": "/models/qwen3", "max_model_len": 32768}]}
    replay.set("/v1/models", json_reply(models))
    replay.set("/tokenize", json_reply({"count": 57, "max_model_len": 32768, "tokens": []}))
    assert call(make("vllm", replay), "server_info") == ("vllm", "0.8.1")
    assert call(make("vllm", replay), "context_limit", "Qwen/Qwen3-8B") == 32768
    assert call(make("vllm", replay), "context_limit", "other") is None
    assert call(make("vllm", replay), "server_facts", "Qwen/Qwen3-8B") == {
        "version": "0.8.1",
        "max_model_len": 32768,
        "root": "/models/qwen3",
    }
    count = call(make("vllm", replay), "count_prompt_tokens", "Qwen/Qwen3-8B", REQ.messages)
    assert count == 57
    [tokenize] = replay.requests("/tokenize")
    assert tokenize.body == {"model": "Qwen/Qwen3-8B", "messages": REQ.messages}


METRICS_BEFORE = f"""# HELP {TTFT_METRIC} Histogram of time to first token in seconds.
# TYPE {TTFT_METRIC} histogram
{TTFT_METRIC}_bucket{{le="0.1",model_name="Qwen/Qwen3-8B"}} 3.0
{TTFT_METRIC}_bucket{{le="+Inf",model_name="Qwen/Qwen3-8B"}} 4.0
{TTFT_METRIC}_count{{model_name="Qwen/Qwen3-8B"}} 4.0
{TTFT_METRIC}_sum{{model_name="Qwen/Qwen3-8B"}} 0.52
{TTFT_METRIC}_count{{model_name="other"}} 9.0
{TTFT_METRIC}_sum{{model_name="other"}} 7.0
vllm:e2e_request_latency_seconds_count{{model_name="Qwen/Qwen3-8B"}} 4.0
"""


def test_histogram_totals_per_model() -> None:
    assert histogram_totals(METRICS_BEFORE, TTFT_METRIC, "Qwen/Qwen3-8B") == {
        "count": 4.0,
        "sum_s": 0.52,
    }
    assert histogram_totals(METRICS_BEFORE, TTFT_METRIC) == {"count": 13.0, "sum_s": 7.52}
    assert histogram_totals("# nothing here\n", TTFT_METRIC) is None


def test_vllm_metrics_snapshots_diff_to_the_servers_mean_ttft(replay: ReplayServer) -> None:
    label = '{model_name="Qwen/Qwen3-8B"}'
    after = METRICS_BEFORE.replace(f"_count{label} 4.0", f"_count{label} 6.0")
    after = after.replace(f"_sum{label} 0.52", f"_sum{label} 0.82")
    pages = [METRICS_BEFORE, after]
    replay.set(
        "/metrics",
        lambda n, _: Reply(chunks=[(0, pages[min(n, 1)].encode())], content_type="text/plain"),
    )
    engine = make("vllm", replay)

    async def go() -> list[Any]:
        try:
            return [await engine.server_metrics("Qwen/Qwen3-8B") for _ in range(2)]
        finally:
            await engine.aclose()

    before_snap, after_snap = run(go())
    assert before_snap == {"ttft_count": 4.0, "ttft_sum_s": 0.52}
    assert after_snap == {"ttft_count": 6.0, "ttft_sum_s": 0.82}
    check = ttft_check(before_snap, after_snap)
    assert check["metric"] == TTFT_METRIC and check["requests"] == 2
    assert check["server_ttft_mean_s"] == pytest.approx((0.82 - 0.52) / 2)
    # a missing snapshot, or counters reset by a restart: nothing to compare
    empty = {"metric": TTFT_METRIC, "requests": None, "server_ttft_mean_s": None}
    assert ttft_check(None, after_snap) == empty
    assert ttft_check(after_snap, before_snap) == empty
    replay.set("/metrics", Reply(404, [(0, b"not found")], content_type="text/plain"))
    assert call(make("vllm", replay), "server_metrics", "Qwen/Qwen3-8B") is None


LMS_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "qwen/qwen3-4b",
            "object": "model",
            "type": "llm",
            "publisher": "qwen",
            "arch": "qwen3",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "loaded",
            "max_context_length": 32768,
            "loaded_context_length": 4096,
        },
        {"id": "other", "state": "not-loaded", "max_context_length": 8192},
    ],
}


def test_lmstudio_facts_and_context(replay: ReplayServer) -> None:
    replay.set("/api/v0/models", json_reply(LMS_MODELS))
    assert call(make("lmstudio", replay), "server_info") == ("lmstudio", None)
    assert call(make("lmstudio", replay), "server_facts", "qwen/qwen3-4b") == {
        "arch": "qwen3",
        "quantization": "Q4_K_M",
        "compatibility_type": "gguf",
        "state": "loaded",
        "max_context_length": 32768,
        "loaded_context_length": 4096,
    }
    assert call(make("lmstudio", replay), "context_limit", "qwen/qwen3-4b") == 4096
    assert call(make("lmstudio", replay), "context_limit", "other") is None
    # the generic engine recognises LM Studio by its REST API, never by the port
    assert call(OpenAIEngine(settings(replay.url + "/v1")), "server_info") == ("lmstudio", None)


PROPS = {
    "default_generation_settings": {"n_ctx": 4096, "params": {}},
    "total_slots": 2,
    "model_path": "/cache/gemma-3-270m-q4_k_m.gguf",
    "model_ftype": "Q4_K - Medium",
    "build_info": "b0-unknown",
}


def test_llamacpp_waits_for_health_then_reads_props(replay: ReplayServer) -> None:
    loading = json_reply({"error": {"code": 503, "message": "Loading model"}}, status=503)
    ready = json_reply({"status": "ok"})
    replay.set("/health", lambda n, elapsed: loading if elapsed < 1.0 else ready)
    replay.set("/props", json_reply(PROPS))
    engine = make("llamacpp", replay)
    assert isinstance(engine, LlamaCppEngine)
    assert call(engine, "server_info") == ("llama.cpp", "b0-unknown")
    assert replay.count("/health") >= 3  # 503 at ~0, 0.5 s, then 200 after 1 s
    assert call(make("llamacpp", replay), "server_facts", "m") == {
        "model_path": "/cache/gemma-3-270m-q4_k_m.gguf",
        "model_ftype": "Q4_K - Medium",
        "n_ctx": 4096,
        "total_slots": 2,
        "build_info": "b0-unknown",
    }
    assert call(make("llamacpp", replay), "context_limit", "m") == 4096


def test_llamacpp_body_turns_the_prompt_cache_off_only_when_asked() -> None:
    on = LlamaCppEngine(EngineSettings(base_url="http://x/v1"))
    off = LlamaCppEngine(EngineSettings(base_url="http://x/v1", prompt_cache=False))
    body_on, sent_on = on.build_body(REQ)
    body_off, sent_off = off.build_body(REQ)
    assert "cache_prompt" not in body_on and "cache_prompt" not in sent_on
    assert (body_off["cache_prompt"], sent_off["cache_prompt"]) == (False, False)
    req = ChatRequest(model="m", messages=REQ.messages, context_tokens=2048)
    assert "num_ctx" not in json.dumps(on.build_body(req)[0])  # OpenAI has no per-request context


def test_any_openai_server_gives_max_model_len_where_listed(replay: ReplayServer) -> None:
    models = {"data": [{"id": "served", "max_model_len": 16384}, {"id": "bare"}]}
    replay.set("/v1/models", json_reply(models))
    engine = OpenAIEngine(settings(replay.url + "/v1"))
    assert call(engine, "context_limit", "served") == 16384  # whatever the engine: value
    assert call(OpenAIEngine(settings(replay.url + "/v1")), "context_limit", "bare") is None
    replay.set("/v1/models", json_reply({"error": "not found"}, status=404))
    assert call(OpenAIEngine(settings(replay.url + "/v1")), "context_limit", "served") is None


SHOW = {  # the shape of Ollama's POST /api/show answer (trimmed)
    "modelfile": "FROM qwen3:8b",
    "template": "{{ .Prompt }}",
    "details": {"family": "qwen3", "parameter_size": "8.2B", "quantization_level": "Q4_K_M"},
    "model_info": {
        "general.architecture": "qwen3",
        "general.parameter_count": 8190735360,
        "qwen3.context_length": 40960,
        "qwen3.embedding_length": 4096,
    },
    "capabilities": ["completion", "tools", "thinking"],
}


def test_ollama_reads_the_models_context_length_from_show(replay: ReplayServer) -> None:
    replay.set("/api/show", json_reply(SHOW))
    engine = create_engine("ollama", settings(replay.url))
    assert engine.sends_context is True
    assert call(engine, "model_context_length", "qwen3:8b") == 40960
    [shown] = replay.requests("/api/show")
    assert (shown.method, shown.body) == ("POST", {"model": "qwen3:8b"})
    no_length = {**SHOW, "model_info": {"general.architecture": "qwen3"}}
    replay.set("/api/show", json_reply(no_length))
    assert call(create_engine("ollama", settings(replay.url)), "model_context_length", "q") is None
    assert OpenAIEngine.sends_context is False
