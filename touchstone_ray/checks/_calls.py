"""The checks of what the model called: ``calls``, ``schema_valid``, ``no_empty_args``,
``arg_equals``, ``arg_regex``, ``no_call``, ``finish_reason``."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.protocols import Validator

from touchstone_ray.checks._cell import (
    PASS,
    Cell,
    Made,
    Result,
    at_path,
    fail,
    json_equal,
    show,
    unmeasured,
)
from touchstone_ray.checks._values import fits
from touchstone_ray.toolpack import (
    ArgEquals,
    ArgRegex,
    Calls,
    ExpectedCall,
    FinishReason,
    NoCall,
    NoEmptyArgs,
    SchemaValid,
)


def _more(failures: list[str]) -> str:
    """The first failure, and how many more there were."""
    extra = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    return failures[0] + extra


def _count(n: int, word: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _of(tool: str | None) -> str:
    return f" of {tool}" if tool is not None else ""


# --- calls -------------------------------------------------------------------------------


def _describe(expected: str | ExpectedCall) -> str:
    if isinstance(expected, str):
        return expected
    if expected.args is None:
        return expected.name
    return f"{expected.name}{show(expected.args, 80)}"


def call_mismatch(expected: str | ExpectedCall, made: Made, compare: str = "json") -> str | None:
    """Why ``made`` does not satisfy ``expected`` (``None``: it does).

    A name matches by name alone. An :class:`ExpectedCall` with ``args`` needs the arguments
    to be a JSON object (no arguments count as ``{}``) where every argument given is named in
    ``args`` with a value that fits one of its accepted values (``compare``: JSON equality, or
    BFCL's rules, :func:`~touchstone_ray.checks._values.fits`), and every argument not given
    has ``""`` among its accepted values (BFCL's "may be omitted").
    """
    call = made.call
    name = expected if isinstance(expected, str) else expected.name
    if call.name != name:
        return f"{made.label} calls {call.name}, not {name}"
    if isinstance(expected, str) or expected.args is None:
        return None
    args = {} if call.arguments is None else call.arguments
    if not call.arguments_valid_json or not isinstance(args, dict):
        return f"{made.label}: arguments are not a JSON object: {show(call.arguments)}"
    for key, value in args.items():
        accepted = expected.args.get(key)
        if accepted is None:
            return f"{made.label}: unexpected argument {key}"
        if not fits(value, accepted, compare):
            return f"{made.label}: {key}={show(value)}, accepted {show(accepted)}"
    for key, accepted in expected.args.items():
        if key not in args and "" not in accepted:
            return f"{made.label}: argument {key} missing"
    return None


def _matching(fits: list[list[bool]], n_calls: int) -> list[int | None]:
    """A maximum bipartite matching expectation → call (Kuhn's augmenting paths)."""
    owner: list[int | None] = [None] * n_calls

    def augment(e: int, seen: set[int]) -> bool:
        for c in range(n_calls):
            if fits[e][c] and c not in seen:
                seen.add(c)
                holder = owner[c]
                if holder is None or augment(holder, seen):
                    owner[c] = e
                    return True
        return False

    for e in range(len(fits)):
        augment(e, set())
    match: list[int | None] = [None] * len(fits)
    for c, holder in enumerate(owner):
        if holder is not None:
            match[holder] = c
    return match


def _why_unmatched(expected: str | ExpectedCall, calls: list[Made], compare: str) -> str:
    name = expected if isinstance(expected, str) else expected.name
    same = [i for i, m in enumerate(calls) if m.call.name == name]
    if not same:
        return f"no call of {name}"
    for i in same:
        reason = call_mismatch(expected, calls[i], compare)
        if reason is not None:
            return reason
    return f"every fitting call of {name} answers another expectation"


def _first_fit(
    expected: str | ExpectedCall, calls: list[Made], start: int, compare: str
) -> int | None:
    """The index of the first call from ``start`` on that fits ``expected``."""
    for j in range(start, len(calls)):
        if call_mismatch(expected, calls[j], compare) is None:
            return j
    return None


def check_calls(check: Calls, cell: Cell) -> Result:
    """The calls (of turn ``turn``, or of every turn together; a turn never reached has none)
    fit ``expect`` (:func:`call_mismatch` per pair, values compared by ``compare``).

    ``ordered``: without ``allow_extra`` the i-th call fits the i-th expectation and the
    counts are equal; with it the expectations fit a subsequence of the calls, in order.
    Unordered: each expectation gets its own call by a maximum bipartite matching (every
    expectation matched; without ``allow_extra`` no call left over either). ``expect: []``
    without ``allow_extra``: no call at all.
    """
    scope = f"turn {check.turn}: " if check.turn is not None else ""
    calls = [m for m in cell.calls if check.turn is None or m.turn == check.turn]
    expect = check.expect
    if not check.allow_extra and len(calls) != len(expect):
        made = ", ".join(m.call.name for m in calls) or "none"
        return fail(f"{scope}{_count(len(calls), 'call')}, expected {len(expect)} (made: {made})")
    if check.ordered:
        start = 0
        for i, expected in enumerate(expect):
            if not check.allow_extra:
                reason = call_mismatch(expected, calls[i], check.compare)
                if reason is not None:
                    return fail(f"{scope}expect[{i}] {_describe(expected)}: {reason}")
                continue
            found = _first_fit(expected, calls, start, check.compare)
            if found is None:
                rest = calls[start:]
                why = _why_unmatched(expected, rest, check.compare) if rest else "no call left"
                return fail(f"{scope}expect[{i}] {_describe(expected)} (in order): {why}")
            start = found + 1
        return PASS
    table = [[call_mismatch(e, m, check.compare) is None for m in calls] for e in expect]
    match = _matching(table, len(calls))
    for i, expected in enumerate(expect):
        if match[i] is None:
            why = _why_unmatched(expected, calls, check.compare)
            return fail(f"{scope}expect[{i}] {_describe(expected)}: {why}")
    return PASS


# --- schema_valid, no_empty_args ----------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    validator: Validator = cls(schema)
    return validator


def check_schema_valid(check: SchemaValid, cell: Cell) -> Result:
    """Every call (of ``tool``) names a tool the item offers, has arguments that parsed as
    JSON (no arguments count as ``{}``), and they validate against that tool's parameters
    (``jsonschema``, the validator of the schema's ``$schema`` draft, 2020-12 without one;
    formats not asserted). No call to look at: not measured. A tool whose parameters are no
    valid JSON Schema: not measured."""
    calls = cell.calls_of(check.tool)
    if not calls:
        return unmeasured(f"no call{_of(check.tool)} to validate")
    failures = []
    for m in calls:
        call = m.call
        if call.name not in cell.item.tools:
            failures.append(f"{m.label}: tool not offered")
            continue
        if not call.arguments_valid_json:
            failures.append(f"{m.label}: arguments are not valid JSON: {show(call.arguments)}")
            continue
        schema = cell.schema(call.name) or {}
        try:
            validator = _validator(json.dumps(schema, sort_keys=True))
        except SchemaError as exc:
            return unmeasured(
                f"tool {call.name}: parameters are no valid JSON Schema: {exc.message}"
            )
        args = {} if call.arguments is None else call.arguments
        error = best_match(validator.iter_errors(args))
        if error is not None:
            failures.append(f"{m.label}: {error.json_path}: {error.message}")
    return fail(_more(failures)) if failures else PASS


def _is_empty(arguments: Any) -> bool:
    if arguments is None or arguments == {}:
        return True
    return isinstance(arguments, str) and arguments.strip() in ("", "{}", "null", '""')


def check_no_empty_args(check: NoEmptyArgs, cell: Cell) -> Result:
    """No call (of ``tool``) whose tool has required parameters came with empty arguments:
    none, ``{}``, or a string that is blank, ``{}``, ``null`` or ``""``. Calls of a tool the
    pack does not have are not judged here (``schema_valid`` fails them). No call to look at:
    not measured."""
    calls = cell.calls_of(check.tool)
    if not calls:
        return unmeasured(f"no call{_of(check.tool)} to look at")
    failures = []
    for m in calls:
        required = (cell.schema(m.call.name) or {}).get("required") or []
        if required and _is_empty(m.call.arguments):
            failures.append(
                f"{m.label}: empty arguments {show(m.call.arguments)}, "
                f"required: {', '.join(map(str, required))}"
            )
    return fail(_more(failures)) if failures else PASS


# --- arg_equals, arg_regex -----------------------------------------------------------------


def _arg(m: Made, path: str) -> tuple[bool, Any]:
    args = m.call.arguments
    if not m.call.arguments_valid_json or not isinstance(args, dict):
        return False, None
    return at_path(args, path)


def _by_call(
    cell: Cell, tool: str, path: str, every: bool, fits: Callable[[Any], bool], wanted: str
) -> Result:
    calls = cell.calls_of(tool)
    if not calls:
        return fail(f"no call of {tool}")
    seen = []
    for m in calls:
        found, value = _arg(m, path)
        ok = found and fits(value)
        seen.append((m, ok, f"{m.label}: {path} = {show(value) if found else 'missing'}"))
    bad = [text for _, ok, text in seen if not ok]
    if every and bad:
        return fail(f"{_more(bad)}, expected {wanted}")
    if not every and len(bad) == len(seen):
        return fail(f"no call of {tool} has {path} {wanted} ({_more(bad)})")
    return PASS


def check_arg_equals(check: ArgEquals, cell: Cell) -> Result:
    """A call of ``tool`` (every call with ``every``; at least one call either way) has, at
    ``path`` in its arguments, a value JSON-equal to ``value`` or to one of ``one_of``
    (``true`` ≠ ``1`` ≠ ``"1"``; ``1`` = ``1.0``). Arguments that are not a JSON object have
    no value at any path."""
    accepted = check.one_of if check.one_of is not None else [check.value]
    wanted = f"= {show(accepted[0])}" if check.one_of is None else f"in {show(accepted)}"
    return _by_call(
        cell,
        check.tool,
        check.path,
        check.every,
        lambda v: any(json_equal(v, a) for a in accepted),
        wanted,
    )


def check_arg_regex(check: ArgRegex, cell: Cell) -> Result:
    """A call of ``tool`` (every call with ``every``; at least one call either way) has a
    string at ``path`` that ``pattern`` matches (``re.search``; a number is no string). A
    pattern that does not compile: not measured."""
    try:
        pattern = re.compile(check.pattern)
    except re.error as exc:
        return unmeasured(f"pattern does not compile: {exc}")
    return _by_call(
        cell,
        check.tool,
        check.path,
        check.every,
        lambda v: isinstance(v, str) and pattern.search(v) is not None,
        f"matching /{check.pattern}/",
    )


# --- no_call, finish_reason ----------------------------------------------------------------


def check_no_call(check: NoCall, cell: Cell) -> Result:
    """No turn has a tool call."""
    if cell.calls:
        labels = ", ".join(m.label for m in cell.calls)
        return fail(f"{_count(len(cell.calls), 'call')}: {labels}")
    return PASS


def check_finish_reason(check: FinishReason, cell: Cell) -> Result:
    """Turn ``turn``'s (default: the last turn's) ``finish_reason`` is one of ``expect``. A
    turn never reached fails; a turn whose server sent no finish reason is not measured."""
    n = len(cell.turns)
    index = check.turn if check.turn is not None else n
    if index > n:
        return fail(f"turn {index} never reached ({_count(n, 'turn')})")
    reason = cell.turns[index - 1].finish_reason
    if reason is None:
        return unmeasured(f"turn {index}: the server sent no finish reason")
    if reason not in check.expect:
        return fail(f"turn {index}: finish_reason {reason}, expected {' or '.join(check.expect)}")
    return PASS
