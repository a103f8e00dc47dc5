"""aiohttp plumbing shared by every engine: the session, and raw errors mapped to errors.py.

aiohttp rather than httpx, measured with ``bench/bench_client_overhead.py`` (simulator in its
own process, TTFT 100 ms, 100 tok/s, 200 tokens; error = client chunk arrival minus the server's
true send time, 2-core machine): at 64 concurrent streams aiohttp's p99 error was 0.6 ms (TTFT)
and 1.1 ms (ITL) with 1.3 s client CPU, httpx.AsyncClient's 4.2 ms and 12.2 ms with 3.5 s CPU.
"""

from __future__ import annotations

import re
import time
import types

import aiohttp

from touchstone_ray.errors import (
    EngineConnectError,
    EngineContextError,
    EngineError,
    EngineHTTPError,
    EngineModelLoading,
    EngineTimeout,
    StreamProtocolError,
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


def one_line(text: str, limit: int = 300) -> str:
    """``text`` with all whitespace runs folded to one space, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def new_session(
    connect_timeout_s: float, headers: dict[str, str], *, reuse_connections: bool = True
) -> aiohttp.ClientSession:
    """One pooled client session per engine. The pool has no connection limit: flow control
    is the driver's per-endpoint semaphore (SPEC §8), and a pool limit would be a hidden queue
    inside the measured TTFT. Total time is bounded by the caller's ``asyncio.timeout``.
    ``reuse_connections=False`` opens a new connection per request (``force_close``)."""
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, force_close=not reuse_connections)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        headers=headers,
        auto_decompress=False,
        trace_configs=[_sent_trace()],
    )


class SentAt:
    """Filled by the session's trace hooks for one request: ``t`` is ``perf_counter()`` when
    the request headers were written to the socket (SPEC §9: the clock starts when the HTTP
    request is sent, so building the request and taking a pooled connection are not part of
    TTFT); ``reused`` says whether the request went out on a pooled keep-alive connection."""

    def __init__(self) -> None:
        self.t: float | None = None
        self.reused = False


def _sent_trace() -> aiohttp.TraceConfig:
    async def on_headers_sent(
        session: aiohttp.ClientSession,
        ctx: types.SimpleNamespace,
        params: aiohttp.TraceRequestHeadersSentParams,
    ) -> None:
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
    trace.on_connection_reuseconn.append(on_reuse)
    return trace


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
    """The error for a non-2xx response: :class:`EngineModelLoading` for 503 with "load" in
    the body; :class:`EngineContextError` (``error_kind`` ``"context"``, never retried) for
    any status whose body says the context length was exceeded (:data:`_CONTEXT_RE`); else
    :class:`EngineHTTPError` (4xx never retried)."""
    try:
        raw = await resp.content.read(ERROR_BODY_BYTES)
        body = raw.decode("utf-8", "replace")
    except (aiohttp.ClientError, TimeoutError):
        body = ""
    message = one_line(f"HTTP {resp.status} {resp.reason or ''}: {body}".strip())
    if resp.status == 503 and _LOADING_RE.search(body):
        return EngineModelLoading(message)
    if _CONTEXT_RE.search(body):
        return EngineContextError(resp.status, message)
    return EngineHTTPError(resp.status, message)


def map_client_error(exc: BaseException, url: str, got_response: bool) -> EngineError:
    """Map an aiohttp/asyncio error raised while talking to ``url`` to errors.py.

    Before a response: connect errors and connect timeouts -> :class:`EngineConnectError`.
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
    return EngineConnectError(one_line(f"cannot reach {url} ({type(exc).__name__}: {exc})"))
