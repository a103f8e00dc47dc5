"""The clock starts when the request headers are written (SPEC §9), via the session's trace."""

from __future__ import annotations

import asyncio
import time

from engine_helpers import ReplayServer, Reply, chat_once, delta, sse

from touchstone_ray.engines._http import SentAt, new_session

CHAT = "/v1/chat/completions"


def test_trace_hook_stamps_the_send(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(chunks=sse(delta("a"), "[DONE]")))

    async def post() -> tuple[float, SentAt, float]:
        session = new_session(5.0, {})
        sent = SentAt()
        before = time.perf_counter()
        try:
            async with session.post(replay.url + CHAT, data=b"{}", trace_request_ctx=sent) as r:
                await r.read()
                got = time.perf_counter()
        finally:
            await session.close()
        return before, sent, got

    before, sent, got = asyncio.run(post())
    assert sent.t is not None and before < sent.t < got


def test_t_start_is_the_send_time(replay: ReplayServer) -> None:
    replay.set(CHAT, Reply(chunks=sse(delta("a"), delta(finish="stop"), "[DONE]")))
    before = time.time()
    result = chat_once("openai", replay.url)
    assert result.ok and result.t_start is not None and result.t_end is not None
    assert before <= result.t_start <= result.t_end
