"""A canned judge for the runner tests: real HTTP on loopback (aiohttp, its own thread and
event loop), an OpenAI-compatible ``POST /v1/chat/completions`` that always streams SSE
(engines always stream) the reply a test function picks for each request body.

Every other path answers 404 quickly (the engines' server probe). Imported by the tests as
``judge_server`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web
from loopback_app import LoopbackApp

from touchstone_ray.sim import fenced_answer

Reply = str | tuple[int, str]
"""Reply text to stream, or ``(HTTP status, error message)``."""

CASE_RE = re.compile(r"CASE=([a-z0-9_]+)")


def first_user_text(body: dict[str, Any]) -> str:
    """The judge prompt's user turn (retries append an assistant turn and a reminder)."""
    return next(str(m["content"]) for m in body["messages"] if m["role"] == "user")


def is_retry(body: dict[str, Any]) -> bool:
    """A format-reminder retry: the conversation continues after the judge's own reply."""
    return any(m["role"] == "assistant" for m in body["messages"])


def is_holistic(body: dict[str, Any]) -> bool:
    """A holistic request (the evidence is fenced as ``<<<EVIDENCE-…>>>``)."""
    return "<<<EVIDENCE-" in first_user_text(body)


def answer_block(body: dict[str, Any]) -> str | None:
    """The answer under test inside the request's real delimiters."""
    return fenced_answer(first_user_text(body))


def case_of(body: dict[str, Any]) -> str | None:
    """The ``CASE=<name>`` tag of the answer under test (inside the real delimiters)."""
    block = answer_block(body)
    match = CASE_RE.search(block or "")
    return match.group(1) if match else None


class JudgeServer(LoopbackApp):
    """Serves ``reply(body)`` for every chat request; records the request bodies."""

    thread_name = "judge-server"

    def __init__(self, reply: Callable[[dict[str, Any]], Reply], delay_s: float = 0.0) -> None:
        super().__init__()
        self.reply = reply
        self.delay_s = delay_s
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``…/v1``)."""
        return self.url + "/v1"

    def answer_bodies(self) -> list[dict[str, Any]]:
        """Per-answer requests received so far (retries included)."""
        with self._lock:
            return [b for b in self.bodies if not is_holistic(b)]

    def holistic_bodies(self) -> list[dict[str, Any]]:
        """Holistic requests received so far."""
        with self._lock:
            return [b for b in self.bodies if is_holistic(b)]

    def reset(self) -> None:
        """Forget the requests received."""
        with self._lock:
            self.bodies.clear()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.bodies.append(body)
        reply = self.reply(body)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if isinstance(reply, tuple):
            status, message = reply
            error = {"message": message, "type": "invalid_request_error", "code": status}
            return web.json_response({"error": error}, status=status)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            event = {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(event)}\n\n".encode()

        await resp.write(chunk({"role": "assistant"}))
        step = max(1, len(reply) // 3)
        for i in range(0, len(reply), step):
            await resp.write(chunk({"content": reply[i : i + step]}))
        await resp.write(chunk({}, "stop"))
        usage = {"prompt_tokens": 100, "completion_tokens": max(1, len(reply) // 4)}
        await resp.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _other(self, request: web.Request) -> web.Response:
        return web.json_response({"error": "not found"}, status=404)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_route("*", "/{tail:.*}", self._other)
