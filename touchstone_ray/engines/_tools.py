"""Tool calls in the engines: streamed calls assembled, OpenAI-shaped history translated, and a
server's refusal to take tools turned into one line that says how to start it.

Streamed calls (:class:`ToolCallAssembler`), as the two protocols send them:

* OpenAI-compatible servers (OpenAI API reference, the chat completion *chunk* object,
  ``choices[].delta.tool_calls``) send each call in fragments ``{"index", "id"?, "type"?,
  "function": {"name"?, "arguments"?}}``: the first fragment of call ``index`` carries its
  ``id`` and ``function.name`` (and often ``"arguments": ""``), the following ones only
  ``function.arguments`` pieces, which are concatenated in arrival order. Several calls in one
  turn (parallel calls) have indices 0, 1, …, and their fragments may interleave. vLLM and
  llama.cpp follow this; a server that sends no ``id`` leaves ``ToolCall.id`` ``None``. A
  later fragment's ``name`` never replaces the first one (some servers repeat it in every
  fragment). A fragment without ``index`` continues the last call, unless it names a tool
  while the last call already has a name: then it starts a new call. ``function.arguments``
  sent as a JSON object instead of a string is taken as that object.
* Ollama (``docs/api.md``, "Chat request (with tools)") sends whole calls in
  ``message.tool_calls``: ``{"function": {"name", "arguments": {…}}}`` with the arguments
  already an object (``arguments_valid_json`` always true) and, in older versions, no ``id``.

:func:`tool_call` parses the concatenated arguments: valid JSON becomes its value (an object
for a well-formed call; a JSON *string* holding JSON, the "JSON in JSON" failure, stays that
string with ``arguments_valid_json`` true); text that is not JSON (a call cut by
``max_tokens``) is kept raw with ``arguments_valid_json`` false; no arguments text at all is
``None`` and false. Nothing here raises for what a model wrote.

A fragment counts as a token for TTFT (SPEC §9: first non-empty delta on any channel) when it
carries a non-empty ``id``, ``name`` or ``arguments`` piece: a chunk whose only delta is a tool
call is a token-carrying chunk.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from touchstone_ray.records import ToolCall


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def tool_call(
    call_id: str | None, name: str, arguments: str | None, obj: Any = None, has_obj: bool = False
) -> ToolCall:
    """The :class:`ToolCall` of an assembled call: ``obj`` when the server sent the arguments
    as JSON (``has_obj``), else ``arguments`` (the concatenated text) parsed as JSON, kept raw
    when it is not JSON, ``None`` when empty (see the module docstring)."""
    if has_obj:
        return ToolCall(id=call_id, name=name, arguments=obj, arguments_valid_json=True)
    if arguments is None or not arguments.strip():
        return ToolCall(id=call_id, name=name, arguments=None, arguments_valid_json=False)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return ToolCall(id=call_id, name=name, arguments=arguments, arguments_valid_json=False)
    return ToolCall(id=call_id, name=name, arguments=parsed, arguments_valid_json=True)


class _Partial:
    """One call being assembled from OpenAI fragments."""

    __slots__ = ("args", "call_id", "has_obj", "index", "kind", "name", "obj")

    def __init__(self, index: int | None) -> None:
        self.index = index
        self.call_id: str | None = None
        self.kind: str | None = None
        self.name = ""
        self.args: list[str] = []
        self.obj: Any = None
        self.has_obj = False


class ToolCallAssembler:
    """Collects one stream's tool calls, in the order their first fragment arrived."""

    def __init__(self) -> None:
        self._calls: list[_Partial] = []
        self._by_index: dict[int, _Partial] = {}
        self._whole: list[tuple[ToolCall, dict[str, Any]]] = []
        self.chars = 0
        """Characters of names and arguments received (for estimated token counts)."""

    def add_fragments(self, fragments: Any) -> bool:
        """Add one chunk's OpenAI ``delta.tool_calls`` list; returns whether any fragment
        carried a token. Malformed entries (not objects) are skipped."""
        if not isinstance(fragments, list):
            return False
        carried = False
        for frag in fragments:
            if isinstance(frag, dict):
                carried = self._fragment(frag) or carried
        return carried

    def _fragment(self, frag: dict[str, Any]) -> bool:
        function = frag.get("function")
        function = function if isinstance(function, dict) else {}
        name = _text(function.get("name"))
        index = frag.get("index")
        call = self._call_for(index if isinstance(index, int) else None, name)
        call_id = _text(frag.get("id"))
        if call_id and call.call_id is None:
            call.call_id = call_id
        kind = _text(frag.get("type"))
        if kind and call.kind is None:
            call.kind = kind
        if name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        piece = ""
        if isinstance(arguments, str):
            piece = arguments
            call.args.append(piece)
        elif isinstance(arguments, dict | list):
            call.obj, call.has_obj = arguments, True
            piece = json.dumps(arguments, ensure_ascii=False)
        self.chars += len(name) + len(piece)
        return bool(call_id or name or piece)

    def _call_for(self, index: int | None, name: str) -> _Partial:
        if index is not None:
            call = self._by_index.get(index)
            if call is None:
                call = self._by_index[index] = _Partial(index)
                self._calls.append(call)
            return call
        last = self._calls[-1] if self._calls else None
        if last is None or (name and last.name):
            last = _Partial(None)
            self._calls.append(last)
        return last

    def add_whole(self, calls: Any) -> bool:
        """Add Ollama ``message.tool_calls`` (whole calls, arguments as an object); returns
        whether any call was added. Entries without a ``function`` object are skipped."""
        if not isinstance(calls, list):
            return False
        added = False
        for raw in calls:
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict):
                continue
            name = _text(function.get("name"))
            arguments = function.get("arguments")
            call_id = _text(raw.get("id")) or None
            if isinstance(arguments, str):  # not Ollama's documented form: parse like OpenAI
                call = tool_call(call_id, name, arguments)
            else:
                has = arguments is not None
                call = tool_call(call_id, name, None, arguments, has_obj=has)
            self._whole.append((call, copy.deepcopy(raw)))
            self.chars += len(name) + len(json.dumps(arguments, ensure_ascii=False))
            added = True
        return added

    def calls(self) -> tuple[list[ToolCall], list[dict[str, Any]]]:
        """``(tool_calls, tool_calls_raw)``: the parsed calls, and each call as the server sent
        it, assembled (OpenAI: ``{"index", "id", "type", "function": {"name", "arguments":
        <the concatenated text>}}``; Ollama: the call object as received). A call whose fragments
        carried nothing (no id, name or arguments) is not one."""
        parsed: list[ToolCall] = []
        raw: list[dict[str, Any]] = []
        for call in self._calls:
            text = "".join(call.args)
            if not (call.call_id or call.name or text or call.has_obj):
                continue  # only empty fragments: no call was made
            parsed.append(tool_call(call.call_id, call.name, text, call.obj, call.has_obj))
            arguments: Any = call.obj if call.has_obj else text
            raw.append(
                {
                    "index": call.index,
                    "id": call.call_id,
                    "type": call.kind or "function",
                    "function": {"name": call.name, "arguments": arguments},
                }
            )
        for whole, sent in self._whole:
            parsed.append(whole)
            raw.append(sent)
        return parsed, raw


# --- history for Ollama ---------------------------------------------------------------------


def _arguments_object(value: Any) -> dict[str, Any]:
    """OpenAI ``function.arguments`` (a JSON string) as the object Ollama wants; ``{}`` when
    the text is not a JSON object (Ollama refuses anything else in history)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shaped chat history as Ollama's ``/api/chat`` takes it (a new list; ``messages``
    is not changed).

    * an assistant message's ``tool_calls`` become ``{"function": {"name", "arguments":
      <object>}}`` (the JSON string parsed; ``{}`` when it is not an object), ``content: null``
      becomes ``""``, and its reasoning (``reasoning_content`` or ``reasoning``) goes to
      Ollama's ``thinking`` unless that is set;
    * a ``tool`` message becomes ``{"role": "tool", "content", "tool_name"}``: the name is the
      message's own ``name``, else that of the call whose ``id`` is its ``tool_call_id``, else
      that of the call at the same position after the last assistant message (calls without
      ids); its ``tool_call_id`` is kept when it has one;
    * every other message is passed as given.
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    pending: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and ("tool_calls" in message or _reasoning_of(message)):
            out.append(_ollama_assistant(message, names, pending))
        elif role == "tool":
            out.append(_ollama_tool(message, names, pending))
        else:
            out.append(message)
    return out


_OPENAI_ONLY = frozenset({"tool_calls", "reasoning", "reasoning_content"})
"""Assistant-message keys that :func:`_ollama_assistant` rewrites."""


def _reasoning_of(message: dict[str, Any]) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _ollama_assistant(
    message: dict[str, Any], names: dict[str, str], pending: list[str]
) -> dict[str, Any]:
    converted = {k: v for k, v in message.items() if k not in _OPENAI_ONLY}
    if converted.get("content") is None:
        converted["content"] = ""
    reasoning = _reasoning_of(message)
    if reasoning is not None and "thinking" not in converted:
        converted["thinking"] = reasoning
    calls = message.get("tool_calls")
    pending.clear()
    if isinstance(calls, list):
        translated = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            name = _text(function.get("name"))
            arguments = _arguments_object(function.get("arguments"))
            entry: dict[str, Any] = {"function": {"name": name, "arguments": arguments}}
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id:
                names[call_id] = name
            pending.append(name)
            translated.append(entry)
        converted["tool_calls"] = translated
    return converted


def _ollama_tool(
    message: dict[str, Any], names: dict[str, str], pending: list[str]
) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    name = _text(message.get("name"))
    if not name and isinstance(call_id, str):
        name = names.get(call_id, "")
    positional = pending.pop(0) if pending else ""  # the calls are answered in order
    if not name:
        name = positional
    content = message.get("content")
    converted: dict[str, Any] = {
        "role": "tool",
        "content": content if isinstance(content, str) else json.dumps(content, ensure_ascii=False),
        "tool_name": name,
    }
    if isinstance(call_id, str) and call_id:
        converted["tool_call_id"] = call_id
    return converted


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    """The names of OpenAI-shaped ``tools`` (``function.name``; ``"?"`` for an entry without
    one), for the record of what a request offered."""
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        names.append(name if isinstance(name, str) else "?")
    return names


def prompt_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """Characters of a request's prompt for an estimated prompt token count: message texts
    (string contents, and the text parts of content lists), the history's tool calls as JSON,
    and the tool schemas as JSON."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(
                len(part["text"])
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        calls = message.get("tool_calls")
        if calls:
            chars += len(json.dumps(calls, ensure_ascii=False))
    if tools:
        chars += len(json.dumps(tools, ensure_ascii=False))
    return chars


# --- servers that will not take tools -------------------------------------------------------

_REFUSALS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"enable-auto-tool-choice"),
        "the server was started without tool parsing (vLLM): restart it with "
        "--enable-auto-tool-choice --tool-call-parser <parser for the model>",
    ),
    (
        re.compile(r"requires --jinja"),
        "the server does not apply Jinja chat templates (llama.cpp): restart llama-server with "
        "--jinja and a template that renders tools (--chat-template-file FILE)",
    ),
    (
        re.compile(r"does not support tools"),
        "the model's chat template cannot take tools (Ollama): use a model whose template "
        "does (its /api/show capabilities list 'tools') or give it one in a Modelfile TEMPLATE",
    ),
)
"""Error texts of servers that refuse a request with tools because of how they were started,
and the one line that replaces them (vLLM's ``serving_chat``: 400 '"auto" tool choice
requires --enable-auto-tool-choice and --tool-call-parser to be set'; llama.cpp without
``--jinja``: 500 "tools param requires --jinja flag" (measured); Ollama: 400 '<model> does not
support tools')."""


def tools_refusal(body: str) -> str | None:
    """The one-line reason for an error ``body`` that says the server was not started to take
    tools (:data:`_REFUSALS`), else ``None``."""
    for pattern, line in _REFUSALS:
        if pattern.search(body):
            return line
    return None
