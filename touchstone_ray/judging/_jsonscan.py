"""Finding one JSON object in a model's free-form reply (used by :mod:`.parse`).

Tolerates fences (```` ```json … ``` ````), prose around the object, ``<think>…</think>``
before it and trailing commas; tells a truncated object apart from none at all.
"""

from __future__ import annotations

import json
import re
from typing import Any

THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
"""A reasoning block some servers leave inside the content."""
_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")


def _strip_trailing_commas(text: str) -> str:
    """Drop commas before ``}``/``]`` outside JSON strings."""
    out: list[str] = []
    chunk_start = 0
    in_str = False
    escaped = False
    for i, ch in enumerate(text):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
                out.append(text[chunk_start : i + 1])
                chunk_start = i + 1
        elif ch == '"':
            out.append(_TRAILING_COMMA_RE.sub(r"\1", text[chunk_start:i]))
            chunk_start = i
            in_str = True
    tail = text[chunk_start:]
    out.append(tail if in_str else _TRAILING_COMMA_RE.sub(r"\1", tail))
    return "".join(out)


def _balanced_end(text: str, start: int) -> int | None:
    """Index after the ``}`` closing the ``{`` at ``start``; None when the text ends first."""
    depth = 0
    in_str = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def extract_json_object(text: str) -> dict[str, Any] | str:
    """The first JSON object in ``text`` (fenced first, then the first balanced ``{…}``).

    Returns the object, or a failure reason (``truncated JSON …`` / ``no JSON object``).
    """
    text = THINK_RE.sub("", text)
    candidates = [m.group(1) for m in _FENCE_RE.finditer(text)] + [text]
    truncated = False
    for candidate in candidates:
        pos = candidate.find("{")
        while pos != -1:
            end = _balanced_end(candidate, pos)
            if end is None:
                truncated = True
                break
            try:
                value = json.loads(_strip_trailing_commas(candidate[pos:end]))
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                return value
            pos = candidate.find("{", pos + 1)
    if truncated:
        return "truncated JSON (an object is opened but never closed)"
    return "no JSON object"
