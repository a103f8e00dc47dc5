"""The checks that run code or apply edits, one pass and one fail shape (at least) per type.
The code runs for real in the sandbox (these tests need ``unshare``; ``node`` for the
``node_asserts`` passes)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tools_cell import call, judge, make_pack, turn

from touchstone_ray.checks import SandboxLimits, run_checks
from touchstone_ray.checks.sandbox import SandboxUnavailable, isolation

ADD_ASSERTS = "assert add(2, 3) == 5\nassert add(-1, 1) == 0"
GOOD_PY = "def add(a, b):\n    return a + b\n"
BAD_PY = "def add(a, b):\n    return a - b\n"
JS_ASSERTS = "const assert = require('node:assert');\nassert.strictEqual(add(2, 3), 5);"
CALC_ASSERTS = "from calc import add, sub\nassert add(2, 3) == 5\nassert sub(5, 3) == 2"
OLD_ADD = "def add(a, b):\n    return a - b"
NEW_ADD = "def add(a, b):\n    return a + b"

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")


def fenced(code: str, tag: str = "python") -> str:
    return f"So geht es:\n\n```{tag}\n{code}```\n\nFertig."


def edit(old: str, new: str, path: str = "src/calc.py") -> dict[str, str]:
    return {"path": path, "old": old, "new": new}


# --- python_asserts ------------------------------------------------------------------------


def test_python_asserts_passes_on_the_answers_code_block() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS}
    assert judge(check, turn(content=fenced(GOOD_PY))) == (True, "")


def test_python_asserts_fails_with_the_failing_assert() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS}
    got = judge(check, turn(content=fenced(BAD_PY)))
    assert got == (False, "exit 1: AssertionError (assert add(2, 3) == 5)")


def test_python_asserts_prefers_a_python_block_and_falls_back_to_the_whole_text() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS}
    text = fenced("add = None\n", "text") + fenced(GOOD_PY, "py")
    assert judge(check, turn(content=text)) == (True, "")
    assert judge(check, turn(content=GOOD_PY)) == (True, "")
    got = judge(check, turn(content="Die Funktion addiert."))
    assert got == (False, "exit 1: SyntaxError: invalid syntax")


def test_python_asserts_error_with_message() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS}
    got = judge(check, turn(content=fenced("def plus(a, b):\n    return a + b\n")))
    assert got == (False, "exit 1: NameError: name 'add' is not defined")


def test_python_asserts_from_a_call_argument() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS, "tool": "run_code", "path": "$.code"}
    assert judge(check, turn(call("run_code", {"code": GOOD_PY}))) == (True, "")
    assert judge(check, turn(call("run_code", {"code": 5}))) == (
        False,
        "call 1 (run_code, turn 1): $.code is no code: 5",
    )
    assert judge(check, turn(content=fenced(GOOD_PY))) == (False, "no call of run_code")


def test_python_asserts_without_code_fails() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS}
    assert judge(check, turn(content="  ")) == (False, "the answer holds no code")


def test_python_asserts_that_loops_times_out() -> None:
    pack = make_pack({"id": "c", "type": "python_asserts", "asserts": "assert True"})
    answer = turn(content=fenced("while True:\n    pass\n"))
    out = run_checks(pack, pack.items[0], [answer], SandboxLimits(timeout_s=1.0))[0]
    assert (out.ok, out.detail) == (False, "timed out after 1 s")


@pytest.fixture
def no_unshare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's ``PATH`` without ``unshare`` (the sandbox probed again under it)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="unshare not found"):
        isolation(refresh=True)
    yield
    monkeypatch.undo()
    isolation(refresh=True)


@pytest.mark.usefixtures("no_unshare")
def test_python_asserts_without_a_sandbox_is_not_measured() -> None:
    check = {"type": "python_asserts", "asserts": ADD_ASSERTS}
    got = judge(check, turn(content=fenced(GOOD_PY)))
    assert got == (None, "no network namespace: unshare not found")


# --- node_asserts --------------------------------------------------------------------------


@needs_node
def test_node_asserts_passes() -> None:
    check = {"type": "node_asserts", "asserts": JS_ASSERTS}
    code = "function add(a, b) {\n  return a + b;\n}\n"
    text = fenced("print(1)\n", "python") + fenced(code, "js")
    assert judge(check, turn(content=text)) == (True, "")


@needs_node
def test_node_asserts_fails_with_the_assertion() -> None:
    check = {"type": "node_asserts", "asserts": JS_ASSERTS}
    got = judge(check, turn(content=fenced("const add = (a, b) => a - b\n", "javascript")))
    assert got == (
        False,
        "exit 1: AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: -1 !== 5",
    )


def test_node_asserts_without_node_is_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    check = {"type": "node_asserts", "asserts": JS_ASSERTS}
    got = judge(check, turn(content=fenced("const add = (a, b) => a + b\n", "js")))
    assert got == (None, "node not found")


# --- edit_applies --------------------------------------------------------------------------


def test_edit_applies_passes_in_order_and_normalises_the_path() -> None:
    check = {"type": "edit_applies", "tool": "edit", "file": "src/calc.py"}
    first = call("edit", edit(OLD_ADD, NEW_ADD, "./src/calc.py"))
    second = call("edit", edit("return a + b", "return b + a"))  # unique only after the first
    assert judge(check, turn(first), turn(second)) == (True, "")


def test_edit_applies_ambiguous_old_fails() -> None:
    check = {"type": "edit_applies", "tool": "edit", "file": "src/calc.py"}
    got = judge(check, turn(call("edit", edit("return a - b", "return a + b"))))
    assert got == (False, "call 1 (edit, turn 1): old text found 2 times in src/calc.py")


def test_edit_applies_old_not_found_after_an_earlier_edit_fails() -> None:
    check = {"type": "edit_applies", "tool": "edit", "file": "src/calc.py"}
    made = turn(call("edit", edit(OLD_ADD, NEW_ADD)), call("edit", edit(OLD_ADD, NEW_ADD)))
    assert judge(check, made) == (
        False,
        "call 2 (edit, turn 1): old text not found in src/calc.py",
    )


def test_edit_applies_needs_an_edit_of_the_file() -> None:
    check = {"type": "edit_applies", "tool": "edit", "file": "src/calc.py"}
    made = turn(call("edit", edit("# calc", "# Rechner", "README.md")))
    assert judge(check, made) == (False, "no edit call on src/calc.py")
    made = turn(call("edit", {"path": "src/calc.py", "old": "", "new": "x"}))
    assert judge(check, made) == (False, "call 1 (edit, turn 1): old missing or empty")


# --- edited_python -------------------------------------------------------------------------


def test_edited_python_passes() -> None:
    check = {
        "type": "edited_python",
        "tool": "edit",
        "file": "src/calc.py",
        "asserts": CALC_ASSERTS,
    }
    assert judge(check, turn(call("edit", edit(OLD_ADD, NEW_ADD)))) == (True, "")


def test_edited_python_skips_a_refused_edit_like_a_real_tool() -> None:
    check = {
        "type": "edited_python",
        "tool": "edit",
        "file": "src/calc.py",
        "asserts": CALC_ASSERTS,
    }
    refused = call("edit", edit("return a - b", "return a + b"))
    assert judge(check, turn(refused), turn(call("edit", edit(OLD_ADD, NEW_ADD)))) == (True, "")


def test_edited_python_wrong_edit_fails_the_asserts() -> None:
    check = {
        "type": "edited_python",
        "tool": "edit",
        "file": "src/calc.py",
        "asserts": CALC_ASSERTS,
    }
    made = turn(call("edit", edit(OLD_ADD, "def add(a, b):\n    return a * b")))
    assert judge(check, made) == (False, "exit 1: AssertionError (assert add(2, 3) == 5)")


def test_edited_python_no_edit_applies_fails() -> None:
    check = {
        "type": "edited_python",
        "tool": "edit",
        "file": "src/calc.py",
        "asserts": CALC_ASSERTS,
    }
    made = turn(call("edit", edit("return a - b", "return a + b")))
    assert judge(check, made) == (
        False,
        "no edit applies: call 1 (edit, turn 1): old text found 2 times in src/calc.py",
    )
    assert judge(check, turn(content="fertig")) == (False, "no edit call on src/calc.py")
