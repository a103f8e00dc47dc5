"""Shared wire-level types of the simulator: the neutral chat request, what was sent, the
per-protocol :class:`Encoder` interface, app keys and small JSON helpers."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from aiohttp import web

from touchstone_ray.sim._state import SimState
from touchstone_ray.sim._tools import PlannedCall, ToolPiece

STATE_KEY = web.AppKey("sim_state", SimState)
STOPPING_KEY = web.AppKey("sim_stopping", asyncio.Event)


@dataclass(frozen=True)
class ChatRequest:
    """A chat request in protocol-neutral form."""

    protocol: Literal["ollama", "openai"]
    model: str
    messages: list[Any]
    stream: bool
    limit: int | None
    """Most completion tokens (``max_tokens``/``num_predict``), None = no limit."""
    think: bool
    """False suppresses the reasoning channel."""
    schema: dict[str, Any] | None
    """Judge mode: the JSON schema the reply must follow."""
    sampling: Any
    """What temperature/seed add to the answer seed (see ``_text.sampling_key``)."""
    keep_alive_s: float | None = None
    """Ollama keep_alive in seconds (None = forever); only Ollama requests set an expiry."""
    num_ctx: int | None = None
    """Ollama ``options.num_ctx`` (tokens); None = not sent (``default_num_ctx`` applies)."""
    tools: Any = None
    """The request's ``tools`` as sent (None = none offered)."""


@dataclass(frozen=True)
class SentCall:
    """A tool call as far as it was sent: the arguments text sent, and whether it was
    complete (a call cut by the token limit or the ``cut`` shape is not)."""

    call: PlannedCall
    text: str
    complete: bool


@dataclass
class Result:
    """What was actually sent, for the final chunk and the usage numbers."""

    model: str
    reasoning: str
    answer: str
    reasoning_tokens: int
    answer_tokens: int
    prompt_tokens: int
    finish_reason: str
    ttft_s: float
    """Planned time to first token, seconds."""
    eval_s: float
    """Planned decode time of the sent tokens, seconds."""
    total_s: float
    """Measured time from arrival to the end, seconds."""
    load_s: float
    """Load time reported on the first request after a load, else 0, seconds."""
    tool_calls: list[SentCall] = field(default_factory=list)
    """The tool calls sent, in order (their tokens count in ``answer_tokens``)."""

    @property
    def completion_tokens(self) -> int:
        """Tokens sent on both channels."""
        return self.reasoning_tokens + self.answer_tokens


class Encoder(Protocol):
    """The wire format of one protocol (bytes only; the pipeline decides when)."""

    content_type: str

    def head(self) -> list[tuple[bytes, str]]:
        """Chunks written right after the headers, with their trace channel."""

    def token(self, text: str, reasoning: bool, first: bool, last: bool) -> bytes:
        """One token; ``first``/``last`` say whether it opens/closes the reasoning part."""

    def tool_piece(self, piece: ToolPiece) -> bytes:
        """One token of a tool call (``b""`` when the protocol sends it later, whole)."""

    def comment(self) -> bytes | None:
        """A comment line (SSE), or None when the protocol has none."""

    def error_event(self) -> bytes:
        """An error object inside a 200 stream."""

    def garbage(self) -> bytes:
        """A line that is not JSON."""

    def tail(self, result: Result) -> list[tuple[bytes, str]]:
        """Closing chunks (final, usage, terminator), with their trace channel."""

    def whole(self, result: Result) -> bytes:
        """The single JSON body of a non-streaming reply."""

    def error(self, status: int, message: str) -> web.Response:
        """An error reply in the protocol's shape."""


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON, as Ollama and vLLM write it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def read_body(request: web.Request) -> dict[str, Any] | None:
    """The request's JSON object body, or None when it is not a JSON object."""
    try:
        body = await request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def messages_of(body: dict[str, Any]) -> list[Any] | None:
    """``body["messages"]`` when it is a list (possibly empty), else None."""
    messages = body.get("messages")
    return messages if isinstance(messages, list) else None
