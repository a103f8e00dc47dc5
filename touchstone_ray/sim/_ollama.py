"""Ollama protocol handlers (https://github.com/ollama/ollama/blob/main/docs/api.md).

``POST /api/chat`` streams NDJSON: one JSON object per line, ``{"model", "created_at",
"message": {"role": "assistant", "content": …, "thinking": …}, "done": false}``, then a final
line with ``done: true``, ``done_reason`` (``stop`` | ``length``) and the durations in
nanoseconds (``total_duration``, ``load_duration``, ``prompt_eval_duration``,
``eval_duration``) with the token counts ``prompt_eval_count`` / ``eval_count`` (``eval_count``
= tokens sent on both channels). ``stream: false`` gives one object with the whole message.
Honoured: ``options.temperature``, ``options.seed``, ``options.num_predict`` (→ ``length``),
``options.num_ctx`` (a longer prompt is cut to it, ``prompt_eval_count`` shows it),
``think`` (false → no ``thinking``), ``keep_alive`` (0 → unloaded after the request),
``format`` (judge mode), ``tools`` (a calling turn sends each call whole, when its last token
is due, as ``message.tool_calls: [{"function": {"name", "arguments": {…}}}]`` without an id,
and ends ``done_reason: "stop"``; a call cut before it completes comes back as content text,
:mod:`._tools`). Empty ``messages`` is a load request (``done_reason: load``), or with
``keep_alive: 0`` an unload request (``done_reason: unload``).
``POST /api/show`` gives a ChatML ``template`` (:data:`SHOW_TEMPLATE`), ``capabilities``
(``completion``, ``tools``) and ``model_info`` (the model's context length, where known).
Errors are ``{"error": "…"}``; a mid-stream error is such a line inside the 200 stream.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from touchstone_ray.sim._engine import run_chat
from touchstone_ray.sim._judge import judge_schema
from touchstone_ray.sim._text import sampling_key
from touchstone_ray.sim._tools import ToolPiece, head_text
from touchstone_ray.sim._wire import STATE_KEY, ChatRequest, Result, dumps, messages_of, read_body

DEFAULT_KEEP_ALIVE_S = 300.0
"""Ollama's default keep_alive (5 minutes), seconds."""

_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_keep_alive(value: Any) -> float | None:
    """Ollama ``keep_alive`` in seconds: a number of seconds or a Go duration (``"5m"``,
    ``"1h30m"``, ``"0"``); negative means forever (None); missing or unreadable → 5 minutes."""
    if value is None or isinstance(value, bool):
        return DEFAULT_KEEP_ALIVE_S
    seconds: float | None = None
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        sign = -1.0 if text.startswith("-") else 1.0
        text = text.lstrip("+-")
        try:
            seconds = sign * float(text)
        except ValueError:
            parts = _DURATION_RE.findall(text)
            if parts and "".join(n + u for n, u in parts) == text:
                seconds = sign * sum(float(n) * _UNIT_S[u] for n, u in parts)
    if seconds is None:
        return DEFAULT_KEEP_ALIVE_S
    return None if seconds < 0 else seconds


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


class OllamaEncoder:
    """NDJSON lines of ``/api/chat``."""

    content_type = "application/x-ndjson"

    def __init__(self, model: str) -> None:
        self.model = model
        self._partial: list[str] = []
        """The text of a call begun but not complete yet."""

    def _line(self, obj: dict[str, Any]) -> bytes:
        return dumps({"model": self.model, "created_at": _now(), **obj}) + b"\n"

    def head(self) -> list[tuple[bytes, str]]:
        return []

    def token(self, text: str, reasoning: bool, first: bool, last: bool) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": "" if reasoning else text}
        if reasoning:
            message["thinking"] = text
        return self._line({"message": message, "done": False})

    def tool_piece(self, piece: ToolPiece) -> bytes:
        self._partial.append(head_text(piece.call) if piece.head else piece.text)
        if not piece.last:
            return b""
        self._partial = []
        call = {"function": {"name": piece.call.name, "arguments": piece.call.arguments}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return self._line({"message": message, "done": False})

    def comment(self) -> bytes | None:
        return None

    def error_event(self) -> bytes:
        return dumps({"error": "simulated error during generation"}) + b"\n"

    def garbage(self) -> bytes:
        return b'<<sim garbage>> {"message": {"content": \n'

    def _final(self, result: Result, message: dict[str, Any]) -> dict[str, Any]:
        reason = "stop" if result.finish_reason == "tool_calls" else result.finish_reason
        return {
            "message": message,
            "done_reason": reason,
            "done": True,
            "total_duration": _ns(result.total_s + result.load_s),
            "load_duration": _ns(result.load_s),
            "prompt_eval_count": result.prompt_tokens,
            "prompt_eval_duration": _ns(result.ttft_s),
            "eval_count": result.completion_tokens,
            "eval_duration": _ns(result.eval_s),
        }

    def tail(self, result: Result) -> list[tuple[bytes, str]]:
        out = []
        if self._partial:  # a call that never completed: Ollama hands its text back as content
            message = {"role": "assistant", "content": "".join(self._partial)}
            out.append((self._line({"message": message, "done": False}), "content"))
            self._partial = []
        final = self._final(result, {"role": "assistant", "content": ""})
        return [*out, (self._line(final), "final")]

    def whole(self, result: Result) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": result.answer}
        if result.reasoning:
            message["thinking"] = result.reasoning
        complete = [sent.call for sent in result.tool_calls if sent.complete]
        partial = [sent for sent in result.tool_calls if not sent.complete]
        if complete:
            message["tool_calls"] = [
                {"function": {"name": call.name, "arguments": call.arguments}} for call in complete
            ]
        if partial:
            message["content"] += "".join(head_text(p.call) + p.text for p in partial)
        return self._line(self._final(result, message))

    def error(self, status: int, message: str) -> web.Response:
        return web.json_response({"error": message}, status=status)


async def chat(request: web.Request) -> web.StreamResponse:
    """``POST /api/chat``."""
    body = await read_body(request)
    if body is None:
        return web.json_response({"error": "invalid JSON body"}, status=400)
    model = body.get("model")
    messages = messages_of(body) if "messages" in body else []
    if not isinstance(model, str) or not model or messages is None:
        return web.json_response({"error": "model and messages are required"}, status=400)
    keep_alive_s = parse_keep_alive(body.get("keep_alive"))
    if not messages:
        return await _control(request, model, keep_alive_s)
    raw_options = body.get("options")
    options: dict[str, Any] = raw_options if isinstance(raw_options, dict) else {}
    num_predict = options.get("num_predict")
    limit = num_predict if isinstance(num_predict, int) and num_predict > 0 else None
    num_ctx = options.get("num_ctx")
    req = ChatRequest(
        protocol="ollama",
        model=model,
        messages=messages,
        stream=body.get("stream", True) is not False,
        limit=limit,
        think=body.get("think") is not False,
        schema=judge_schema(body, "ollama"),
        sampling=sampling_key(options.get("temperature"), options.get("seed")),
        keep_alive_s=keep_alive_s,
        num_ctx=num_ctx if isinstance(num_ctx, int) and num_ctx > 0 else None,
        tools=body.get("tools"),
    )
    return await run_chat(request, req, OllamaEncoder(model))


async def _control(request: web.Request, model: str, keep_alive_s: float | None) -> web.Response:
    """Empty ``messages``: load the model (wait for it), or unload it with ``keep_alive: 0``."""
    state = request.app[STATE_KEY]
    state.begin(model, "", control=True)
    try:
        if not state.config.serves(model):
            return web.json_response({"error": f'model "{model}" not found'}, status=404)
        if keep_alive_s == 0:
            state.unload(model)
            reason = "unload"
        else:
            remaining = state.load_remaining_s(model, state.config.for_model(model))
            await asyncio.sleep(remaining)
            state.touch(model, keep_alive_s, set_expiry=True)
            reason = "load"
        message = {"role": "assistant", "content": ""}
        body = {"model": model, "created_at": _now(), "message": message}
        return web.json_response({**body, "done_reason": reason, "done": True})
    finally:
        state.end(model)


def _details() -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": "sim",
        "families": ["sim"],
        "parameter_size": "8B",
        "quantization_level": "Q4_K_M",
    }


def _entry(name: str) -> dict[str, Any]:
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
    size = 1_000_000_000 + int(digest[:8], 16) % 8_000_000_000
    return {"name": name, "model": name, "size": size, "digest": digest, "details": _details()}


async def tags(request: web.Request) -> web.Response:
    """``GET /api/tags``: the served models (any model asked for so far when unrestricted)."""
    state = request.app[STATE_KEY]
    names = state.config.listed_models(list(state.seen))
    models = [{**_entry(n), "modified_at": "2025-01-01T00:00:00Z"} for n in names]
    return web.json_response({"models": models})


async def ps(request: web.Request) -> web.Response:
    """``GET /api/ps``: the loaded models with ``expires_at`` (far future when kept forever)."""
    models = []
    for name, expires in request.app[STATE_KEY].loaded():
        when = (
            "2318-01-01T00:00:00Z"
            if expires is None
            else (datetime.fromtimestamp(expires, UTC).isoformat().replace("+00:00", "Z"))
        )
        entry = _entry(name)
        models.append({**entry, "expires_at": when, "size_vram": entry["size"]})
    return web.json_response({"models": models})


SHOW_TEMPLATE = (
    "{{- if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}"
    "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
    "<|im_start|>assistant\n"
)
"""The chat template ``/api/show`` reports for every model: ChatML as a Go template (the form
of Ollama's Qwen models)."""


async def show(request: web.Request) -> web.Response:
    """``POST /api/show {"model"}``: the model's ``template`` (:data:`SHOW_TEMPLATE`),
    ``details``, ``capabilities`` and ``model_info`` with ``general.architecture`` ``sim`` and,
    where the ``context_length`` knob is set, ``sim.context_length``; 404 for a model not
    served."""
    body = await read_body(request)
    model = body.get("model") or body.get("name") if isinstance(body, dict) else None
    state = request.app[STATE_KEY]
    if not isinstance(model, str) or not state.config.serves(model):
        return web.json_response({"error": f'model "{model}" not found'}, status=404)
    info: dict[str, Any] = {"general.architecture": "sim"}
    length = state.config.for_model(model).context_length
    if length is not None:
        info["sim.context_length"] = length
    return web.json_response(
        {
            "template": SHOW_TEMPLATE,
            "details": _details(),
            "capabilities": ["completion", "tools"],
            "model_info": info,
        }
    )


async def version(request: web.Request) -> web.Response:
    """``GET /api/version``."""
    return web.json_response({"version": "0.0.0-sim"})


def add_routes(app: web.Application) -> None:
    """Register the Ollama routes."""
    app.router.add_post("/api/chat", chat)
    app.router.add_get("/api/tags", tags)
    app.router.add_get("/api/ps", ps)
    app.router.add_get("/api/version", version)
    app.router.add_post("/api/show", show)
