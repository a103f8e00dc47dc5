"""The engines against the real llama.cpp server: connections, decode rate, server truth,
prompt cache, context limit and tokenizer (issue #19 items 2, 3, 4, 5, 6, 7)."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest
from llama_server import MODEL_ALIAS, LlamaServer

from touchstone_ray.engines import ChatRequest, ChatResult, EngineSettings, create_engine
from touchstone_ray.engines.base import Engine
from touchstone_ray.engines.openai import OpenAIEngine

MAX_TOKENS = 16


def request(text: str, system: str | None = None, max_tokens: int = MAX_TOKENS) -> ChatRequest:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": text})
    return ChatRequest(
        model=MODEL_ALIAS, messages=messages, temperature=0.0, seed=1, max_tokens=max_tokens
    )


def engine(kind: str, server: LlamaServer, **kw: Any) -> Engine:
    values: dict[str, Any] = {"max_attempts": 1, "timeout_s": 120.0, **kw}
    settings = EngineSettings(base_url=server.base_url, **values)
    return create_engine(kind, settings)


def chats(eng: Engine, reqs: list[ChatRequest]) -> list[ChatResult]:
    async def go() -> list[ChatResult]:
        try:
            return [await eng.chat(r) for r in reqs]
        finally:
            await eng.aclose()

    return asyncio.run(go())


def call(eng: Engine, name: str, *args: Any) -> Any:
    async def go() -> Any:
        try:
            return await getattr(eng, name)(*args)
        finally:
            await eng.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("kind", ["openai", "llamacpp"])
def test_every_cell_ok_at_attempt_1_with_max_attempts_1(
    real_server: LlamaServer, kind: str
) -> None:
    eng = engine(kind, real_server)
    results = chats(eng, [request(f"Nenne die Zahl {i}.", max_tokens=3) for i in range(4)])
    assert [(r.ok, r.attempt, r.error) for r in results] == [(True, 1, None)] * 4
    if kind == "llamacpp":
        assert eng.stale_resends == 0  # a fresh connection per request: nothing to resend
    else:
        # the server closed every pooled connection after its stream: resent, not attempts
        assert isinstance(eng, OpenAIEngine) and eng.stale_resends >= 1


def test_server_formula_for_predicted_per_second(real_server: LlamaServer) -> None:
    body = {
        "model": MODEL_ALIAS,
        "messages": [{"role": "user", "content": "Zähle bis zehn."}],
        "max_tokens": 6,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    req = urllib.request.Request(
        real_server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as resp:
        lines = resp.read().decode().splitlines()
    timings = json.loads([x for x in lines if '"timings"' in x][-1][len("data: ") :])["timings"]
    # llama.cpp's own rate is (n - 1) / predicted_ms: the SPEC §9 decode_tps formula
    expected = (timings["predicted_n"] - 1) / timings["predicted_ms"] * 1000
    assert timings["predicted_per_second"] == pytest.approx(expected, rel=1e-9)


def test_decode_tps_and_server_truth_on_every_cell(real_server: LlamaServer) -> None:
    reqs = [request(f"Erkläre kurz Nummer {i}.", system="Antworte auf Deutsch.") for i in range(3)]
    results = chats(engine("llamacpp", real_server), reqs)
    for r in results:
        assert r.ok and r.server_timings is not None and r.completion_tokens == MAX_TOKENS
        st = r.server_timings
        assert set(st) == {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n"}
        assert st["predicted_n"] == r.completion_tokens and r.cached_tokens == st["cache_n"]
        assert r.prompt_tokens == st["prompt_n"] + st["cache_n"]  # type: ignore[operator]
        server_tps = (st["predicted_n"] - 1) / st["predicted_ms"] * 1000  # type: ignore[operator]
        # the client's window (first token chunk -> end of stream) is the server's window plus
        # one loopback delivery at each end and the usage chunk, a few ms in ~0.5+ s of decode
        assert r.decode_tps == pytest.approx(server_tps, rel=0.03)
        assert r.ttft_s is not None and r.prefill_tps == pytest.approx(
            (r.prompt_tokens - (r.cached_tokens or 0)) / r.ttft_s  # type: ignore[operator]
        )
    # the shared system prompt came from the cache after the first cell
    assert [r.prompt_cached for r in results[1:]] == [True] * 2


def test_prompt_cache_on_and_off(real_server: LlamaServer) -> None:
    same = request("Was ist die Hauptstadt von Frankreich?", system="Sei kurz.", max_tokens=2)
    on = chats(engine("llamacpp", real_server), [same, same])
    off = chats(engine("llamacpp", real_server, prompt_cache=False), [same, same])
    assert on[1].cached_tokens is not None and on[1].cached_tokens > 0 and on[1].prompt_cached
    assert [(r.cached_tokens, r.prompt_cached) for r in off] == [(0, False), (0, False)]
    assert off[0].request["cache_prompt"] is False and "cache_prompt" not in on[0].request


def test_a_prompt_that_shares_nothing_is_not_a_cache_hit(real_server: LlamaServer) -> None:
    # llama.cpp keeps the start token of a slot and reports it as cached (cache_n = 1)
    unique = [request(f"[{i}-qz{i * 7919}] Zähle bis drei.", max_tokens=2) for i in (1, 2)]
    results = chats(engine("llamacpp", real_server), unique)
    for r in results:
        assert r.ok and r.cached_tokens in (0, 1) and r.prompt_cached is False


def test_prompt_beyond_the_slot_is_a_context_error_not_retried(real_server: LlamaServer) -> None:
    eng = engine("llamacpp", real_server, max_attempts=3)
    [r] = chats(eng, [request("Wort " * 5000, max_tokens=4)])
    assert (r.ok, r.error_kind, r.attempt) == (False, "context", 1)
    assert r.error is not None and r.error.startswith("HTTP 400")
    assert "exceeds the available context size (4096 tokens)" in r.error


def test_identity_context_limit_and_exact_token_count(real_server: LlamaServer) -> None:
    facts = call(engine("llamacpp", real_server), "server_facts", MODEL_ALIAS)
    assert facts["n_ctx"] == real_server.n_ctx_per_slot == 4096
    assert facts["total_slots"] == 2 and str(facts["model_path"]).endswith(".gguf")
    assert call(engine("llamacpp", real_server), "context_limit", MODEL_ALIAS) == 4096
    name, _ = call(engine("openai", real_server), "server_info")
    assert name == "llama.cpp"  # the generic engine recognises it: hosts suggests llamacpp
    req = request("Wie spät ist es in Tokio?", system="Antworte knapp.", max_tokens=2)
    count = call(engine("llamacpp", real_server), "count_prompt_tokens", MODEL_ALIAS, req.messages)
    [r] = chats(engine("llamacpp", real_server, prompt_cache=False), [req])
    assert count == r.prompt_tokens
