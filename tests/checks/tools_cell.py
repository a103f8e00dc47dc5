"""Builders for the check tests (not a test module): a small tools pack with one item holding
the checks under test, tool calls and turns as an engine records them, and :func:`judge`,
which runs the item's checks on the turns and returns the first outcome as ``(ok, detail)``."""

from __future__ import annotations

from typing import Any

from touchstone_ray.checks import run_checks
from touchstone_ray.records import ToolCall
from touchstone_ray.tool_records import CheckOutcome, ToolTurn
from touchstone_ray.toolpack import ToolsPack, tools_pack_from_data

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
"""``src/calc.py``: ``add`` subtracts (the bug an edit fixes); ``return a - b`` is there twice."""

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "minimum": 1},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    {"name": "ls", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {
        "name": "edit",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old": {"type": "string"},
                "new": {"type": "string"},
            },
            "required": ["path", "old", "new"],
        },
    },
    {
        "name": "run_code",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string"}},
            "required": ["code"],
        },
    },
    {
        "name": "save",
        "parameters": {
            "type": "object",
            "properties": {"payload": {"type": "string"}, "meta": {"type": "object"}},
            "required": ["payload"],
        },
    },
    {"name": "unused", "parameters": {"type": "object", "properties": {}}},
]
OFFERED = ["get_weather", "ls", "edit", "run_code", "save"]
"""What the item offers (``unused`` is in the pack but not offered)."""


def make_pack(*checks: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> ToolsPack:
    """A valid pack with one item ``i1`` offering :data:`OFFERED` and holding ``checks``."""
    data = {
        "kind": "tools",
        "id": "t",
        "title": "T",
        "tools": tools or TOOLS,
        "world": {"files": {"src/calc.py": CALC, "README.md": "# calc\n"}},
        "items": [
            {
                "id": "i1",
                "prompt": "p",
                "tools": [t["name"] for t in (tools or TOOLS) if t["name"] in OFFERED],
                "checks": list(checks),
            }
        ],
    }
    return tools_pack_from_data(data, "test.yaml")


def call(name: str, arguments: Any = None, *, raw: str | None = None) -> ToolCall:
    """A parsed call; ``raw``: arguments that were not valid JSON, kept as sent."""
    if raw is not None:
        return ToolCall(name=name, arguments=raw, arguments_valid_json=False)
    return ToolCall(name=name, arguments=arguments)


def turn(*calls: ToolCall, content: str = "", finish: str | None = None) -> ToolTurn:
    """One turn; ``finish`` defaults to ``tool_calls`` with calls, ``stop`` without."""
    reason = finish if finish is not None else ("tool_calls" if calls else "stop")
    return ToolTurn(content=content, tool_calls=list(calls), finish_reason=reason)


def outcomes(*turns: ToolTurn, checks: list[dict[str, Any]]) -> list[CheckOutcome]:
    """Every check's outcome on ``turns``."""
    pack = make_pack(*checks)
    return run_checks(pack, pack.items[0], list(turns))


def judge(check: dict[str, Any], *turns: ToolTurn) -> tuple[bool | None, str]:
    """``(ok, detail)`` of the one ``check`` (its ``id`` defaults to ``c``) on ``turns``."""
    out = outcomes(*turns, checks=[{"id": "c", **check}])[0]
    return out.ok, out.detail


def unvalidated(check: Any, *turns: ToolTurn) -> tuple[bool | None, str]:
    """``(ok, detail)`` of ``check`` put into the item past the loader's validation (a check
    the loader would refuse, to test the run's own guard)."""
    pack = make_pack({"id": "placeholder", "type": "no_call"})
    item = pack.items[0].model_copy(update={"checks": (check,)})
    out = run_checks(pack, item, list(turns))[0]
    return out.ok, out.detail
