"""The request body goes to the socket in the loop turn of ``session.post``, not one later."""

from __future__ import annotations

import asyncio

import pytest
from engine_helpers import ReplayServer, Reply, delta, sse

from touchstone_ray.engines._eager_send import started
from touchstone_ray.engines._http import SentAt, new_session

CHAT = "/v1/chat/completions"


def test_body_is_written_before_callbacks_queued_ahead_of_the_write(
    replay: ReplayServer,
) -> None:
    """On a pooled connection, a second request's body is on the socket (its send clock,
    :class:`SentAt`, set) when a callback queued in the same turn as the request's first step
    runs; aiohttp's own write task on Python 3.11 would run after that callback."""
    replay.set(CHAT, Reply(chunks=sse(delta("a"), "[DONE]")))
    sent_when_next_turn_ran: list[bool] = []

    async def run() -> None:
        session = new_session(5.0, {})
        try:
            async with session.post(replay.url + CHAT, data=b"{}") as resp:  # pools a connection
                await resp.read()
            sent = SentAt()

            async def post() -> None:
                async with session.post(replay.url + CHAT, data=b"{}", trace_request_ctx=sent) as r:
                    await r.read()

            task = asyncio.ensure_future(post())
            asyncio.get_running_loop().call_soon(
                lambda: sent_when_next_turn_ran.append(sent.t is not None)
            )
            await task
            assert sent.reused
        finally:
            await session.close()

    asyncio.run(run())
    assert sent_when_next_turn_ran == [True]


def test_started_runs_a_coroutine_to_its_end_at_once() -> None:
    done: list[str] = []

    async def body() -> None:
        done.append("ran")

    rest = started(body())
    assert done == ["ran"]
    asyncio.run(rest)
    assert done == ["ran"]


def test_started_resumes_a_coroutine_that_suspended() -> None:
    steps: list[str] = []

    async def body() -> None:
        steps.append("before")
        await asyncio.sleep(0)
        steps.append("after")

    async def run() -> None:
        rest = started(body())
        assert steps == ["before"]
        await rest

    asyncio.run(run())
    assert steps == ["before", "after"]


def test_started_passes_a_cancellation_into_the_coroutine() -> None:
    seen: list[str] = []

    async def body() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def run() -> None:
        task = asyncio.ensure_future(started(body()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert seen == ["cancelled"]


def test_started_raises_what_the_coroutine_raised_before_suspending() -> None:
    async def body() -> None:
        raise ValueError("broken body")

    with pytest.raises(ValueError, match="broken body"):
        started(body())
