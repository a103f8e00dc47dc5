"""The dispatcher: each check of an item, by type, on a finished cell; and the cell's verdict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from touchstone_ray.checks._calls import (
    check_arg_equals,
    check_arg_regex,
    check_calls,
    check_finish_reason,
    check_no_call,
    check_no_empty_args,
    check_schema_valid,
)
from touchstone_ray.checks._cell import Cell, Result, unmeasured
from touchstone_ray.checks._code import (
    check_edit_applies,
    check_edited_python,
    check_node_asserts,
    check_python_asserts,
)
from touchstone_ray.checks._text import check_answer_contains, check_answer_regex, check_json_equals
from touchstone_ray.checks.sandbox import SandboxLimits
from touchstone_ray.tool_records import CheckOutcome, ToolTurn
from touchstone_ray.toolpack import ToolItem, ToolsPack

CHECKS: dict[str, Callable[[Any, Cell], Result]] = {
    "calls": check_calls,
    "schema_valid": check_schema_valid,
    "no_empty_args": check_no_empty_args,
    "arg_equals": check_arg_equals,
    "arg_regex": check_arg_regex,
    "no_call": check_no_call,
    "finish_reason": check_finish_reason,
    "answer_regex": check_answer_regex,
    "answer_contains": check_answer_contains,
    "json_equals": check_json_equals,
    "python_asserts": check_python_asserts,
    "node_asserts": check_node_asserts,
    "edit_applies": check_edit_applies,
    "edited_python": check_edited_python,
}
"""The function of each check type (SPEC §3b order)."""


def run_check(check: Any, cell: Cell) -> CheckOutcome:
    """One check on ``cell``: its type's function from :data:`CHECKS`. A cell without turns,
    an unknown type, or an exception inside the function makes it not measured (the
    exception's type and message in ``detail``), never a pass and never a crash."""
    function = CHECKS.get(check.type)
    if not cell.turns:
        result = unmeasured("the cell has no turns")
    elif function is None:
        result = unmeasured(f"unknown check type {check.type}")
    else:
        try:
            result = function(check, cell)
        except Exception as exc:  # a checker bug must not lose the cell
            result = unmeasured(f"the check failed to run: {type(exc).__name__}: {exc}")
    return CheckOutcome(id=check.id, type=check.type, ok=result.ok, detail=result.detail)


def run_checks(
    pack: ToolsPack,
    item: ToolItem,
    turns: Sequence[ToolTurn],
    limits: SandboxLimits | None = None,
) -> list[CheckOutcome]:
    """Every check of ``item`` on the finished cell ``turns``, in pack order.

    Pure but for the code checks (``python_asserts``, ``node_asserts``, ``edited_python``),
    which run sandboxed subprocesses under ``limits`` (default :class:`SandboxLimits`: 20 s)
    one after another, so this can take that long per code check: call it off the event
    loop. The final answer is the last turn's ``content``.
    """
    cell = Cell(pack, item, tuple(turns), limits or SandboxLimits())
    return [run_check(check, cell) for check in item.checks]


def verdict(outcomes: Sequence[CheckOutcome]) -> tuple[bool | None, list[str]]:
    """``(passed, not_measured)`` of a cell: ``passed`` is true when every measured check is
    ok, false when one failed, ``None`` when no check was measured (none at all included);
    ``not_measured`` the ids of the checks with ``ok`` ``None``, in order."""
    not_measured = [o.id for o in outcomes if o.ok is None]
    measured = [o.ok for o in outcomes if o.ok is not None]
    if not measured:
        return None, not_measured
    return all(measured), not_measured
