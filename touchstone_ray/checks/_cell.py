"""What every check looks at: the finished cell (its calls in order, its final answer), and the
small helpers they share (JSON paths, JSON equality, fenced code blocks, one-line details)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.checks.sandbox import SandboxLimits
from touchstone_ray.records import ToolCall
from touchstone_ray.tool_records import ToolTurn
from touchstone_ray.toolpack import ToolItem, ToolsPack

DETAIL_CHARS = 300
"""Longest ``detail`` of an outcome (characters)."""

_BREAK = re.compile(r"[ \t]*[\r\n\v\f\u2028\u2029]+[ \t]*")
_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]")
_FENCE = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)\n(?P<body>.*?)"
    r"(?:^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Result:
    """A check's verdict: ``ok`` (``None``: not measured) and a one-line ``detail``."""

    ok: bool | None
    detail: str = ""


PASS = Result(True)


def fail(detail: str) -> Result:
    """A failed check with its reason (one line, at most :data:`DETAIL_CHARS`)."""
    return Result(False, one_line(detail))


def unmeasured(detail: str) -> Result:
    """A check that could not run, with the reason."""
    return Result(None, one_line(detail))


def one_line(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` on one line (each line break, with the blanks around it, becomes one space),
    cut to ``limit`` characters; other whitespace is kept as it is."""
    flat = _BREAK.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Made:
    """One call the model made: its number in the cell (from 1), its turn (from 1)."""

    number: int
    turn: int
    call: ToolCall

    @property
    def label(self) -> str:
        """``call 2 (get_weather, turn 1)``."""
        return f"call {self.number} ({self.call.name}, turn {self.turn})"


@dataclass(frozen=True)
class Cell:
    """A finished cell as the checks see it."""

    pack: ToolsPack
    item: ToolItem
    turns: tuple[ToolTurn, ...]
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    calls: tuple[Made, ...] = field(init=False)
    """Every call of every turn, in order."""

    def __post_init__(self) -> None:
        made: list[Made] = []
        for t, turn in enumerate(self.turns, start=1):
            for call in turn.tool_calls:
                made.append(Made(len(made) + 1, t, call))
        object.__setattr__(self, "calls", tuple(made))

    @property
    def answer(self) -> str:
        """The final answer: the last turn's ``content`` (``""`` without turns)."""
        return self.turns[-1].content if self.turns else ""

    def calls_of(self, tool: str | None) -> list[Made]:
        """The calls of ``tool`` (``None``: every call), in order."""
        return [m for m in self.calls if tool is None or m.call.name == tool]

    def schema(self, name: str) -> dict[str, Any] | None:
        """The parameters schema of the pack's tool ``name``; ``None``: no such tool."""
        for tool in self.pack.tools:
            if tool.name == name:
                return tool.parameters
        return None


_MISSING = object()


def at_path(value: Any, path: str | None) -> tuple[bool, Any]:
    """``(found, value)`` at the JSON path ``$.a.b[0]`` in ``value`` (``None`` or ``$``: the
    value itself). A key into a non-object or an index into a non-array is not found."""
    if path is None:
        return True, value
    node = value
    for step in _PATH_STEP.finditer(path):
        key, index = step.group(1), step.group(2)
        if key is not None:
            node = node.get(key, _MISSING) if isinstance(node, dict) else _MISSING
        else:
            i = int(index)
            node = node[i] if isinstance(node, list) and i < len(node) else _MISSING
        if node is _MISSING:
            return False, None
    return True, node


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` ≠ ``1``, ``1`` ≠ ``"1"``, ``1`` = ``1.0``; objects by keys and
    values, arrays element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and bool(a == b)


def show(value: Any, limit: int = 60) -> str:
    """``value`` as compact JSON, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Block:
    """A fenced block of a Markdown text: its language tag (lower case, ``""`` none) and
    body."""

    tag: str
    body: str


def fenced_blocks(text: str) -> list[Block]:
    """The fenced blocks (```` ``` ```` or ``~~~``) of ``text`` in order; an unclosed last
    fence runs to the end (CommonMark)."""
    blocks = []
    for m in _FENCE.finditer(text):
        info = m.group("info").strip().split()
        blocks.append(Block(info[0].lower() if info else "", m.group("body")))
    return blocks


def pick_block(text: str, tags: frozenset[str]) -> str | None:
    """The body of the first fenced block tagged one of ``tags``, else of the first fenced
    block; ``None`` where ``text`` has none."""
    blocks = fenced_blocks(text)
    for block in blocks:
        if block.tag in tags:
            return block.body
    return blocks[0].body if blocks else None
