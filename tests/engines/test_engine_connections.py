"""Pooled connections the server closed are resent at once, not failed attempts (issue #19)."""

from __future__ import annotations

from engine_helpers import REQ, ReplayServer, Reply, delta, run, settings, sse, usage

from touchstone_ray.engines import ChatResult
from touchstone_ray.engines.openai import OpenAIEngine

CHAT = "/v1/chat/completions"
GOOD = Reply(chunks=sse(delta("Ja"), delta(finish="stop"), usage(3, 1), "[DONE]"))


def _chats(engine: OpenAIEngine, n: int) -> list[ChatResult]:
    async def go() -> list[ChatResult]:
        try:
            return [await engine.chat(REQ) for _ in range(n)]
        finally:
            await engine.aclose()

    results: list[ChatResult] = run(go())
    return results


def test_request_dropped_on_a_reused_connection_is_resent_not_counted(
    replay: ReplayServer,
) -> None:
    replay.set(CHAT, GOOD)
    replay.drop_reused = True
    # a fixed version label: no server probe, so only chats use the pool
    engine = OpenAIEngine(settings(replay.url + "/v1", max_attempts=1), version_label="x")
    results = _chats(engine, 3)
    assert [(r.ok, r.attempt, r.response_text) for r in results] == [(True, 1, "Ja")] * 3
    # chats 2 and 3 went out first on the pooled connection of the chat before
    assert replay.dropped == [CHAT, CHAT]
    assert (engine.stale_resends, replay.count(CHAT)) == (2, 3)


def test_a_fresh_connection_that_fails_is_a_failed_attempt(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(chunks=[], end="cut"))
    engine = OpenAIEngine(settings(replay.url + "/v1", max_attempts=2), version_label="x")
    [result] = _chats(engine, 1)
    assert (result.ok, result.error_kind, result.attempt) == (False, "protocol", 2)
    assert (engine.stale_resends, replay.count(CHAT)) == (0, 2)


def test_without_connection_reuse_nothing_is_dropped(replay: ReplayServer) -> None:
    class OneShot(OpenAIEngine):
        reuse_connections = False

    replay.set(CHAT, GOOD)
    replay.drop_reused = True
    engine = OneShot(settings(replay.url + "/v1", max_attempts=1), version_label="x")
    results = _chats(engine, 3)
    assert [(r.ok, r.attempt) for r in results] == [(True, 1)] * 3
    assert (replay.dropped, engine.stale_resends, replay.count(CHAT)) == ([], 0, 3)
