"""OpenAI-compatible protocol handlers (vLLM, LM Studio, llama.cpp server, …).

``POST /v1/chat/completions`` with ``stream: true`` answers Server-Sent Events as in
https://platform.openai.com/docs/api-reference/chat-streaming: each event is
``data: {chat.completion.chunk}\\n\\n``; the first chunk carries only
``delta: {"role": "assistant"}``; tokens come in ``delta.content`` or, for reasoning, in
``delta.reasoning_content`` / ``delta.reasoning`` / ``<think>…</think>`` inside
``delta.content`` (the ``reasoning_channel`` knob); then a chunk with an empty delta and
``finish_reason`` (``stop`` | ``length``); with ``stream_options.include_usage`` one more chunk
with ``"choices": []`` and ``usage {prompt_tokens, completion_tokens, total_tokens}`` (all
earlier chunks carry ``"usage": null``); finally ``data: [DONE]``. SSE comment lines
(``: keep-alive``) may appear between events. ``stream: false`` returns one
``chat.completion`` object. Honoured: ``max_completion_tokens`` / ``max_tokens`` (→
``length``), ``temperature``, ``seed``, ``response_format`` (judge mode), and thinking switched
off by ``chat_template_kwargs.enable_thinking: false``, ``reasoning_effort: "none"`` or
``think: false``, and ``tools``: a calling turn streams each call as OpenAI does, a first
fragment ``delta.tool_calls: [{"index", "id", "type": "function", "function": {"name",
"arguments": ""}}]`` then ``{"index", "function": {"arguments": <piece>}}`` fragments, and
ends ``finish_reason: "tool_calls"`` (``length`` when cut; :mod:`._tools`). Errors are
``{"error": {"message", "type", "param", "code"}}``; a mid-stream error is such an object in a
``data:`` event, followed by ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from aiohttp import web

from touchstone_ray.sim._config import ReasoningChannel
from touchstone_ray.sim._engine import run_chat
from touchstone_ray.sim._judge import judge_schema
from touchstone_ray.sim._text import rng_for, sampling_key
from touchstone_ray.sim._tools import ToolPiece
from touchstone_ray.sim._wire import STATE_KEY, ChatRequest, Result, dumps, messages_of, read_body

_ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error", 503: "service_unavailable"}
_DONE = b"data: [DONE]\n\n"


def error_response(status: int, message: str) -> web.Response:
    """An OpenAI-shaped error body."""
    kind = _ERROR_TYPES.get(status, "server_error")
    error = {"message": message, "type": kind, "param": None, "code": status}
    return web.json_response({"error": error}, status=status)


def _positive_int(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else None


class OpenAIEncoder:
    """SSE events of ``/v1/chat/completions``."""

    content_type = "text/event-stream"

    def __init__(self, model: str, channel: ReasoningChannel, include_usage: bool) -> None:
        self.model = model
        self.channel = channel
        self.include_usage = include_usage
        self.id = "chatcmpl-" + secrets.token_hex(12)
        self.created = int(time.time())

    def _event(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_sim",
            "choices": choices,
        }
        if self.include_usage:
            chunk["usage"] = None
        chunk.update(extra)
        return b"data: " + dumps(chunk) + b"\n\n"

    def _delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._event([choice])

    def head(self) -> list[tuple[bytes, str]]:
        return [(self._delta({"role": "assistant"}), "role")]

    def token(self, text: str, reasoning: bool, first: bool, last: bool) -> bytes:
        if not reasoning:
            return self._delta({"content": text})
        if self.channel == "think_tag":
            text = ("<think>" if first else "") + text + ("</think>\n\n" if last else "")
            return self._delta({"content": text})
        field = "reasoning" if self.channel == "reasoning" else "reasoning_content"
        return self._delta({field: text})

    def tool_piece(self, piece: ToolPiece) -> bytes:
        if piece.head:  # the call's first fragment: id, type and name, empty arguments
            function = {"name": piece.call.name, "arguments": ""}
            fragment = {"index": piece.index, "id": piece.call.id, "type": "function"}
            fragment["function"] = function
        else:
            fragment = {"index": piece.index, "function": {"arguments": piece.text}}
        return self._delta({"tool_calls": [fragment]})

    def comment(self) -> bytes | None:
        return b": keep-alive\n\n"

    def error_event(self) -> bytes:
        error = {"message": "simulated error during generation", "type": "server_error"}
        return b"data: " + dumps({"error": {**error, "param": None, "code": 500}}) + b"\n\n" + _DONE

    def garbage(self) -> bytes:
        return b'data: {"id": "chatcmpl-sim", "choices": [<<sim garbage>>\n\n'

    def _usage(self, result: Result) -> dict[str, Any]:
        return {
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": result.reasoning_tokens},
        }

    def tail(self, result: Result) -> list[tuple[bytes, str]]:
        out = [(self._delta({}, result.finish_reason), "final")]
        if self.include_usage:
            out.append((self._event([], usage=self._usage(result)), "usage"))
        out.append((_DONE, "done"))
        return out

    def whole(self, result: Result) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": result.answer}
        if result.tool_calls:
            message["content"] = result.answer or None
            message["tool_calls"] = [
                {
                    "id": sent.call.id,
                    "type": "function",
                    "function": {"name": sent.call.name, "arguments": sent.text},
                }
                for sent in result.tool_calls
            ]
        if result.reasoning:
            if self.channel == "think_tag":
                closed = result.finish_reason == "stop" or result.answer_tokens > 0
                close = "</think>\n\n" if closed else ""
                message["content"] = f"<think>{result.reasoning}{close}{result.answer}"
            else:
                field = "reasoning" if self.channel == "reasoning" else "reasoning_content"
                message[field] = result.reasoning
        choice = {"index": 0, "message": message, "logprobs": None}
        return dumps(
            {
                "id": self.id,
                "object": "chat.completion",
                "created": self.created,
                "model": self.model,
                "system_fingerprint": "fp_sim",
                "choices": [{**choice, "finish_reason": result.finish_reason}],
                "usage": self._usage(result),
            }
        )

    def error(self, status: int, message: str) -> web.Response:
        return error_response(status, message)


def _thinking_on(body: dict[str, Any]) -> bool:
    kwargs = body.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False:
        return False
    return body.get("think") is not False and body.get("reasoning_effort") != "none"


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/chat/completions``."""
    body = await read_body(request)
    if body is None:
        return error_response(400, "invalid JSON body")
    model = body.get("model")
    messages = messages_of(body)
    if not isinstance(model, str) or not model or not messages:
        return error_response(400, "model and a non-empty messages list are required")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    limit = _positive_int(body.get("max_completion_tokens")) or _positive_int(
        body.get("max_tokens")
    )
    req = ChatRequest(
        protocol="openai",
        model=model,
        messages=messages,
        stream=body.get("stream") is True,
        limit=limit,
        think=_thinking_on(body),
        schema=judge_schema(body, "openai"),
        sampling=sampling_key(body.get("temperature"), body.get("seed")),
        keep_alive_s=None,
        tools=body.get("tools"),
    )
    knobs = request.app[STATE_KEY].config.for_model(model)
    return await run_chat(
        request, req, OpenAIEncoder(model, knobs.reasoning_channel, include_usage)
    )


async def models(request: web.Request) -> web.Response:
    """``GET /v1/models`` (``max_model_len`` where the ``context_length`` knob is set)."""
    state = request.app[STATE_KEY]
    names = state.config.listed_models(list(state.seen))
    data = []
    for name in names:
        entry: dict[str, Any] = {"id": name, "object": "model", "created": 0, "owned_by": "sim"}
        length = state.config.for_model(name).context_length
        if length is not None:
            entry["max_model_len"] = length  # as vLLM lists it
        data.append(entry)
    return web.json_response({"object": "list", "data": data})


EMBED_DIM = 8
"""Length of a simulated embedding vector."""


async def embeddings(request: web.Request) -> web.Response:
    """``POST /v1/embeddings`` ``{model, input: str | [str]}``: one deterministic vector per
    input after ``ttft_ms`` + words / ``embed_tps`` (s); ``usage.prompt_tokens`` = words."""
    state = request.app[STATE_KEY]
    try:
        body = await request.json()
    except ValueError:
        return error_response(400, "request body is not JSON")
    model = body.get("model") if isinstance(body, dict) else None
    inputs = body.get("input") if isinstance(body, dict) else None
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(model, str) or not isinstance(inputs, list):
        return error_response(400, "model (string) and input (string or list) are required")
    if not state.config.serves(model):
        return error_response(404, f'model "{model}" not found')
    knobs = state.config.for_model(model)
    tokens = sum(len(str(text).split()) for text in inputs)
    await asyncio.sleep(knobs.ttft_ms / 1000 + tokens / knobs.embed_tps)
    data = []
    for i, text in enumerate(inputs):
        rng = rng_for("embed", state.config.seed, model, str(text))
        data.append(
            {
                "object": "embedding",
                "index": i,
                "embedding": [rng.uniform(-1, 1) for _ in range(EMBED_DIM)],
            }
        )
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return web.json_response({"object": "list", "data": data, "model": model, "usage": usage})


async def version(request: web.Request) -> web.Response:
    """``GET /version`` (vLLM's version endpoint)."""
    return web.json_response({"version": "sim"})


def add_routes(app: web.Application) -> None:
    """Register the OpenAI routes."""
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_get("/version", version)
