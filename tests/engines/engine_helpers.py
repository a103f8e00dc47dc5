"""A replay server for engine tests: real HTTP on loopback serving recorded byte streams on a
fixed schedule, on its own thread and event loop (so the client's loop is never the server's).

A route answers with a :class:`Reply` (or a list consumed in order, the last one repeating, or
a function ``(n, elapsed_s) -> Reply`` of the request ordinal and seconds since the route's
first request). ``Reply.chunks`` is ``[(delay_s, bytes)]``: each piece is written ``delay_s``
after the previous one (scheduled against absolute loop time, so no drift); ``end`` says how
the body ends: ``eof`` (complete), ``cut`` (connection aborted, chunked body incomplete) or
``hang`` (nothing more until the client gives up).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from aiohttp import web
from loopback_app import LoopbackApp

from touchstone_ray.engines import ChatRequest, ChatResult, Engine, EngineSettings
from touchstone_ray.engines.ollama import OllamaEngine
from touchstone_ray.engines.openai import OpenAIEngine


@dataclass
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    end: Literal["eof", "cut", "hang"] = "eof"
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)


Script = Reply | list[Reply] | Callable[[int, float], Reply]


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]
    t_arrival: float
    """perf_counter on arrival."""
    send_times: list[float] = field(default_factory=list)
    """perf_counter after each chunk was written."""
    send_epochs: list[float] = field(default_factory=list)
    """time.time() after each chunk was written (compare with ``t_start + ttft_s``)."""


class ReplayServer(LoopbackApp):
    """Serves scripted replies; ``url`` is ``http://127.0.0.1:PORT``."""

    thread_name = "replay-server"

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, Script] = {}
        self.seen: list[Seen] = []
        self._first: dict[str, float] = {}
        self.drop_reused = False
        """Like llama.cpp's server: every response announces keep-alive, but a request that
        arrives on a connection which already carried one is dropped unanswered (the
        connection is closed before any response byte)."""
        self.dropped: list[str] = []
        """Paths of the requests dropped that way, in order."""
        self._per_connection: dict[object, int] = {}

    def set(self, path: str, script: Script) -> None:
        """Answer requests to ``path`` with ``script``."""
        self.routes[path] = script

    def count(self, path: str) -> int:
        """Requests received for ``path``."""
        return sum(1 for s in self.seen if s.path == path)

    def requests(self, path: str) -> list[Seen]:
        """The requests received for ``path``, in order."""
        return [s for s in self.seen if s.path == path]

    def _reply(self, path: str, n: int, now: float) -> Reply:
        script = self.routes.get(path)
        if script is None:
            return Reply(404, [(0, b'{"error": "not found"}')], content_type="application/json")
        if isinstance(script, Reply):
            return script
        if isinstance(script, list):
            return script[min(n, len(script) - 1)]
        first = self._first.setdefault(path, now)
        return script(n, now - first)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        t_arrival = time.perf_counter()
        raw = await request.read()
        if self.drop_reused:
            assert request.transport is not None
            peer = request.transport.get_extra_info("peername")
            self._per_connection[peer] = self._per_connection.get(peer, 0) + 1
            if self._per_connection[peer] > 1:
                self.dropped.append(request.path)
                request.transport.abort()
                return web.Response()

        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        seen = Seen(request.method, request.path, body, dict(request.headers), t_arrival)
        reply = self._reply(request.path, self.count(request.path), t_arrival)
        self.seen.append(seen)
        resp = web.StreamResponse(status=reply.status, headers=reply.headers)
        resp.content_type = reply.content_type
        await resp.prepare(request)
        loop = asyncio.get_running_loop()
        due = loop.time()
        for delay, data in reply.chunks:
            due += delay
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            await resp.write(data)
            seen.send_times.append(time.perf_counter())
            seen.send_epochs.append(time.time())
        if reply.end == "cut":
            assert request.transport is not None
            request.transport.abort()
            return resp
        if reply.end == "hang":
            assert self._stopping is not None
            while not self._stopping.is_set():
                if request.transport is None or request.transport.is_closing():
                    return resp
                await asyncio.sleep(0.02)
            return resp
        await resp.write_eof()
        return resp

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._handle)


def sse(*events: dict[str, Any] | str, delay_s: float = 0.0) -> list[tuple[float, bytes]]:
    """SSE chunks ``data: <json>\\n\\n`` (a str is sent as the raw data value, e.g.
    ``"[DONE]"``), each ``delay_s`` after the previous one."""
    out = []
    for ev in events:
        data = ev if isinstance(ev, str) else json.dumps(ev)
        out.append((delay_s, f"data: {data}\n\n".encode()))
    return out


def ndjson(*lines: dict[str, Any], delay_s: float = 0.0) -> list[tuple[float, bytes]]:
    """NDJSON chunks, one object per line, each ``delay_s`` after the previous one."""
    return [(delay_s, json.dumps(line).encode() + b"\n") for line in lines]


def delta(content: str | None = None, finish: str | None = None, **fields: Any) -> dict[str, Any]:
    """An OpenAI chat.completion.chunk with one choice; extra ``fields`` go in ``delta``."""
    d: dict[str, Any] = dict(fields)
    if content is not None:
        d["content"] = content
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
    }


def usage(prompt: int, completion: int, reasoning: int | None = None) -> dict[str, Any]:
    """The trailing usage chunk with ``choices: []``."""
    u: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if reasoning is not None:
        u["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return {"object": "chat.completion.chunk", "choices": [], "usage": u}


def omsg(content: str = "", thinking: str | None = None) -> dict[str, Any]:
    """An Ollama stream line that is not the last."""
    m: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        m["thinking"] = thinking
    return {"model": "m", "message": m, "done": False}


def odone(
    reason: str | None,
    prompt: int | None = 7,
    completion: int | None = 3,
    load_ns: int | None = 1_500_000_000,
) -> dict[str, Any]:
    """Ollama's final line (``done: true``)."""
    line: dict[str, Any] = {
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": True,
    }
    if reason is not None:
        line["done_reason"] = reason
    for key, value in (
        ("prompt_eval_count", prompt),
        ("eval_count", completion),
        ("load_duration", load_ns),
    ):
        if value is not None:
            line[key] = value
    return line


REQ = ChatRequest(
    model="m",
    messages=[{"role": "user", "content": "Hallo Welt, wie geht es?"}],
    temperature=0.0,
    seed=42,
    max_tokens=64,
)
"""A default request (prompt 24 chars -> 6 estimated tokens)."""


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine on a fresh event loop."""
    return asyncio.run(coro)


def settings(base_url: str, **kw: Any) -> EngineSettings:
    """Test settings: short timeouts and near-zero backoff unless overridden."""
    values: dict[str, Any] = {
        "timeout_s": 5.0,
        "connect_timeout_s": 2.0,
        "load_timeout_s": 10.0,
        "max_attempts": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    values.update(kw)
    return EngineSettings(base_url=base_url, **values)


def chat_once(kind: str, base_url: str, req: ChatRequest = REQ, **kw: Any) -> ChatResult:
    """One chat call with a fresh engine of ``kind`` (``openai``: base_url + /v1)."""
    engine: Engine
    if kind == "openai":
        engine = OpenAIEngine(settings(base_url + "/v1", **kw))
    else:
        engine = OllamaEngine(settings(base_url, **kw))

    async def go() -> ChatResult:
        try:
            return await engine.chat(req)
        finally:
            await engine.aclose()

    result: ChatResult = run(go())
    return result


def assert_sent_at(
    seen: Seen, result: ChatResult, name: str, chunk: int, nominal_s: float, tol_s: float = 0.020
) -> None:
    """Timing field ``name`` of ``result`` is when reply chunk ``chunk`` was really written
    (epoch, within ``tol_s``), and never earlier than its nominal schedule ``nominal_s``.

    Comparing with the real send time, not the schedule, keeps the check exact on a busy
    machine, where the server's own sleeps can overshoot by far more than the tolerance.
    """
    value = getattr(result, name)
    assert value is not None and result.t_start is not None, name
    assert result.t_start + value == pytest.approx(seen.send_epochs[chunk], abs=tol_s), name
    assert value >= nominal_s - 0.002, (name, value, nominal_s)
