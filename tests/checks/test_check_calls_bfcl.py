"""``compare: bfcl`` on real ``bfcl:`` items: the rules of BFCL's AST checker that JSON
equality does not have (each case is one that BFCL's own checker scores as asserted)."""

from __future__ import annotations

import json
from typing import Any

from touchstone_ray.checks import run_checks
from touchstone_ray.records import ToolCall
from touchstone_ray.tool_records import ToolTurn
from touchstone_ray.toolpack.bfcl import load_bfcl


def _turn(*calls: tuple[str, Any]) -> ToolTurn:
    made = []
    for i, (name, args) in enumerate(calls):
        if isinstance(args, str):
            try:
                parsed, valid = json.loads(args), True
            except json.JSONDecodeError:
                parsed, valid = args, False
        else:
            parsed, valid = args, True
        made.append(ToolCall(id=f"c{i}", name=name, arguments=parsed, arguments_valid_json=valid))
    return ToolTurn(tool_calls=made, finish_reason="tool_calls")


def _judge(category: str, item_id: str, *calls: tuple[str, Any]) -> tuple[bool | None, str]:
    pack = load_bfcl(category)
    (outcome,) = run_checks(pack, pack.item(item_id), [_turn(*calls)])
    return outcome.ok, outcome.detail


def test_strings_compare_normalised_and_int_counts_as_float() -> None:
    # calculate_triangle_area(base=10, height=5, unit in ["units", ""])
    ok = ("calculate_triangle_area", {"base": 10, "height": 5, "unit": "UNITS"})
    assert _judge("simple_python", "simple_python_0", ok) == (True, "")
    # x_value is a number ("float"): 0 is accepted as 0.0
    ok = ("calculate_derivative", {"function": "3x**2 + 2x - 1", "x_value": 0})
    assert _judge("simple_python", "simple_python_14", ok) == (True, "")


def test_float_for_an_integer_parameter_fails() -> None:
    bad = ("calculate_triangle_area", {"base": 10.0, "height": 5})
    assert _judge("simple_python", "simple_python_0", bad) == (
        False,
        'expect[0] calculate_triangle_area{"base":[10],"height":[5],"unit":["units",""]}: '
        "call 1 (calculate_triangle_area, turn 1): base=10.0: not of type integer",
    )


def test_empty_string_is_a_value_for_a_string_that_may_be_left_out() -> None:
    ok = ("calculate_triangle_area", {"base": 10, "height": 5, "unit": ""})
    assert _judge("simple_python", "simple_python_0", ok) == (True, "")


def test_required_argument_must_be_given_even_where_empty_string_is_accepted() -> None:
    # parallel_88: calculate_final_speed requires initial_velocity, whose accepted values
    # include "".
    pack = load_bfcl("parallel")
    check = pack.item("parallel_88").checks[0]
    assert "" in check.expect[0].args["initial_velocity"]  # type: ignore[union-attr]
    ok, detail = _judge(
        "parallel",
        "parallel_88",
        ("calculate_final_speed", {"height": 10, "gravity": 9.8}),
        ("calculate_final_speed", {"initial_velocity": 5, "height": 20, "gravity": 9.8}),
    )
    assert ok is False
    assert detail.endswith(
        "call 1 (calculate_final_speed, turn 1): required argument initial_velocity missing"
    )


def test_greedy_any_order_matching_as_bfcl() -> None:
    pack = load_bfcl("parallel")
    item = pack.item("parallel_178")
    expect = item.checks[0].expect  # type: ignore[union-attr]

    def first(e: Any) -> dict[str, Any]:
        return {
            k: next(v for v in vals if v != "")
            for k, vals in e.args.items()
            if any(v != "" for v in vals)
        }

    calls = [(e.name, first(e)) for e in expect]
    assert run_checks(pack, item, [_turn(*calls)])[0].ok is True
    # BFCL matches each expectation, in order, to the first unused call that fits: reversed,
    # one expectation takes a call another one needs, and BFCL fails it.
    assert run_checks(pack, item, [_turn(*calls[::-1])])[0].ok is False


def test_irrelevance_call_with_arguments_not_an_object_counts_as_no_call() -> None:
    name = "determine_body_mass_index"
    assert _judge("irrelevance", "irrelevance_0", (name, '{"weight": 1')) == (True, "")
    assert _judge("irrelevance", "irrelevance_0", (name, "[]")) == (True, "")
    assert _judge("irrelevance", "irrelevance_0") == (True, "")
    ok, _ = _judge("irrelevance", "irrelevance_0", (name, {"weight": 70, "height": 1.8}))
    assert ok is False
