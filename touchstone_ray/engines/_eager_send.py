"""A request body handed to the socket in the same event-loop turn as its headers.

aiohttp (3.14) buffers a request's headers and writes them together with the body from a
separate task. On Python 3.12+ it starts that task eagerly (``eager_start=True``), so the
request is on the wire before ``session.post`` first yields. On Python 3.11 the task only runs
once the loop has worked through every callback queued before it: with 64 streams on one loop
that put the send 1.1–2.5 ms (p50) and 7–17 ms (p99) behind the headers
(``bench/bench_client_clock.py --levels 64``, ``clock_gap_ms``; 0.02–0.03 / 0.08–0.14 ms with
this class), time in which the server had not seen the request at all.
:class:`EagerBodyRequest` runs the body write's first step at once on 3.11, which for a body
below aiohttp's 64 KiB drain limit is the whole write, as 3.12+ does.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine, Generator
from typing import Any

import aiohttp
from aiohttp.abc import AbstractStreamWriter
from aiohttp.connector import Connection


class _Resumed:
    """Awaiting this continues ``coro`` from the point where it first suspended, on
    ``yielded``: the ``yield from`` protocol (PEP 380), values and thrown exceptions (a
    cancellation) passed through to ``coro``."""

    def __init__(self, coro: Coroutine[Any, Any, None], yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, None]:
        coro, yielded = self._coro, self._yielded
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # thrown in by the task (a cancellation): passed on
                try:
                    yielded = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration:
                    return


async def _finished() -> None:
    return None


async def _resume(resumed: _Resumed) -> None:
    await resumed


def started(coro: Coroutine[Any, Any, None]) -> Coroutine[Any, Any, None]:
    """Run ``coro`` up to its first suspension now; returns a coroutine that finishes it
    (one that returns at once when ``coro`` already ran to its end). Exceptions raised before
    the first suspension propagate to the caller."""
    try:
        yielded = coro.send(None)
    except StopIteration:
        return _finished()
    return _resume(_Resumed(coro, yielded))


class EagerBodyRequest(aiohttp.ClientRequest):
    """``aiohttp.ClientRequest`` whose body write starts in ``send`` itself on Python 3.11
    (the session's ``request_class``); unchanged on 3.12+, where aiohttp starts it eagerly."""

    def write_bytes(
        self,
        writer: AbstractStreamWriter,
        conn: Connection,
        content_length: int | None = None,
    ) -> Coroutine[Any, Any, None]:
        coro = super().write_bytes(writer, conn, content_length)
        if sys.version_info >= (3, 12):
            return coro
        return started(coro)
