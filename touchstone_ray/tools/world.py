"""The stand-in world of a tools item: what each tool call gets back (SPEC §3b ``world``).

Order, first match wins:

1. a canned result (``world.results``) for the call's tool whose ``match`` arguments all equal
   the call's (source ``canned``);
2. a call of a tool named ``read`` / ``read_file`` / ``cat``: the fixture file named by its
   ``path`` (or ``file`` / ``filename``) argument, or ``error: no such file: <path>``
   (source ``file``);
3. a call of ``ls`` / ``list_files`` / ``find`` / ``glob``: the fixture paths, one per line,
   under the ``path`` / ``dir`` argument (``ls``) or matching the ``pattern`` / ``name``
   glob (``find``), sorted (source ``listing``);
4. anything else: ``world.default`` (source ``default``).

The world does not change: an edit or write is checked afterwards (``edit_applies``,
``edited_python``), never applied here, so every cell sees the same fixtures.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from touchstone_ray.records import ToolCall
from touchstone_ray.tool_records import WorldReply
from touchstone_ray.toolpack import World

__all__ = ["LIST_TOOLS", "READ_TOOLS", "world_reply"]

READ_TOOLS = frozenset({"read", "read_file", "cat"})
"""Tool names answered with a fixture file's text."""
LIST_TOOLS = frozenset({"ls", "list_files", "find", "glob"})
"""Tool names answered with fixture paths."""
_PATH_ARGS = ("path", "file", "filename", "file_path")
_DIR_ARGS = ("path", "dir", "directory")
_GLOB_ARGS = ("pattern", "name", "glob")


def _first_str(args: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = args.get(name)
        if isinstance(value, str):
            return value
    return None


def _matches(match: dict[str, Any], args: dict[str, Any]) -> bool:
    return all(name in args and args[name] == value for name, value in match.items())


def _norm(path: str) -> str:
    return path.strip().removeprefix("./").lstrip("/")


def world_reply(world: World, call: ToolCall, call_id: str) -> WorldReply:
    """The world's reply to ``call`` (sent with ``call_id``), by the rules of the module
    docstring. Arguments that are not an object (raw text, ``None``) match only canned results
    with an empty ``match`` and the default."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    for canned in world.results:
        if canned.tool == call.name and _matches(canned.match, args):
            return WorldReply(
                tool_call_id=call_id, name=call.name, content=canned.reply, source="canned"
            )
    if call.name in READ_TOOLS:
        path = _first_str(args, _PATH_ARGS)
        if path is not None:
            text = world.files.get(_norm(path), world.files.get(path))
            content = text if text is not None else f"error: no such file: {path}"
            return WorldReply(tool_call_id=call_id, name=call.name, content=content, source="file")
    if call.name in LIST_TOOLS:
        paths = sorted(world.files)
        pattern = _first_str(args, _GLOB_ARGS)
        base = _first_str(args, _DIR_ARGS)
        if pattern is not None:
            paths = [
                p
                for p in paths
                if fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(p.rsplit("/", 1)[-1], pattern)
            ]
        if base is not None and _norm(base) not in ("", "."):
            prefix = _norm(base).rstrip("/") + "/"
            paths = [p for p in paths if p.startswith(prefix)]
        return WorldReply(
            tool_call_id=call_id, name=call.name, content="\n".join(paths), source="listing"
        )
    return WorldReply(tool_call_id=call_id, name=call.name, content=world.default, source="default")


def arguments_json(arguments: Any) -> str:
    """A call's arguments as the JSON text an OpenAI-compatible history carries (a raw
    string that was not JSON goes back as it came)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)
