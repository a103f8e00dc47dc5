"""The checks of the final answer's text: ``answer_regex``, ``answer_contains``,
``json_equals``."""

from __future__ import annotations

import json
import re
from typing import Any

from touchstone_ray.checks._cell import (
    PASS,
    Cell,
    Result,
    at_path,
    fail,
    json_equal,
    pick_block,
    show,
    unmeasured,
)
from touchstone_ray.toolpack import AnswerContains, AnswerRegex, JsonEquals

JSON_TAGS = frozenset({"json", "jsonc", "json5"})
"""Fence tags preferred when JSON is taken from a fenced block."""


def check_answer_regex(check: AnswerRegex, cell: Cell) -> Result:
    """``pattern`` matches the final answer (``re.search``, no flags but ``IGNORECASE`` with
    ``ignore_case``; write ``(?s)`` / ``(?m)`` in the pattern for more). A pattern that does
    not compile: not measured."""
    try:
        pattern = re.compile(check.pattern, re.IGNORECASE if check.ignore_case else 0)
    except re.error as exc:
        return unmeasured(f"pattern does not compile: {exc}")
    if pattern.search(cell.answer) is None:
        return fail(f"/{check.pattern}/ does not match the answer ({len(cell.answer)} chars)")
    return PASS


def check_answer_contains(check: AnswerContains, cell: Cell) -> Result:
    """The final answer contains every one of ``values`` (one of them with ``any``) as a
    substring, compared case-folded with ``ignore_case``."""

    def norm(text: str) -> str:
        return text.casefold() if check.ignore_case else text

    answer = norm(cell.answer)
    missing = [v for v in check.values if norm(v) not in answer]
    if check.any and len(missing) == len(check.values):
        return fail(f"none of {show(check.values, 120)} in the answer")
    if not check.any and missing:
        return fail(f"missing from the answer: {show(missing, 120)}")
    return PASS


def _answer_json(text: str) -> tuple[bool, Any]:
    for candidate in (text, pick_block(text, JSON_TAGS)):
        if candidate is None:
            continue
        try:
            return True, json.loads(candidate)
        except ValueError:
            continue
    return False, None


def check_json_equals(check: JsonEquals, cell: Cell) -> Result:
    """JSON equal to ``value`` (:func:`~touchstone_ray.checks._cell.json_equal`), taken from

    * the final answer: the whole text parsed as JSON, else the first fenced block tagged
      ``json`` (else the first fenced block) parsed; neither parses: fail;
    * or, with ``tool``, that tool's first call over all turns at ``path`` (``None`` / ``$``:
      the whole arguments): a string there is parsed as JSON (it must parse), any other
      value is taken as it is; no call or nothing at ``path``: fail.
    """
    if check.tool is None:
        found, value = _answer_json(cell.answer)
        if not found:
            return fail("the answer holds no JSON (whole text or first fenced block)")
        where = "the answer's JSON"
    else:
        calls = cell.calls_of(check.tool)
        if not calls:
            return fail(f"no call of {check.tool}")
        first = calls[0]
        path = check.path or "$"
        found, value = at_path(first.call.arguments, check.path)
        if not found:
            return fail(f"{first.label}: nothing at {path}")
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return fail(f"{first.label}: {path} is a string that is not JSON: {show(value)}")
        where = f"{first.label}: {path}"
    if not json_equal(value, check.value):
        return fail(f"{where} = {show(value, 100)}, expected {show(check.value, 100)}")
    return PASS
