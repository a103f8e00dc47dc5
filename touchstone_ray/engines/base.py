"""The engine interface: one streaming chat call, timed exactly, that never raises for a
failed request (a failed cell is a :class:`ChatResult` with ``ok=False``; style example 6).

Protocols differ only in request building and chunk parsing (:meth:`Engine.build_body`,
:attr:`Engine.parser_cls`) and in their metadata endpoints; the HTTP session, deadline,
retries, error mapping and timing live here. Retry policy is the overridable hook
:meth:`Engine.retry_policy` (style example 1).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import aiohttp

from touchstone_ray.engines._http import (
    SentAt,
    http_error,
    map_client_error,
    new_session,
    read_stamps,
    stale_connection,
)
from touchstone_ray.engines._outage import EndpointOutage
from touchstone_ray.engines._retry import RetryPolicy
from touchstone_ray.engines._stream import StreamParser
from touchstone_ray.engines._tools import prompt_chars
from touchstone_ray.engines._types import ChatRequest, ChatResult, EngineSettings
from touchstone_ray.engines.normalize import StreamNormalizer
from touchstone_ray.errors import (
    EngineConnectError,
    EngineError,
    EngineHTTPError,
    EngineRefused,
    EngineTimeout,
    ErrorKind,
    one_line,
)

__all__ = ["ChatRequest", "ChatResult", "Engine", "EngineSettings"]

STALE_RESENDS = 8
"""How often one attempt is sent again after dying on a stale pooled connection before that
failure counts (a pool holds at most ``concurrency`` idle connections to an endpoint)."""


class _StaleConnection(Exception):
    """A request died on a reused connection the server had closed (internal signal)."""


class _Attempt:
    """Epoch bounds of the latest attempt of one call (for failed results)."""

    def __init__(self) -> None:
        self.t_start: float | None = None
        self.t_end: float | None = None


class Engine(ABC):
    """A chat engine speaking one protocol to one endpoint (one pooled aiohttp session).

    Subclasses set :attr:`name`, :attr:`parser_cls`, :attr:`chat_path` and implement
    :meth:`build_body` and the metadata calls. ``version_label`` fixes ``engine_version``
    (skipping the server probe); ``on_close`` runs in :meth:`aclose` (sync or async).
    """

    name: ClassVar[str]
    parser_cls: ClassVar[type[StreamParser]]
    chat_path: ClassVar[str]
    reuse_connections: ClassVar[bool] = True
    """Keep connections in a pool between requests (``False``: a new one per request)."""
    needs_unload: ClassVar[bool] = False
    """The server loads models on demand and keeps them loaded (``keep_alive``): the eval
    unloads a model (:meth:`unload`) after its cells, before the host's next model."""
    embed_path: ClassVar[str] = "/embeddings"
    """Where the server takes an embeddings batch, after :attr:`base_url` (OpenAI's
    ``/v1/embeddings`` with ``{"model", "input": [texts]}``)."""
    checks_server_ttft: ClassVar[bool] = False
    """The server reports its own TTFT (:meth:`server_metrics`): the eval snapshots it before
    and after a model's cells and stores the server's mean beside ours."""
    sends_context: ClassVar[bool] = False
    """The protocol gives the context per request (Ollama ``options.num_ctx``,
    :attr:`ChatRequest.context_tokens`): a request without one gets the server's default, which
    may silently cut a long prompt, so the eval always sends one
    (:mod:`touchstone_ray.eval.context`)."""

    @classmethod
    def without_thinking(cls, extra_body: dict[str, Any]) -> None:
        """Ask the server in ``extra_body`` (changed in place) not to reason before answering;
        a value already there wins. Default: OpenAI-compatible chat templates
        (``chat_template_kwargs: {enable_thinking: false}``, Qwen3's switch)."""
        kwargs = extra_body.setdefault("chat_template_kwargs", {})
        if isinstance(kwargs, dict):
            kwargs.setdefault("enable_thinking", False)

    def __init__(
        self,
        settings: EngineSettings,
        *,
        version_label: str | None = None,
        on_close: Callable[[], Awaitable[None] | None] | None = None,
    ) -> None:
        self.settings = settings
        self.base_url = settings.base_url.rstrip("/")
        self._version_label = version_label
        self._on_close = on_close
        self._session: aiohttp.ClientSession | None = None
        self._version: str | None = version_label
        self._version_known = version_label is not None
        self._version_lock = asyncio.Lock()
        self.stale_resends = 0
        """Requests sent again after a stale pooled connection (not attempts), so far."""
        self.outage = EndpointOutage()
        """Since when the endpoint has refused connections, shared by this engine's calls."""

    # --- protocol hooks -------------------------------------------------------------------
    @abstractmethod
    def build_body(self, req: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(body, sent)``: the JSON request body, and the sampling params it carries (for
        :attr:`ChatResult.request`)."""

    async def server_info(self) -> tuple[str, str | None]:
        """``(engine name, version or None)`` as the server reports it (``(version_label,
        None)`` when the engine was given a fixed label, e.g. ``("sim", None)``).

        Raises :class:`EngineError` when the server cannot be reached."""
        if self._version_label is not None:
            return self._version_label, None
        return await self.probe_server()

    @abstractmethod
    async def probe_server(self) -> tuple[str, str | None]:
        """Ask the server who it is: ``(engine name, version or None)``. Raises EngineError."""

    @abstractmethod
    async def list_models(self) -> list[str]:
        """Model names the server serves. Raises :class:`EngineError`."""

    async def loaded_models(self) -> list[str]:
        """Models loaded right now (default: :meth:`list_models`). Raises EngineError."""
        return await self.list_models()

    async def unload(self, model: str) -> None:
        """Unload ``model`` from memory (default: nothing to do). Raises EngineError."""
        return None

    async def server_facts(self, model: str) -> dict[str, Any]:
        """What the server says about itself and ``model`` for ``bundle.json`` (small, JSON;
        default ``{}``). Raises :class:`EngineError` when unreachable."""
        return {}

    async def context_limit(self, model: str) -> int | None:
        """The most tokens (prompt + completion) one request to ``model`` may use on this
        server, as the server reports it; ``None`` when it does not say (default)."""
        return None

    async def model_context_length(self, model: str) -> int | None:
        """The context ``model`` was trained for (tokens), as the server reports it, where the
        server takes the context per request (:attr:`sends_context`); ``None`` (default) when
        it does not say."""
        return None

    async def count_prompt_tokens(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> int | None:
        """Prompt tokens of ``messages`` (and the ``tools`` offered, which the chat template
        renders into the prompt) after the chat template, by the server's own tokenizer;
        ``None`` when the server has no tokenizer endpoint (default)."""
        return None

    async def chat_template(self, model: str) -> dict[str, Any] | None:
        """The chat template the server applies to ``model``'s messages, as the server sends
        it: ``{"source": <endpoint>, "template": <text>, "caps": <the server's capability
        flags or None>}``; ``None`` (default) when the server does not show it. Raises
        :class:`EngineError` when unreachable."""
        return None

    async def token_counts(self, texts: list[str]) -> list[int] | None:
        """Tokens of each of ``texts`` by the served model's tokenizer, with control text read
        as the model's special tokens where it has them (no BOS added), so a chat-template
        marker the model knows counts 1; ``None`` (default) when the server has no tokenizer
        endpoint. Raises :class:`EngineError` when unreachable."""
        return None

    async def tool_support(self, model: str) -> str | None:
        """Whether this server can serve ``model`` requests with tools, asked before a tools
        run: ``None`` when it can or does not say (default), else one line saying why not and
        how to start the server so it can. A server that does not say before may still refuse
        the first request with tools; that error is the same kind of line
        (:class:`~touchstone_ray.errors.EngineToolsRefused`). Raises :class:`EngineError`
        when unreachable."""
        return None

    async def server_metrics(self, model: str) -> dict[str, Any] | None:
        """A small snapshot of the server's own request metrics (e.g. a TTFT histogram's
        ``count`` and ``sum_s``) to diff around a model's cells; ``None`` (default) when the
        server has none."""
        return None

    def retry_policy(self) -> RetryPolicy:
        """A fresh retry policy for one call; override to change backoff or give-up rules."""
        return RetryPolicy(self.settings, self.outage)

    def new_normalizer(self, t0: float, req: ChatRequest) -> StreamNormalizer:
        """The normalizer of one attempt sent at perf_counter ``t0`` (override to observe)."""
        return StreamNormalizer(t0, prompt_chars=prompt_chars(req.messages, req.tools))

    # --- the call ---------------------------------------------------------------------------
    async def chat(self, req: ChatRequest) -> ChatResult:
        """Stream one chat completion, with retries; never raises for request failures.

        Returns a :class:`ChatResult`: ``ok=True`` with answer and timing fields from the last
        (successful) attempt, or ``ok=False`` with a one-line ``error``, its ``error_kind``
        (timeout|http_4xx|http_5xx|connect|protocol) and the attempts used. Only
        cancellation propagates.
        """
        version = await self._engine_version()
        try:
            body, sent = self.build_body(req)
            payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            text = f"request cannot be built: {exc}"
            return self._failed("config", text, 1, {}, _Attempt(), version)
        span = _Attempt()
        attempt = 0
        policy = self.retry_policy()
        try:
            async for tried in policy.retrying():
                with tried:
                    attempt = tried.retry_state.attempt_number - policy.refusals
                    fields = await self._attempt(payload, req, span)
        except EngineError as exc:
            failed = self._failed(exc.error_kind, str(exc), attempt, sent, span, version)
            return self._waited(failed, policy, exc)
        except Exception as exc:  # a bug must not lose the cell: record it as data
            text = f"internal error {type(exc).__name__}: {exc}"
            return self._failed("protocol", text, attempt, sent, span, version)
        self.outage.reached()
        fields["engine_down_s"] = policy.down_waited_s()
        return ChatResult(ok=True, attempt=attempt, request=sent, engine_version=version, **fields)

    def _waited(self, failed: ChatResult, policy: RetryPolicy, exc: EngineError) -> ChatResult:
        """``failed`` with the time it waited for a refusing endpoint, and the reason it gave
        up when that wait ran out."""
        down_s = policy.down_waited_s()
        if down_s is None:
            return failed
        update: dict[str, Any] = {"engine_down_s": down_s}
        if isinstance(exc, EngineRefused):
            limit = self.settings.engine_down_timeout_s
            update["error"] = one_line(
                f"{self.base_url} still refused connections after engine_down_timeout_s "
                f"= {limit:g} s: {exc}"
            )
        return failed.model_copy(update=update)

    def _failed(
        self,
        kind: ErrorKind,
        text: str,
        attempt: int,
        sent: dict[str, Any],
        span: _Attempt,
        version: str | None,
    ) -> ChatResult:
        return ChatResult(
            ok=False,
            error=one_line(text) or kind,
            error_kind=kind,
            attempt=max(attempt, 1),
            request=sent,
            t_start=span.t_start,
            t_end=span.t_end,
            engine_version=version,
        )

    async def _attempt(self, payload: bytes, req: ChatRequest, span: _Attempt) -> dict[str, Any]:
        """One attempt: returns the result fields or raises a mapped EngineError.

        A send that died on a reused pooled connection before any response byte
        (:func:`~touchstone_ray.engines._http.stale_connection`) is sent again at once, up to
        :data:`STALE_RESENDS` times, and is not an attempt: each failure drops that dead
        connection from the pool, so the resend takes another pooled one or a fresh one.
        """
        for resend in range(STALE_RESENDS + 1):
            try:
                return await self._send(payload, req, span, last=resend == STALE_RESENDS)
            except _StaleConnection:
                self.stale_resends += 1
        raise AssertionError("unreachable: the last send raises its own error")

    async def _send(
        self, payload: bytes, req: ChatRequest, span: _Attempt, *, last: bool
    ) -> dict[str, Any]:
        """One HTTP request; raises :class:`_StaleConnection` (unless ``last``) or a mapped
        EngineError.

        Timing (SPEC §9): the clock starts when the body is handed to the socket
        (:class:`~touchstone_ray.engines._http.SentAt`), and every piece of the body is
        stamped with the time the socket read that brought it returned
        (:class:`~touchstone_ray.engines._http.StampingHandler`), not when this loop gets to
        it: on a busy loop several reads arrive in one ``readany`` and keep their own times."""
        session = self._get_session()
        url = self.base_url + self.chat_path
        got_response = False
        t_last = 0.0
        span.t_end = None
        span.t_start = time.time()
        t0 = time.perf_counter()
        norm = self.new_normalizer(t0, req)
        parser = self.parser_cls(norm)
        sent = SentAt()
        try:
            async with asyncio.timeout(self.settings.timeout_s) as deadline:
                async with session.post(url, data=payload, trace_request_ctx=sent) as resp:
                    got_response = True
                    if sent.t is not None and sent.t > t0:  # start the clock at the send
                        span.t_start += sent.t - t0
                        t0 = norm.t0 = sent.t
                    if resp.status >= 300:
                        raise await http_error(resp)
                    content = resp.content
                    stamps = read_stamps(resp)
                    consumed = 0
                    while True:
                        chunk = await content.readany()
                        t = time.perf_counter()
                        if not chunk:
                            parser.eof(t)
                            t_last = t
                            break
                        if stamps is None:
                            parser.feed(t, chunk)
                        else:  # each piece at the time its socket read returned
                            for t_read, piece in stamps.split(consumed, chunk, t):
                                parser.feed(t_read, piece)
                                if parser.done:
                                    break
                            consumed += len(chunk)
                        if parser.done:
                            t_last = parser.t_done or t
                            deadline.reschedule(None)  # the answer is complete
                            await _drain(content)
                            break
        except BaseException as exc:
            span.t_end = time.time()
            if isinstance(exc, Exception):
                if not last and stale_connection(exc, sent, got_response):
                    raise _StaleConnection from exc
                raise map_client_error(exc, url, got_response) from exc
            raise
        span.t_end = span.t_start + (t_last - t0)
        fields = norm.result(t_last)
        fields["t_start"] = span.t_start
        fields["t_end"] = span.t_end
        return fields

    # --- metadata helpers -------------------------------------------------------------------
    async def _engine_version(self) -> str | None:
        if self._version_known:
            return self._version
        async with self._version_lock:
            if not self._version_known:
                try:
                    name, version = await self.server_info()
                except (EngineConnectError, EngineTimeout):
                    return None  # unreachable now: the chat call will say why; probe again
                except Exception:  # reachable, but will not (or cannot) say: never probe again
                    name, version = "openai-compat", None
                self._version = _version_string(name, version)
                self._version_known = True
        return self._version

    async def request_json(
        self, method: str, url: str, body: dict[str, Any] | None = None
    ) -> tuple[int, Any]:
        """``(status, parsed JSON or None)`` of a small metadata request to ``url``, within
        ``timeout_s``. Raises :class:`EngineError` for connect errors and timeouts only."""
        session = self._get_session()
        try:
            async with (
                asyncio.timeout(self.settings.timeout_s),
                session.request(method, url, json=body) as resp,
            ):
                raw = await resp.read()
        except Exception as exc:
            raise map_client_error(exc, url, got_response=False) from exc
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, None

    async def _checked_json(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        status, data = await self.request_json(method, url, body)
        if status >= 300:
            raise EngineHTTPError(status, one_line(f"HTTP {status} from {url}: {data}"))
        return data

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # identity: a compressed stream would be buffered by the codec (skewing ITL), and
            # the session does not decompress
            headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
            if self.settings.api_key:
                headers["Authorization"] = f"Bearer {self.settings.api_key}"
            self._session = new_session(
                self.settings.connect_timeout_s, headers, reuse_connections=self.reuse_connections
            )
        return self._session

    async def aclose(self) -> None:
        """Close the HTTP session, then run ``on_close`` (e.g. stop a simulator)."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            if inspect.iscoroutinefunction(on_close):
                await on_close()
            else:  # a blocking stop (a simulator thread's join) must not stall the loop
                outcome = await asyncio.to_thread(on_close)
                if inspect.isawaitable(outcome):
                    await outcome


async def _drain(content: aiohttp.StreamReader) -> None:
    """Read what follows the end marker (the chunked terminator) so the connection returns to
    the pool; give up after 1 s (a server that keeps the stream open loses the connection)."""
    try:
        async with asyncio.timeout(1.0):
            while await content.readany():
                pass
    except (TimeoutError, aiohttp.ClientError):
        pass


def _version_string(name: str, version: str | None) -> str | None:
    """``"vllm 0.8.1"``; a bare name when the server said what it is but not its version;
    ``None`` when it said nothing (``openai-compat``)."""
    if version:
        return f"{name} {version}"
    return None if name == "openai-compat" else name
