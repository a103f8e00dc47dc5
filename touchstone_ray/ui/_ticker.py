"""A background step the UI repeats while it serves (the queue's tick, the chained judge):
an aiohttp ``cleanup_ctx`` that runs a blocking ``step`` in a thread every ``every_s`` s and
cancels it when the app stops."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable

from aiohttp import web


async def _repeat(what: str, step: Callable[[], object], every_s: float) -> None:
    said: str | None = None
    while True:
        try:
            await asyncio.to_thread(step)
            said = None
        except Exception as exc:  # the ticker must go on; a failure is said once, not per tick
            if str(exc) != said:
                said = str(exc)
                print(f"warning: {what}: {exc}", file=sys.stderr, flush=True)
        await asyncio.sleep(every_s)


def ticker(
    what: str, step: Callable[[web.Application], Callable[[], object]], every_s: float
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A ``cleanup_ctx`` entry that calls ``step(app)()`` every ``every_s`` s (in a thread: it
    may block) from the app's start to its stop; an exception is printed once to stderr as
    ``warning: <what>: <line>`` (until a step succeeds again) and the ticking goes on."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(_repeat(what, step(app), every_s))
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return ctx
