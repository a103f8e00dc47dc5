"""Errors, deadlines and retries of both protocols against a replay server on loopback."""

from __future__ import annotations

import asyncio
import socket
import time

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

from touchstone_ray.engines import ChatResult
from touchstone_ray.engines._retry import RetryPolicy
from touchstone_ray.engines.openai import OpenAIEngine
from touchstone_ray.errors import EngineError

CHAT = "/v1/chat/completions"
OLLAMA_CHAT = "/api/chat"
NDJSON = "application/x-ndjson"


def ok_sse(*events: object, delay_s: float = 0.01) -> Reply:
    return Reply(chunks=sse(*events, delay_s=delay_s))  # type: ignore[arg-type]


class FixedBackoff(RetryPolicy):
    def backoff_s(self, attempt: int, error: EngineError) -> float:
        return 0.7


def test_503_loading_then_success(replay: ReplayServer) -> None:
    loading = Reply(
        503,
        [(0, b'{"error": {"message": "Loading model", "code": 503}}')],
        content_type="application/json",
    )
    good = ok_sse(delta("Da"), delta(finish="stop"), usage(1, 1), "[DONE]")
    replay.set(CHAT, lambda n, elapsed: loading if elapsed < 2.0 else good)
    engine = OpenAIEngine(settings(replay.url + "/v1", max_attempts=1, load_timeout_s=5))
    engine.retry_policy = lambda: FixedBackoff(engine.settings)  # type: ignore[method-assign]

    async def go() -> ChatResult:
        try:
            return await engine.chat(REQ)
        finally:
            await engine.aclose()

    r = run(go())
    # requests at ~0, 0.7, 1.4 (503) and ~2.1 s (200): loading does not use up max_attempts=1
    assert r.ok and r.response_text == "Da"
    assert r.attempt == 4 == replay.count(CHAT)


def test_503_loading_gives_up_after_load_timeout(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(503, [(0, b"model is loading")], content_type="text/plain"))
    t = time.monotonic()
    r = chat_once("openai", replay.url, load_timeout_s=0.5)
    assert time.monotonic() - t < 1.5
    assert (r.ok, r.error_kind) == (False, "http_5xx")
    assert r.error is not None and "503" in r.error and "loading" in r.error
    assert r.attempt == replay.count(CHAT) > 3  # more than max_attempts: a separate budget


def test_error_event_mid_stream(replay: ReplayServer) -> None:
    replay.set(
        CHAT, ok_sse(delta("Teil"), {"error": {"message": "engine died", "code": 500}}, "[DONE]")
    )
    r = chat_once("openai", replay.url)
    assert (r.ok, r.error_kind, r.attempt, replay.count(CHAT)) == (False, "protocol", 1, 1)
    assert r.error == "error event in stream: engine died"
    assert r.response_text == "" and r.t_start is not None and r.t_end is not None


def test_garbage_bytes_are_protocol(replay: ReplayServer) -> None:
    replay.set(
        OLLAMA_CHAT,
        Reply(
            chunks=[
                (0, b'{"message": {"content": "a"}, "done": false}\n'),
                (0.01, b"\x00\x01 garbage\n"),
            ],
            content_type=NDJSON,
        ),
    )
    r = chat_once("ollama", replay.url)
    assert (r.ok, r.error_kind, r.attempt) == (False, "protocol", 1)
    assert r.error is not None and r.error.startswith("malformed chunk")


def test_stall_past_the_deadline(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(chunks=sse(delta("a")), end="hang"))
    t = time.monotonic()
    r = chat_once("openai", replay.url, timeout_s=0.8, max_attempts=1)
    took = time.monotonic() - t
    assert 0.8 <= took < 0.8 + 0.3
    assert (r.ok, r.error_kind, r.attempt) == (False, "timeout", 1)
    assert r.t_end is not None and r.t_start is not None
    assert 0.8 - 0.01 <= r.t_end - r.t_start <= took  # the attempt ended at its deadline


def test_disconnect_mid_stream_is_retried_then_protocol(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(chunks=sse(delta("a"), delta("b"), delay_s=0.01), end="cut"))
    r = chat_once("openai", replay.url)
    assert (r.ok, r.error_kind, r.attempt, replay.count(CHAT)) == (False, "protocol", 3, 3)
    assert r.error is not None and r.error.startswith("stream cut mid-way")


def test_disconnect_then_success_keeps_the_last_attempts_timing(replay: ReplayServer) -> None:
    cut = Reply(chunks=ndjson(omsg("x")), end="cut", content_type=NDJSON)
    replay.set(
        OLLAMA_CHAT,
        [cut, Reply(chunks=ndjson(omsg("Ja"), odone("stop"), delay_s=0.05), content_type=NDJSON)],
    )
    r = chat_once("ollama", replay.url)
    assert (r.ok, r.attempt, r.response_text) == (True, 2, "Ja")
    assert_sent_at(replay.requests(OLLAMA_CHAT)[1], r, "ttft_s", 0, 0.05)


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (404, b'{"error": "model \\"m\\" not found"}', "http_4xx"),
        (400, b'{"error": {"message": "maximum context length is 4096 tokens"}}', "context"),
        (500, b'{"error": "prompt exceeds the context window"}', "context"),
    ],
)
def test_4xx_and_context_errors_are_not_retried(
    replay: ReplayServer, status: int, body: bytes, kind: str
) -> None:
    replay.set(CHAT, Reply(status, [(0, body)], content_type="application/json"))
    r = chat_once("openai", replay.url)
    assert (r.ok, r.error_kind, r.attempt, replay.count(CHAT)) == (False, kind, 1, 1)
    assert r.error is not None and r.error.startswith(f"HTTP {status}")


def test_5xx_retried_max_attempts_times(replay: ReplayServer) -> None:
    replay.set(
        OLLAMA_CHAT,
        Reply(500, [(0, b'{"error": "context canceled"}')], content_type="application/json"),
    )
    r = chat_once("ollama", replay.url, max_attempts=4)
    assert (r.ok, r.error_kind, r.attempt, replay.count(OLLAMA_CHAT)) == (False, "http_5xx", 4, 4)
    assert r.error == 'HTTP 500 Internal Server Error: {"error": "context canceled"}'


def test_connect_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = chat_once("openai", f"http://127.0.0.1:{port}", max_attempts=2)
    assert (r.ok, r.error_kind, r.attempt) == (False, "connect", 2)
    assert r.error is not None and "cannot reach" in r.error


def test_cancellation_propagates(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(chunks=sse(delta("a")), end="hang"))

    async def go() -> None:
        engine = OpenAIEngine(settings(replay.url + "/v1"))
        try:
            task = asyncio.create_task(engine.chat(REQ))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await engine.aclose()

    run(go())
    assert replay.count(CHAT) == 1


def test_end_marker_then_open_connection_is_still_ok(replay: ReplayServer) -> None:
    """A server that sends [DONE] but keeps the body open: the answer stands (the deadline
    stops at the end marker; the drain gives up after 1 s)."""
    replay.set(CHAT, Reply(chunks=sse(delta("fertig", finish="stop"), "[DONE]"), end="hang"))
    r = chat_once("openai", replay.url, timeout_s=0.5)
    assert (r.ok, r.response_text, r.attempt) == (True, "fertig", 1)
    assert r.e2e_s is not None and r.e2e_s < 0.1
