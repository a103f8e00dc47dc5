"""The checks of the final answer's text, one pass and one fail shape (at least) per type."""

from __future__ import annotations

from tools_cell import call, judge, turn, unvalidated

from touchstone_ray.toolpack import AnswerRegex

FINAL = "Es sind 21 Grad in Berlin."


def test_answer_regex_on_the_last_turn() -> None:
    check = {"type": "answer_regex", "pattern": r"\b21 Grad\b"}
    assert judge(check, turn(call("get_weather", {"city": "B"})), turn(content=FINAL)) == (
        True,
        "",
    )
    # the first turn's text is not the final answer
    got = judge(check, turn(content=FINAL), turn(content="Fertig."))
    assert got == (False, r"/\b21 Grad\b/ does not match the answer (7 chars)")


def test_answer_regex_ignore_case() -> None:
    check = {"type": "answer_regex", "pattern": "BERLIN", "ignore_case": True}
    assert judge(check, turn(content=FINAL)) == (True, "")
    check = {"type": "answer_regex", "pattern": "BERLIN"}
    assert judge(check, turn(content=FINAL)) == (
        False,
        "/BERLIN/ does not match the answer (26 chars)",
    )


def test_answer_regex_that_does_not_compile_is_not_measured_at_run() -> None:
    unchecked = AnswerRegex.model_construct(id="c", type="answer_regex", pattern="[a-")
    assert unvalidated(unchecked, turn(content=FINAL)) == (
        None,
        "pattern does not compile: unterminated character set at position 0",
    )


def test_answer_contains_every_value() -> None:
    check = {"type": "answer_contains", "values": ["berlin", "21"]}
    assert judge(check, turn(content=FINAL)) == (True, "")
    check = {"type": "answer_contains", "values": ["Berlin", "Paris", "Rom"]}
    assert judge(check, turn(content=FINAL)) == (
        False,
        'missing from the answer: ["Paris","Rom"]',
    )


def test_answer_contains_any_value() -> None:
    check = {"type": "answer_contains", "values": ["Paris", "Berlin"], "any": True}
    assert judge(check, turn(content=FINAL)) == (True, "")
    check = {"type": "answer_contains", "values": ["Paris", "Rom"], "any": True}
    assert judge(check, turn(content=FINAL)) == (False, 'none of ["Paris","Rom"] in the answer')


def test_answer_contains_case_sensitive() -> None:
    check = {"type": "answer_contains", "values": ["berlin"], "ignore_case": False}
    assert judge(check, turn(content=FINAL)) == (False, 'missing from the answer: ["berlin"]')


def test_json_equals_whole_answer() -> None:
    check = {"type": "json_equals", "value": {"a": 1, "b": [True, None]}}
    assert judge(check, turn(content=' {"b": [true, null], "a": 1.0}\n')) == (True, "")
    got = judge(check, turn(content='{"a": 1, "b": [1, null]}'))
    assert got == (
        False,
        'the answer\'s JSON = {"a":1,"b":[1,null]}, expected {"a":1,"b":[true,null]}',
    )


def test_json_equals_first_fenced_block_json_tag_preferred() -> None:
    check = {"type": "json_equals", "value": [1, 2]}
    text = "Hier:\n```text\nkein JSON\n```\nund\n```json\n[1, 2]\n```\n"
    assert judge(check, turn(content=text)) == (True, "")
    untagged = "Hier:\n```\n[1, 2]\n```\n```\n[3]\n```"
    assert judge(check, turn(content=untagged)) == (True, "")


def test_json_equals_no_json_fails() -> None:
    check = {"type": "json_equals", "value": [1, 2]}
    assert judge(check, turn(content="[1, 2] ist die Antwort")) == (
        False,
        "the answer holds no JSON (whole text or first fenced block)",
    )


def test_json_equals_from_a_string_argument_parsed_as_json() -> None:
    check = {"type": "json_equals", "tool": "save", "path": "$.payload", "value": {"a": 1}}
    assert judge(check, turn(call("save", {"payload": '{"a": 1}'}))) == (True, "")
    got = judge(check, turn(call("save", {"payload": "{a: 1}"})))
    assert got == (
        False,
        'call 1 (save, turn 1): $.payload is a string that is not JSON: "{a: 1}"',
    )


def test_json_equals_from_a_call_takes_the_first_call() -> None:
    check = {"type": "json_equals", "tool": "save", "path": "$.meta", "value": {"k": "v"}}
    made = turn(call("save", {"meta": {"k": "w"}}), call("save", {"meta": {"k": "v"}}))
    assert judge(check, made) == (
        False,
        'call 1 (save, turn 1): $.meta = {"k":"w"}, expected {"k":"v"}',
    )


def test_json_equals_from_a_call_missing() -> None:
    check = {"type": "json_equals", "tool": "save", "path": "$.meta", "value": {}}
    assert judge(check, turn(call("ls", {}))) == (False, "no call of save")
    got = judge(check, turn(call("save", {"payload": "x"})))
    assert got == (False, "call 1 (save, turn 1): nothing at $.meta")


def test_json_equals_whole_arguments() -> None:
    check = {"type": "json_equals", "tool": "save", "value": {"payload": "x"}}
    assert judge(check, turn(call("save", {"payload": "x"}))) == (True, "")
    got = judge(check, turn(call("save", raw="{payload: x}")))
    assert got == (False, 'call 1 (save, turn 1): $ is a string that is not JSON: "{payload: x}"')
