"""aiohttp plumbing shared by every engine: the session, and raw errors mapped to errors.py.

aiohttp rather than httpx, measured with ``bench/bench_client_overhead.py`` (simulator in its
own process, TTFT 100 ms, 100 tok/s, 200 tokens; error = client chunk arrival minus the server's
true send time, 2-core machine): at 64 concurrent streams aiohttp's p99 error was 0.6 ms (TTFT)
and 1.1 ms (ITL) with 1.3 s client CPU, httpx.AsyncClient's 4.2 ms and 12.2 ms with 3.5 s CPU.
"""

from __future__ import annotations

import asyncio
import bisect
import errno
import functools
import re
import time
import types
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.streams import StreamReader

from touchstone_ray.engines._eager_send import EagerBodyRequest
from touchstone_ray.engines._tools import tools_refusal
from touchstone_ray.errors import (
    EngineConnectError,
    EngineContextError,
    EngineError,
    EngineHTTPError,
    EngineModelLoading,
    EngineRefused,
    EngineTimeout,
    EngineToolsRefused,
    StreamProtocolError,
    one_line,
)

ERROR_BODY_BYTES = 4096
"""How much of an error response's body is read to classify it and quote it."""

_LOADING_RE = re.compile(r"\bload", re.IGNORECASE)
_CONTEXT_RE = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|exceeds? the (available )?context",
    re.IGNORECASE,
)
"""A context-length error (never "context canceled" / "context deadline exceeded", which Go
servers such as Ollama send for transient failures)."""


def new_session(
    connect_timeout_s: float, headers: dict[str, str], *, reuse_connections: bool = True
) -> aiohttp.ClientSession:
    """One pooled client session per engine. The pool has no connection limit: flow control
    is the driver's per-endpoint semaphore (SPEC §8), and a pool limit would be a hidden queue
    inside the measured TTFT. Total time is bounded by the caller's ``asyncio.timeout``.
    ``reuse_connections=False`` opens a new connection per request (``force_close``)."""
    connector = StampingConnector(limit=0, ttl_dns_cache=300, force_close=not reuse_connections)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        headers=headers,
        auto_decompress=False,
        trace_configs=[_sent_trace()],
        request_class=EagerBodyRequest,
    )


class SentAt:
    """Filled by the session's trace hooks for one request: ``t`` is ``perf_counter()`` when
    the request body was handed to the socket (SPEC §9: the clock starts when the HTTP request
    is sent, so building the request and taking a pooled connection are not part of TTFT);
    ``t_headers`` when aiohttp serialised the headers (it buffers them and writes them together
    with the body; :class:`~touchstone_ray.engines._eager_send.EagerBodyRequest` makes that
    write happen in the same loop turn); ``reused`` says whether the request went out on a
    pooled keep-alive connection."""

    def __init__(self) -> None:
        self.t: float | None = None
        self.t_headers: float | None = None
        self.reused = False


def _sent_trace() -> aiohttp.TraceConfig:
    async def on_headers_sent(
        session: aiohttp.ClientSession,
        ctx: types.SimpleNamespace,
        params: aiohttp.TraceRequestHeadersSentParams,
    ) -> None:
        holder = ctx.trace_request_ctx
        if isinstance(holder, SentAt):
            holder.t_headers = time.perf_counter()

    async def on_chunk_sent(
        session: aiohttp.ClientSession,
        ctx: types.SimpleNamespace,
        params: aiohttp.TraceRequestChunkSentParams,
    ) -> None:
        # aiohttp awaits this hook right before the body chunk (with the buffered headers)
        # goes to the transport; the last chunk's time is when the request was sent
        holder = ctx.trace_request_ctx
        if isinstance(holder, SentAt):
            holder.t = time.perf_counter()

    async def on_reuse(
        session: aiohttp.ClientSession,
        ctx: types.SimpleNamespace,
        params: aiohttp.TraceConnectionReuseconnParams,
    ) -> None:
        holder = ctx.trace_request_ctx
        if isinstance(holder, SentAt):
            holder.reused = True

    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(on_headers_sent)
    trace.on_request_chunk_sent.append(on_chunk_sent)
    trace.on_connection_reuseconn.append(on_reuse)
    return trace


class ReadStamps:
    """The arrival times of one response body's bytes, one entry per socket read.

    ``ends[i]`` is the body byte count (``StreamReader.total_bytes``) after read ``i`` and
    ``times[i]`` the ``perf_counter()`` taken as soon as that read returned, before aiohttp
    parsed it. :meth:`split` maps a chunk the reader handed out back to those reads.
    """

    __slots__ = ("ends", "payload", "times")

    def __init__(self, payload: StreamReader) -> None:
        self.payload = payload
        self.ends: list[int] = []
        self.times: list[float] = []

    def split(self, start: int, chunk: bytes, fallback: float) -> list[tuple[float, bytes]]:
        """``chunk`` (body bytes ``start`` .. ``start + len(chunk)``) as ``[(t, piece)]``, one
        piece per socket read it came from, in order; bytes no read accounts for get
        ``fallback``. One read (the usual case, when the loop keeps up) gives the chunk
        itself, not a copy."""
        end = start + len(chunk)
        ends = self.ends
        lo = bisect.bisect_right(ends, start)  # first read that ends after ``start``
        if lo < len(ends) and ends[lo] >= end:
            return [(self.times[lo], chunk)]
        pieces: list[tuple[float, bytes]] = []
        pos = start
        for i in range(lo, len(ends)):
            if pos >= end:
                break
            stop = min(ends[i], end)
            pieces.append((self.times[i], chunk[pos - start : stop - start]))
            pos = stop
        if pos < end:
            pieces.append((fallback, chunk[pos - start :]))
        return pieces


class StampingHandler(ResponseHandler):
    """aiohttp's connection protocol, timing every socket read of a response body.

    asyncio calls :meth:`data_received` as soon as a read on the socket returns; the reader's
    waiter (``readany``) wakes one loop turn or more later, and on a busy loop several reads
    merge into one chunk. The per-read times kept in :attr:`stamps` are the bytes' arrival,
    independent of when the stream loop gets to them.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.stamps: ReadStamps | None = None
        """The current response body's read times (``None`` before the first body)."""

    def data_received(self, data: bytes) -> None:
        """Stamp the read, then let aiohttp parse it."""
        t = time.perf_counter()
        super().data_received(data)
        payload = self._payload
        if payload is None:
            return
        stamps = self.stamps
        if stamps is None or stamps.payload is not payload:
            stamps = self.stamps = ReadStamps(payload)
        total = payload.total_bytes
        if total and (not stamps.ends or stamps.ends[-1] != total):
            stamps.ends.append(total)
            stamps.times.append(t)


class StampingConnector(aiohttp.TCPConnector):
    """A TCP connector whose connections use :class:`StampingHandler`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # aiohttp builds each connection's protocol with this factory (TCPConnector._factory)
        self._factory = functools.partial(StampingHandler, loop=self._loop)  # type: ignore[assignment]


def read_stamps(resp: aiohttp.ClientResponse) -> ReadStamps | None:
    """The per-read arrival times of ``resp``'s body, or ``None`` when its connection does not
    keep them (call while the body is still being read: aiohttp releases the connection at the
    end)."""
    conn = resp.connection
    proto = conn.protocol if conn is not None else None
    if isinstance(proto, StampingHandler):
        stamps = proto.stamps
        if stamps is None or stamps.payload is not resp.content:
            stamps = proto.stamps = ReadStamps(resp.content)
        return stamps
    return None


def stale_connection(exc: BaseException, sent: SentAt, got_response: bool) -> bool:
    """Whether ``exc`` is a request that died on a reused keep-alive connection the server had
    already closed, before any byte of a response: the write failed ("Can not write request
    body") or the peer closed ("Server disconnected"). Such a request never reached the model;
    it is sent again at once on a fresh connection and is not a failed attempt (RFC 9112
    §9.3.1 "Retrying Requests"; urllib3 and requests do the same). Never a connect error or a
    timeout, which are real failures."""
    if got_response or not sent.reused:
        return False
    if isinstance(exc, aiohttp.ClientConnectorError | TimeoutError):
        return False
    return isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError)


async def http_error(resp: aiohttp.ClientResponse) -> EngineHTTPError:
    """The error for a non-2xx response: :class:`EngineToolsRefused` (``error_kind``
    ``"config"``, never retried) when the body says the server was not started to take tools
    (:func:`~touchstone_ray.engines._tools.tools_refusal`); :class:`EngineModelLoading` for
    503 with "load" in the body; :class:`EngineContextError` (``error_kind`` ``"context"``,
    never retried) for any status whose body says the context length was exceeded
    (:data:`_CONTEXT_RE`); else :class:`EngineHTTPError` (4xx never retried)."""
    try:
        raw = await resp.content.read(ERROR_BODY_BYTES)
        body = raw.decode("utf-8", "replace")
    except (aiohttp.ClientError, TimeoutError):
        body = ""
    message = one_line(f"HTTP {resp.status} {resp.reason or ''}: {body}".strip())
    refusal = tools_refusal(body)
    if refusal is not None:
        return EngineToolsRefused(resp.status, one_line(f"{refusal} ({message})"))
    if resp.status == 503 and _LOADING_RE.search(body):
        return EngineModelLoading(message)
    if _CONTEXT_RE.search(body):
        return EngineContextError(resp.status, message)
    return EngineHTTPError(resp.status, message)


def map_client_error(exc: BaseException, url: str, got_response: bool) -> EngineError:
    """Map an aiohttp/asyncio error raised while talking to ``url`` to errors.py.

    Before a response: a refused connection (``ECONNREFUSED``) -> :class:`EngineRefused`;
    other connect errors and connect timeouts -> :class:`EngineConnectError`.
    After the response began: a cut body (incomplete chunked payload, reset, disconnect) ->
    retryable :class:`StreamProtocolError`. Any other timeout -> :class:`EngineTimeout`.
    """
    if isinstance(exc, EngineError):
        return exc
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return EngineConnectError(one_line(f"connect timeout to {url}: {exc}"))
    if isinstance(exc, TimeoutError):
        return EngineTimeout(one_line(f"timed out: {url}"))
    if got_response:
        error: EngineError = StreamProtocolError(
            one_line(f"stream cut mid-way ({type(exc).__name__}: {exc})")
        )
        error.retryable = True
        return error
    text = one_line(f"cannot reach {url} ({type(exc).__name__}: {exc})")
    return EngineRefused(text) if _refused(exc) else EngineConnectError(text)


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` is a refused TCP connect (aiohttp wraps the ``OSError``)."""
    cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    return isinstance(cause, ConnectionRefusedError) or (
        isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
    )
