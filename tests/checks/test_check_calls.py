"""The checks of what the model called, one pass and one fail shape (at least) per type, each
with its exact ``ok`` and ``detail``."""

from __future__ import annotations

import pytest
from tools_cell import TOOLS, call, judge, make_pack, turn, unvalidated

from touchstone_ray.checks import run_checks
from touchstone_ray.errors import PackError
from touchstone_ray.tool_records import ToolTurn
from touchstone_ray.toolpack import ArgRegex

BERLIN = {"city": "Berlin"}
WEATHER_ARGS = {"name": "get_weather", "args": {"city": ["Berlin"], "unit": ["c", ""]}}
WEATHER_SHOWN = 'get_weather{"city":["Berlin"],"unit":["c",""]}'


# --- calls ---------------------------------------------------------------------------------


def test_calls_by_name_unordered_passes() -> None:
    check = {"type": "calls", "expect": ["get_weather", "ls"]}
    assert judge(check, turn(call("ls", {}), call("get_weather", BERLIN))) == (True, "")


def test_calls_count_differs_fails() -> None:
    check = {"type": "calls", "expect": ["get_weather"]}
    got = judge(check, turn(call("get_weather", BERLIN)), turn(call("ls", {})))
    assert got == (False, "2 calls, expected 1 (made: get_weather, ls)")


def test_calls_with_args_lets_an_argument_out_where_empty_string_is_accepted() -> None:
    check = {"type": "calls", "expect": [WEATHER_ARGS]}
    assert judge(check, turn(call("get_weather", BERLIN))) == (True, "")
    assert judge(check, turn(call("get_weather", {"city": "Berlin", "unit": "c"}))) == (True, "")


def test_calls_with_args_wrong_value_fails() -> None:
    check = {"type": "calls", "expect": [WEATHER_ARGS]}
    got = judge(check, turn(call("get_weather", {"city": "Berlin", "unit": "f"})))
    assert got == (
        False,
        f'expect[0] {WEATHER_SHOWN}: call 1 (get_weather, turn 1): unit="f", accepted ["c",""]',
    )


def test_calls_with_args_unexpected_argument_fails() -> None:
    check = {"type": "calls", "expect": [WEATHER_ARGS]}
    got = judge(check, turn(call("get_weather", {"city": "Berlin", "days": 3})))
    assert got == (
        False,
        f"expect[0] {WEATHER_SHOWN}: call 1 (get_weather, turn 1): unexpected argument days",
    )


def test_calls_with_args_missing_argument_fails() -> None:
    expected = {"name": "get_weather", "args": {"city": ["Berlin"], "days": [3]}}
    got = judge({"type": "calls", "expect": [expected]}, turn(call("get_weather", BERLIN)))
    assert got == (
        False,
        'expect[0] get_weather{"city":["Berlin"],"days":[3]}: '
        "call 1 (get_weather, turn 1): argument days missing",
    )


def test_calls_with_args_types_compare_as_json() -> None:
    expected = {"name": "get_weather", "args": {"city": ["Berlin"], "days": [3]}}
    check = {"type": "calls", "expect": [expected]}
    assert judge(check, turn(call("get_weather", {"city": "Berlin", "days": 3.0}))) == (True, "")
    got = judge(check, turn(call("get_weather", {"city": "Berlin", "days": "3"})))
    assert got == (
        False,
        'expect[0] get_weather{"city":["Berlin"],"days":[3]}: '
        'call 1 (get_weather, turn 1): days="3", accepted [3]',
    )


def test_calls_with_args_on_raw_arguments_fails() -> None:
    check = {"type": "calls", "expect": [WEATHER_ARGS]}
    got = judge(check, turn(call("get_weather", raw='{"city": "Berl')))
    assert got == (
        False,
        f"expect[0] {WEATHER_SHOWN}: call 1 (get_weather, turn 1): "
        'arguments are not a JSON object: "{\\"city\\": \\"Berl"',
    )


def test_calls_unordered_is_a_bipartite_matching_not_greedy() -> None:
    # Greedy would give the first expectation the Berlin call and leave the second without one.
    either = {"name": "get_weather", "args": {"city": ["Berlin", "Paris"]}}
    berlin = {"name": "get_weather", "args": {"city": ["Berlin"]}}
    check = {"type": "calls", "expect": [either, berlin]}
    made = turn(call("get_weather", BERLIN), call("get_weather", {"city": "Paris"}))
    assert judge(check, made) == (True, "")


def test_calls_unordered_unmatched_expectation_fails() -> None:
    berlin = {"name": "get_weather", "args": {"city": ["Berlin"]}}
    check = {"type": "calls", "expect": [berlin, berlin]}
    made = turn(call("get_weather", BERLIN), call("get_weather", {"city": "Paris"}))
    assert judge(check, made) == (
        False,
        'expect[1] get_weather{"city":["Berlin"]}: '
        'call 2 (get_weather, turn 1): city="Paris", accepted ["Berlin"]',
    )


def test_calls_every_fitting_call_taken_fails() -> None:
    check = {"type": "calls", "expect": ["ls", "ls"], "allow_extra": True}
    assert judge(check, turn(call("ls", {}))) == (
        False,
        "expect[1] ls: every fitting call of ls answers another expectation",
    )


def test_calls_ordered_passes_and_wrong_order_fails() -> None:
    check = {"type": "calls", "expect": ["ls", "get_weather"], "ordered": True}
    assert judge(check, turn(call("ls", {})), turn(call("get_weather", BERLIN))) == (True, "")
    got = judge(check, turn(call("get_weather", BERLIN), call("ls", {})))
    assert got == (False, "expect[0] ls: call 1 (get_weather, turn 1) calls get_weather, not ls")


def test_calls_ordered_with_extra_is_a_subsequence() -> None:
    check = {"type": "calls", "expect": ["ls", "edit"], "ordered": True, "allow_extra": True}
    made = [call("ls", {}), call("get_weather", BERLIN), call("edit", {})]
    assert judge(check, turn(*made)) == (True, "")
    got = judge(check, turn(call("edit", {}), call("ls", {})))
    assert got == (False, "expect[1] edit (in order): no call left")


def test_calls_unordered_with_extra_passes() -> None:
    check = {"type": "calls", "expect": ["ls"], "allow_extra": True}
    assert judge(check, turn(call("get_weather", BERLIN), call("ls", {}))) == (True, "")
    got = judge(check, turn(call("get_weather", BERLIN)))
    assert got == (False, "expect[0] ls: no call of ls")


def test_calls_of_one_turn() -> None:
    turns = (turn(call("ls", {})), turn(call("edit", {})))
    assert judge({"type": "calls", "expect": ["edit"], "turn": 2}, *turns) == (True, "")
    got = judge({"type": "calls", "expect": ["edit"], "turn": 1}, *turns)
    assert got == (False, "turn 1: expect[0] edit: no call of edit")
    got = judge({"type": "calls", "expect": ["ls"], "turn": 3}, *turns)
    assert got == (False, "turn 3: 0 calls, expected 1 (made: none)")


def test_calls_expect_nothing() -> None:
    check = {"type": "calls", "expect": []}
    assert judge(check, turn(content="Hallo")) == (True, "")
    assert judge(check, turn(call("ls", {}))) == (False, "1 call, expected 0 (made: ls)")


# --- schema_valid --------------------------------------------------------------------------


def test_schema_valid_passes() -> None:
    made = turn(call("get_weather", {"city": "Berlin", "unit": "c", "days": 2}), call("ls"))
    assert judge({"type": "schema_valid"}, made) == (True, "")


def test_schema_valid_wrong_type_fails() -> None:
    got = judge({"type": "schema_valid"}, turn(call("get_weather", {"city": "B", "days": "2"})))
    assert got == (False, "call 1 (get_weather, turn 1): $.days: '2' is not of type 'integer'")


def test_schema_valid_missing_required_and_extra_property_fail() -> None:
    made = turn(call("get_weather", {}), call("get_weather", {"city": "B", "country": "DE"}))
    assert judge({"type": "schema_valid"}, made) == (
        False,
        "call 1 (get_weather, turn 1): $: 'city' is a required property (+1 more)",
    )


def test_schema_valid_raw_arguments_fail() -> None:
    got = judge({"type": "schema_valid"}, turn(call("get_weather", raw='{"city": "B"')))
    assert got == (
        False,
        'call 1 (get_weather, turn 1): arguments are not valid JSON: "{\\"city\\": \\"B\\""',
    )


def test_schema_valid_tool_not_offered_fails() -> None:
    got = judge({"type": "schema_valid"}, turn(call("unused", {})))
    assert got == (False, "call 1 (unused, turn 1): tool not offered")


def test_schema_valid_of_one_tool_looks_at_its_calls_only() -> None:
    made = turn(call("get_weather", {"days": 0}), call("ls", {"path": "."}))
    assert judge({"type": "schema_valid", "tool": "ls"}, made) == (True, "")


def test_schema_valid_without_a_call_is_not_measured() -> None:
    assert judge({"type": "schema_valid"}, turn(content="x")) == (None, "no call to validate")
    got = judge({"type": "schema_valid", "tool": "ls"}, turn(call("get_weather", BERLIN)))
    assert got == (None, "no call of ls to validate")


def test_schema_valid_on_a_schema_that_is_no_json_schema_is_not_measured() -> None:
    tools = [{"name": "ls", "parameters": {"type": "dict", "properties": {}}}]
    pack = make_pack({"id": "c", "type": "schema_valid"}, tools=tools)
    out = run_checks(pack, pack.items[0], [turn(call("ls", {}))])[0]
    assert (out.ok, out.detail) == (
        None,
        "tool ls: parameters are no valid JSON Schema: "
        "'dict' is not valid under any of the given schemas",
    )


# --- no_empty_args -------------------------------------------------------------------------


def test_no_empty_args_passes_where_nothing_is_required() -> None:
    made = turn(call("get_weather", BERLIN), call("ls", {}), call("ls"))
    assert judge({"type": "no_empty_args"}, made) == (True, "")


def test_no_empty_args_fails_on_empty_arguments_of_a_tool_with_required_ones() -> None:
    got = judge({"type": "no_empty_args"}, turn(call("get_weather", {})))
    assert got == (False, "call 1 (get_weather, turn 1): empty arguments {}, required: city")
    got = judge({"type": "no_empty_args"}, turn(call("ls", {}), call("edit", raw=" ")))
    assert got == (
        False,
        'call 2 (edit, turn 1): empty arguments " ", required: path, old, new',
    )


def test_no_empty_args_without_a_call_is_not_measured() -> None:
    got = judge({"type": "no_empty_args", "tool": "edit"}, turn(call("ls", {})))
    assert got == (None, "no call of edit to look at")


# --- arg_equals, arg_regex -----------------------------------------------------------------


def test_arg_equals_passes_on_one_call() -> None:
    check = {"type": "arg_equals", "tool": "get_weather", "path": "$.days", "value": 3}
    made = turn(call("get_weather", {"city": "B", "days": 2}), call("get_weather", {"days": 3.0}))
    assert judge(check, made) == (True, "")


def test_arg_equals_string_is_not_a_number() -> None:
    check = {"type": "arg_equals", "tool": "get_weather", "path": "$.days", "value": 3}
    got = judge(check, turn(call("get_weather", {"city": "B", "days": "3"})))
    assert got == (
        False,
        'no call of get_weather has $.days = 3 (call 1 (get_weather, turn 1): $.days = "3")',
    )


def test_arg_equals_every_call() -> None:
    check = {
        "type": "arg_equals",
        "tool": "get_weather",
        "path": "$.unit",
        "one_of": ["c", "f"],
        "every": True,
    }
    made = turn(call("get_weather", {"unit": "c"}), call("get_weather", {"city": "B"}))
    assert judge(check, made) == (
        False,
        'call 2 (get_weather, turn 1): $.unit = missing, expected in ["c","f"]',
    )
    made = turn(call("get_weather", {"unit": "c"}), call("get_weather", {"unit": "f"}))
    assert judge(check, made) == (True, "")


def test_arg_equals_nested_path_and_no_call() -> None:
    check = {"type": "arg_equals", "tool": "save", "path": "$.meta.tags[1]", "value": "b"}
    made = turn(call("save", {"payload": "x", "meta": {"tags": ["a", "b"]}}))
    assert judge(check, made) == (True, "")
    assert judge(check, turn(call("ls", {}))) == (False, "no call of save")


def test_arg_equals_true_is_not_one() -> None:
    check = {"type": "arg_equals", "tool": "save", "path": "$.meta.flag", "value": 1}
    got = judge(check, turn(call("save", {"meta": {"flag": True}})))
    assert got == (
        False,
        "no call of save has $.meta.flag = 1 (call 1 (save, turn 1): $.meta.flag = true)",
    )


def test_arg_regex_passes_and_a_number_is_no_string() -> None:
    check = {"type": "arg_regex", "tool": "get_weather", "path": "$.city", "pattern": "^Ber"}
    assert judge(check, turn(call("get_weather", BERLIN))) == (True, "")
    check = {"type": "arg_regex", "tool": "get_weather", "path": "$.days", "pattern": r"\d"}
    got = judge(check, turn(call("get_weather", {"days": 3})))
    assert got == (
        False,
        r"no call of get_weather has $.days matching /\d/ (call 1 (get_weather, turn 1): "
        "$.days = 3)",
    )


def test_arg_regex_every_call_and_real_tabs() -> None:
    check = {
        "type": "arg_regex",
        "tool": "edit",
        "path": "$.new",
        "pattern": "^\t",
        "every": True,
    }
    made = turn(call("edit", {"new": "\techo"}), call("edit", {"new": "    echo"}))
    assert judge(check, made) == (
        False,
        'call 2 (edit, turn 1): $.new = "    echo", expected matching /^\t/',
    )


def test_arg_regex_that_does_not_compile_is_refused_at_load_not_measured_at_run() -> None:
    check = {"id": "c", "type": "arg_regex", "tool": "ls", "path": "$.path", "pattern": "("}
    with pytest.raises(PackError) as caught:
        make_pack(check)
    assert str(caught.value) == (
        "test.yaml: items[0].checks[0].arg_regex.pattern: not a regular expression: "
        "missing ), unterminated subpattern at position 0 (got '(')"
    )
    unchecked = ArgRegex.model_construct(**check)  # past the loader (the run's own guard)
    assert unvalidated(unchecked, turn(call("ls", {"path": "."}))) == (
        None,
        "pattern does not compile: missing ), unterminated subpattern at position 0",
    )


# --- no_call, finish_reason ----------------------------------------------------------------


def test_no_call() -> None:
    assert judge({"type": "no_call"}, turn(content="Das geht ohne Werkzeug.")) == (True, "")
    got = judge({"type": "no_call"}, turn(call("ls", {})), turn(call("get_weather", BERLIN)))
    assert got == (False, "2 calls: call 1 (ls, turn 1), call 2 (get_weather, turn 2)")


def test_finish_reason_of_the_last_turn() -> None:
    check = {"type": "finish_reason", "expect": ["stop"]}
    assert judge(check, turn(call("ls", {})), turn(content="fertig")) == (True, "")
    got = judge(check, turn(content="abgeschnitt", finish="length"))
    assert got == (False, "turn 1: finish_reason length, expected stop")


def test_finish_reason_of_a_given_turn() -> None:
    check = {"type": "finish_reason", "expect": ["tool_calls", "stop"], "turn": 1}
    assert judge(check, turn(call("ls", {})), turn(content="x")) == (True, "")
    check = {"type": "finish_reason", "expect": ["stop"], "turn": 3}
    assert judge(check, turn(content="x")) == (False, "turn 3 never reached (1 turn)")


def test_finish_reason_not_sent_is_not_measured() -> None:
    got = judge({"type": "finish_reason", "expect": ["stop"]}, ToolTurn(content="x"))
    assert got == (None, "turn 1: the server sent no finish reason")


def test_the_pack_tools_are_the_helpers_tools() -> None:
    assert [t.name for t in make_pack({"id": "c", "type": "no_call"}).tools] == [
        t["name"] for t in TOOLS
    ]


# --- calls, compare: bfcl ------------------------------------------------------------------


def _bfcl(args: dict[str, list[object]], compare: str = "bfcl") -> dict[str, object]:
    return {"type": "calls", "expect": [{"name": "save", "args": args}], "compare": compare}


def test_calls_bfcl_strings_ignore_case_spaces_and_punctuation() -> None:
    made = turn(call("save", {"payload": "san francisco,ca"}))
    assert judge(_bfcl({"payload": ["San Francisco, CA"]}), made) == (True, "")
    assert judge(_bfcl({"payload": ["San Francisco, CA"]}, "json"), made) == (
        False,
        'expect[0] save{"payload":["San Francisco, CA"]}: '
        'call 1 (save, turn 1): payload="san francisco,ca", accepted ["San Francisco, CA"]',
    )
    got = judge(_bfcl({"payload": ["San Jose, CA"]}), made)
    assert got == (
        False,
        'expect[0] save{"payload":["San Jose, CA"]}: '
        'call 1 (save, turn 1): payload="san francisco,ca", accepted ["San Jose, CA"]',
    )


def test_calls_bfcl_arrays_of_strings_and_numbers() -> None:
    made = turn(call("save", {"payload": ["new york", "LA"], "meta": 2}))
    check = _bfcl({"payload": [["New York", "la"]], "meta": [2.0, ""]})
    assert judge(check, made) == (True, "")
    check = _bfcl({"payload": [["LA", "New York"]], "meta": [2.0, ""]})  # order counts
    assert judge(check, made)[0] is False


def test_calls_bfcl_objects_take_accepted_lists_per_key() -> None:
    accepted = {"meta": [{"name": ["Ann Lee"], "age": [30, ""]}]}
    assert judge(_bfcl(accepted), turn(call("save", {"meta": {"name": "ann-lee"}}))) == (True, "")
    got = judge(_bfcl(accepted), turn(call("save", {"meta": {"name": "Ann Lee", "x": 1}})))
    assert got == (
        False,
        'expect[0] save{"meta":[{"name":["Ann Lee"],"age":[30,""]}]}: call 1 (save, turn 1): '
        'meta={"name":"Ann Lee","x":1}, accepted [{"name":["Ann Lee"],"age":[30,""]}]',
    )


def test_calls_bfcl_arrays_of_objects_one_by_one() -> None:
    accepted = {"meta": [[{"k": ["A"]}, {"k": ["b"], "v": [1, ""]}]]}
    made = turn(call("save", {"meta": [{"k": "a"}, {"k": "B", "v": 1}]}))
    assert judge(_bfcl(accepted), made) == (True, "")
    made = turn(call("save", {"meta": [{"k": "B"}, {"k": "a"}]}))
    assert judge(_bfcl(accepted), made)[0] is False
