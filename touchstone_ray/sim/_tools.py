"""Tool calls of the simulated model: which calls a turn makes, and the pieces they stream in.

A request that offers ``tools`` (OpenAI's shape ``[{"type": "function", "function": {"name",
"parameters"}}]``, which Ollama takes too) gets calls while fewer than ``tool_turns`` assistant
turns with ``tool_calls`` follow the last user message; then a text answer, so a tool loop ends.
The calls are ``tool_calls`` (scripted) or one call of the first offered tool with arguments
built from its schema, then bent by ``tool_call_shape`` (the knobs' docstrings say how).

Tokens, as the pacing counts them: a call is one head token (its id and name) and one token per
:data:`PIECE_CHARS` characters of its arguments' JSON text, so ``completion_tokens`` /
``eval_count`` count exactly what was sent and ``max_tokens`` cuts a call mid-arguments like a
real server (``finish_reason: length``). Everything is a pure function of (seed, model,
messages, knobs): ids are digests, not random.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from touchstone_ray.sim._config import SimModelKnobs, SimToolCall
from touchstone_ray.sim._text import digest

PIECE_CHARS = 8
"""Characters of arguments text per streamed piece (one token each)."""

_EXAMPLE: dict[str, Any] = {
    "string": "wert",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


@dataclass(frozen=True)
class PlannedCall:
    """One call of a simulated turn, in both wire forms."""

    id: str
    """``call_`` and 16 hex digits of a digest of the request and the call's position."""
    name: str
    arguments: Any
    """The arguments as an Ollama server sends them (an object)."""
    text: str
    """The arguments' JSON text as an OpenAI-compatible server streams it."""

    def pieces(self) -> list[str]:
        """:attr:`text` in :data:`PIECE_CHARS`-character pieces (one token each)."""
        return [self.text[i : i + PIECE_CHARS] for i in range(0, len(self.text), PIECE_CHARS)]


@dataclass(frozen=True)
class ToolPiece:
    """One streamed token of a call: its head (``head``: id and name, no arguments text) or a
    piece of its arguments text; ``last`` marks the call's final token when the call is
    complete (never for a cut call)."""

    index: int
    call: PlannedCall
    text: str
    head: bool
    last: bool


def offered_tools(tools: Any) -> list[dict[str, Any]]:
    """The ``{"name", "parameters"}`` of each offered tool (OpenAI's ``{"function": {…}}``
    entries, or bare ``{"name", …}``); entries without a name are skipped."""
    out: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        function: dict[str, Any] = inner if isinstance(inner, dict) else tool
        name = function.get("name")
        if isinstance(name, str) and name:
            params = function.get("parameters")
            out.append({"name": name, "parameters": params if isinstance(params, dict) else {}})
    return out


def tool_rounds(messages: list[Any]) -> int:
    """Assistant messages with ``tool_calls`` after the last user message."""
    rounds = 0
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant" and message.get("tool_calls"):
            rounds += 1
    return rounds


def example_arguments(parameters: dict[str, Any]) -> dict[str, Any]:
    """One value per property of a JSON Schema object (see ``SimToolCall.arguments``)."""
    properties = parameters.get("properties")
    out: dict[str, Any] = {}
    for key, schema in (properties if isinstance(properties, dict) else {}).items():
        schema = schema if isinstance(schema, dict) else {}
        enum = schema.get("enum")
        kind = schema.get("type")
        if isinstance(enum, list) and enum:
            out[key] = enum[0]
        elif isinstance(kind, str) and kind in _EXAMPLE:
            out[key] = _EXAMPLE[kind]
        else:
            out[key] = _EXAMPLE["string"]
    return out


def _wrong_type(value: Any) -> Any:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def plan_tool_calls(
    knobs: SimModelKnobs, tools: Any, *, seed: int, model: str, messages: list[Any]
) -> list[PlannedCall] | None:
    """The calls this turn makes, or ``None`` for a text answer (no tools offered,
    ``tool_turns`` reached, or ``no_call``)."""
    offered = offered_tools(tools)
    if not offered or tool_rounds(messages) >= knobs.tool_turns:
        return None
    shape = knobs.tool_call_shape
    if shape == "no_call":
        return None
    script = knobs.tool_calls if knobs.tool_calls is not None else [SimToolCall()]
    if not script:
        return None
    schemas = {tool["name"]: tool["parameters"] for tool in offered}
    calls: list[tuple[str, dict[str, Any]]] = []
    for entry in script:
        name = entry.name or offered[0]["name"]
        arguments = entry.arguments
        if arguments is None:
            arguments = example_arguments(schemas.get(name, {}))
        calls.append((name, dict(arguments)))
    if shape == "extra_call":
        calls.append(calls[-1])
    planned = []
    for i, (name, arguments) in enumerate(calls):
        obj: Any = arguments
        text = _dumps(arguments)
        if shape == "wrong_types":
            obj = {k: _wrong_type(v) for k, v in arguments.items()}
            text = _dumps(obj)
        elif shape == "empty_args":
            obj, text = {}, "{}"
        elif shape == "json_in_json":
            obj = {k: _dumps(v) for k, v in arguments.items()}
            text = _dumps(_dumps(arguments))
        call_id = "call_" + digest("tool", seed, model, messages, i)[:16]
        planned.append(PlannedCall(call_id, name, obj, text))
    return planned


def tool_pieces(calls: list[PlannedCall], *, cut: bool) -> list[ToolPiece]:
    """Every token of ``calls`` in order; with ``cut`` the last call stops after half of its
    arguments pieces (at least none, at most all but one)."""
    out: list[ToolPiece] = []
    for i, call in enumerate(calls):
        pieces = call.pieces()
        final = i == len(calls) - 1
        if cut and final:
            pieces = pieces[: max(0, min(len(pieces) // 2, len(pieces) - 1))]
        complete = not (cut and final)
        out.append(ToolPiece(i, call, "", head=True, last=complete and not pieces))
        for j, text in enumerate(pieces):
            last = complete and j == len(pieces) - 1
            out.append(ToolPiece(i, call, text, head=False, last=last))
    return out


def head_text(call: PlannedCall) -> str:
    """The text a cut call's head stands for where a server shows a cut call as content
    (Ollama): the start of the call as the model wrote it."""
    return '{"name": ' + _dumps(call.name) + ', "arguments": '
