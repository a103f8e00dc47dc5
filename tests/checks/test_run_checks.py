"""run_checks (every check in pack order, what a cell without turns or a broken check gives)
and verdict (passed / not measured)."""

from __future__ import annotations

from types import SimpleNamespace

from tools_cell import call, make_pack, outcomes, turn

from touchstone_ray.checks import CHECKS, run_checks, verdict
from touchstone_ray.tool_records import CheckOutcome
from touchstone_ray.toolpack import CHECK_TYPES


def test_every_check_type_has_a_function_with_a_docstring() -> None:
    assert list(CHECKS) == list(CHECK_TYPES)
    assert [t for t, f in CHECKS.items() if not (f.__doc__ or "").strip()] == []


def test_outcomes_come_in_pack_order() -> None:
    checks = [
        {"id": "kein-ls", "type": "no_call"},
        {"id": "wetter", "type": "calls", "expect": ["get_weather"]},
        {"id": "schema", "type": "schema_valid"},
        {"id": "text", "type": "answer_contains", "values": ["21"]},
    ]
    got = outcomes(turn(call("get_weather", {"city": "B"})), turn(content="21 Grad"), checks=checks)
    assert [o.model_dump() for o in got] == [
        {
            "id": "kein-ls",
            "type": "no_call",
            "ok": False,
            "detail": "1 call: call 1 (get_weather, turn 1)",
        },
        {"id": "wetter", "type": "calls", "ok": True, "detail": ""},
        {"id": "schema", "type": "schema_valid", "ok": True, "detail": ""},
        {"id": "text", "type": "answer_contains", "ok": True, "detail": ""},
    ]


def test_a_cell_without_turns_is_not_measured() -> None:
    got = outcomes(checks=[{"id": "a", "type": "no_call"}, {"id": "b", "type": "schema_valid"}])
    assert [(o.id, o.ok, o.detail) for o in got] == [
        ("a", None, "the cell has no turns"),
        ("b", None, "the cell has no turns"),
    ]


def test_a_check_that_breaks_or_is_unknown_is_not_measured() -> None:
    pack = make_pack({"id": "ok", "type": "no_call"})
    broken = SimpleNamespace(id="kaputt", type="calls")  # no expect: the function raises
    unknown = SimpleNamespace(id="neu", type="telepathy")
    item = pack.items[0].model_copy(update={"checks": (*pack.items[0].checks, broken, unknown)})
    got = run_checks(pack, item, [turn(content="x")])
    assert [(o.id, o.ok, o.detail) for o in got] == [
        ("ok", True, ""),
        (
            "kaputt",
            None,
            "the check failed to run: AttributeError: "
            "'types.SimpleNamespace' object has no attribute 'turn'",
        ),
        ("neu", None, "unknown check type telepathy"),
    ]


def _o(check_id: str, ok: bool | None) -> CheckOutcome:
    return CheckOutcome(id=check_id, type="calls", ok=ok)


def test_verdict() -> None:
    assert verdict([_o("a", True), _o("b", None), _o("c", True)]) == (True, ["b"])
    assert verdict([_o("a", True), _o("b", False), _o("c", None)]) == (False, ["c"])
    assert verdict([_o("a", None), _o("b", None)]) == (None, ["a", "b"])
    assert verdict([]) == (None, [])
