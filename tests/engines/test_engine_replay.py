"""Both protocols against a replay server on loopback: answer, token and timing fields."""

from __future__ import annotations

import json

import pytest
from engine_helpers import (
    REQ,
    ReplayServer,
    Reply,
    assert_sent_at,
    chat_once,
    delta,
    ndjson,
    odone,
    omsg,
    run,
    settings,
    sse,
    usage,
)

from touchstone_ray.engines.ollama import OllamaEngine
from touchstone_ray.engines.openai import OpenAIEngine

CHAT = "/v1/chat/completions"
OLLAMA_CHAT = "/api/chat"
NDJSON = "application/x-ndjson"
TOL = 0.020


def ok_sse(*events: object, delay_s: float = 0.01) -> Reply:
    return Reply(chunks=sse(*events, delay_s=delay_s))  # type: ignore[arg-type]


def test_usage_only_in_trailing_empty_choices_chunk(replay: ReplayServer) -> None:
    replay.set(
        CHAT,
        ok_sse(
            delta(role="assistant"),
            delta("Hallo"),
            delta(" Welt"),
            delta(finish="stop"),
            usage(11, 2, reasoning=0),
            "[DONE]",
        ),
    )
    r = chat_once("openai", replay.url)
    assert r.ok and r.error is None and r.error_kind is None and r.attempt == 1
    assert (r.response_text, r.reasoning_text, r.reasoning_source) == ("Hallo Welt", "", None)
    assert (r.prompt_tokens, r.completion_tokens, r.reasoning_tokens) == (11, 2, 0)
    assert r.token_count_source == "server"
    assert (r.finish_reason, r.truncated, r.content_empty, r.reasoning_only) == (
        "stop",
        False,
        False,
        False,
    )
    assert r.request == {"temperature": 0.0, "seed": 42, "max_tokens": 64}
    sent = replay.requests(CHAT)[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_no_usage_at_all_is_estimated(replay: ReplayServer) -> None:
    replay.set(CHAT, ok_sse(delta("Ein"), delta(" Satz"), delta(finish="stop"), "[DONE]"))
    r = chat_once("openai", replay.url)
    assert r.ok and r.token_count_source == "estimated"
    # completion max(2 chunks, ceil(8/4)); prompt ceil(24/4)
    assert (r.completion_tokens, r.prompt_tokens, r.reasoning_tokens) == (2, 6, None)


def test_role_then_reasoning_then_answer_timing(replay: ReplayServer) -> None:
    chunks = [
        (0.05, sse(delta(role="assistant"))[0][1]),
        (0.10, sse(delta(reasoning_content="Zuerst"))[0][1]),  # t = 0.15
        (0.05, sse(delta(reasoning_content=" denken"))[0][1]),  # t = 0.20
        (0.10, sse(delta("Antwort"))[0][1]),  # t = 0.30
        (0.05, sse(delta(finish="stop"))[0][1] + b"data: [DONE]\n\n"),  # t = 0.35
    ]
    replay.set(CHAT, Reply(chunks=chunks))
    r = chat_once("openai", replay.url)
    assert r.ok
    seen = replay.requests(CHAT)[0]
    assert_sent_at(seen, r, "ttft_s", 1, 0.15)  # the role-only chunk 0 does not count
    assert_sent_at(seen, r, "ttfa_s", 3, 0.30)
    assert_sent_at(seen, r, "e2e_s", 4, 0.35)
    sent = seen.send_epochs
    true_p50 = ((sent[2] - sent[1]) + (sent[3] - sent[2])) / 2  # gaps ~0.05, ~0.10
    assert r.itl_p50_s == pytest.approx(true_p50, abs=TOL)
    assert (r.reasoning_text, r.response_text) == ("Zuerst denken", "Antwort")
    assert r.t_start is not None and r.t_end is not None
    assert r.t_end - r.t_start == pytest.approx(r.e2e_s, abs=1e-3)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_reasoning_fields(replay: ReplayServer, field: str) -> None:
    replay.set(
        CHAT,
        ok_sse(
            delta(**{field: "Ich überlege"}),
            delta("Ja."),
            delta(finish="stop"),
            usage(5, 4),
            "[DONE]",
        ),
    )
    r = chat_once("openai", replay.url)
    assert (r.reasoning_source, r.reasoning_text, r.response_text) == (field, "Ich überlege", "Ja.")
    assert (r.reasoning_only, r.content_empty, r.reasoning_tokens) == (False, False, None)


def test_ollama_thinking_field(replay: ReplayServer) -> None:
    replay.set(
        OLLAMA_CHAT,
        Reply(
            chunks=ndjson(omsg("", "Hmm"), omsg("Ja"), odone("stop", 9, 2), delay_s=0.02),
            content_type=NDJSON,
        ),
    )
    r = chat_once("ollama", replay.url)
    assert (r.reasoning_source, r.reasoning_text, r.response_text) == ("thinking", "Hmm", "Ja")
    assert (r.prompt_tokens, r.completion_tokens, r.load_duration_s) == (9, 2, 1.5)
    seen = replay.requests(OLLAMA_CHAT)[0]
    assert_sent_at(seen, r, "ttft_s", 0, 0.02)
    assert_sent_at(seen, r, "ttfa_s", 1, 0.04)
    assert r.request == {"temperature": 0.0, "seed": 42, "num_predict": 64}


def test_think_tag_split_across_network_chunks(replay: ReplayServer) -> None:
    replay.set(
        CHAT,
        ok_sse(
            delta("<think>Plan"),
            delta("</thi"),
            delta("nk>\n\n"),
            delta("Antwort"),
            delta(finish="stop"),
            usage(5, 5),
            "[DONE]",
            delay_s=0.03,
        ),
    )
    r = chat_once("openai", replay.url)
    assert (r.reasoning_source, r.reasoning_text, r.response_text) == (
        "think_tag",
        "Plan",
        "Antwort",
    )
    seen = replay.requests(CHAT)[0]
    assert_sent_at(seen, r, "ttft_s", 0, 0.03)
    assert_sent_at(seen, r, "ttfa_s", 3, 0.12)  # "Antwort", not the "\n\n" after </think>


def test_reasoning_only_stopped_by_length(replay: ReplayServer) -> None:
    replay.set(
        CHAT,
        ok_sse(
            delta(role="assistant"),
            delta(reasoning_content="lange"),
            delta(reasoning_content=" Überlegung", finish="length"),
            usage(5, 64, reasoning=64),
            "[DONE]",
        ),
    )
    r = chat_once("openai", replay.url)
    assert r.ok
    assert (r.response_text, r.reasoning_text) == ("", "lange Überlegung")
    assert (r.reasoning_only, r.content_empty, r.truncated, r.finish_reason) == (
        True,
        True,
        True,
        "length",
    )
    assert r.ttfa_s is None and r.ttft_s is not None
    assert (r.completion_tokens, r.reasoning_tokens) == (64, 64)


@pytest.mark.parametrize(("reason", "text"), [("length", "abgeschnit"), ("load", "")])
def test_ollama_done_reasons(replay: ReplayServer, reason: str, text: str) -> None:
    lines = [omsg(text)] if text else []
    replay.set(
        OLLAMA_CHAT, Reply(chunks=ndjson(*lines, odone(reason, 4, len(lines))), content_type=NDJSON)
    )
    r = chat_once("ollama", replay.url)
    assert r.ok and r.finish_reason == reason
    assert r.truncated is (reason == "length")
    assert r.response_text == text and r.content_empty is (not text)
    assert r.reasoning_only is False
    if not text:
        assert (r.ttft_s, r.ttfa_s, r.itl_p50_s, r.tpot_s) == (None, None, None, None)


def test_api_key_sent_but_never_stored(replay: ReplayServer) -> None:
    replay.set(CHAT, ok_sse(delta("a", finish="stop"), "[DONE]"))
    r = chat_once("openai", replay.url, api_key="sk-very-secret")
    assert replay.requests(CHAT)[0].headers["Authorization"] == "Bearer sk-very-secret"
    assert "sk-very-secret" not in r.model_dump_json()


def test_server_identity_and_metadata(replay: ReplayServer) -> None:
    replay.set(
        "/version", Reply(chunks=[(0, b'{"version": "0.8.1"}')], content_type="application/json")
    )
    replay.set(
        "/v1/models",
        Reply(
            chunks=[(0, json.dumps({"data": [{"id": "Qwen/Qwen3-8B"}, {"id": "b"}]}).encode())],
            content_type="application/json",
        ),
    )
    replay.set(CHAT, ok_sse(delta("a", finish="stop"), "[DONE]"))
    replay.set("/api/version", Reply(chunks=[(0, b'{"version": "0.5.7"}')]))
    replay.set("/api/tags", Reply(chunks=[(0, b'{"models": [{"name": "qwen3:8b"}]}')]))
    replay.set("/api/ps", Reply(chunks=[(0, b'{"models": []}')]))
    replay.set(OLLAMA_CHAT, Reply(chunks=ndjson(odone("unload", None, None))))

    async def go() -> None:
        oa = OpenAIEngine(settings(replay.url + "/v1"))
        ol = OllamaEngine(settings(replay.url))
        try:
            assert await oa.probe_server() == ("vllm", "0.8.1")
            assert await oa.list_models() == ["Qwen/Qwen3-8B", "b"]
            assert await oa.loaded_models() == ["Qwen/Qwen3-8B", "b"]
            assert (await oa.chat(REQ)).engine_version == "vllm 0.8.1"
            assert await ol.server_info() == ("ollama", "0.5.7")
            assert await ol.list_models() == ["qwen3:8b"]
            assert await ol.loaded_models() == []
            await ol.unload("qwen3:8b")
        finally:
            await oa.aclose()
            await ol.aclose()

    run(go())
    unload = replay.requests(OLLAMA_CHAT)[-1].body
    assert unload == {"model": "qwen3:8b", "messages": [], "keep_alive": 0, "stream": False}


def test_llama_cpp_props_identity(replay: ReplayServer) -> None:
    replay.set(
        "/props",
        Reply(chunks=[(0, b'{"default_generation_settings": {}, "build_info": "b4500-abc"}')]),
    )

    async def go() -> tuple[str, str | None]:
        engine = OpenAIEngine(settings(replay.url + "/v1"))
        try:
            return await engine.server_info()
        finally:
            await engine.aclose()

    assert run(go()) == ("llama.cpp", "b4500-abc")


def test_asks_for_an_uncompressed_stream(replay: ReplayServer) -> None:
    replay.set(CHAT, ok_sse(delta("a", finish="stop"), "[DONE]"))
    assert chat_once("openai", replay.url).ok
    headers = replay.requests(CHAT)[0].headers
    assert headers["Accept-Encoding"] == "identity"
    assert "Authorization" not in headers
