"""The checks that run code or apply edits: ``python_asserts``, ``node_asserts``,
``edit_applies``, ``edited_python``. Code runs only through
:func:`~touchstone_ray.checks.sandbox.run_sandboxed`; where it cannot run the check is not
measured, never passed."""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import signal
from collections.abc import Sequence

from touchstone_ray.checks._cell import (
    PASS,
    Cell,
    Made,
    Result,
    at_path,
    fail,
    pick_block,
    show,
    unmeasured,
)
from touchstone_ray.checks.sandbox import (
    SandboxResult,
    SandboxUnavailable,
    python_argv,
    run_sandboxed,
)
from touchstone_ray.toolpack import EditApplies, EditedPython, NodeAsserts, PythonAsserts

PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
"""Fence tags of a Python block (preferred over untagged blocks)."""
NODE_TAGS = frozenset({"javascript", "js", "node", "nodejs", "mjs", "cjs"})
"""Fence tags of a JavaScript block."""
CHECK_SCRIPT = "__check__.py"
"""The file ``edited_python`` runs its asserts from (in the sandbox directory's root)."""

_SIGNALS = frozenset(int(s) for s in signal.Signals)
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def _code(check: PythonAsserts | NodeAsserts, cell: Cell, tags: frozenset[str]) -> str | Result:
    """The code to run, or the failure that there is none."""
    if check.tool is None or check.path is None:
        block = pick_code(cell.answer, tags)
        return block if block.strip() else fail("the answer holds no code")
    calls = cell.calls_of(check.tool)
    if not calls:
        return fail(f"no call of {check.tool}")
    first = calls[0]
    args = first.call.arguments if first.call.arguments_valid_json else None
    found, value = at_path(args, check.path) if isinstance(args, dict) else (False, None)
    if not found:
        return fail(f"{first.label}: nothing at {check.path}")
    if not isinstance(value, str) or not value.strip():
        return fail(f"{first.label}: {check.path} is no code: {show(value)}")
    return value


def pick_code(answer: str, tags: frozenset[str]) -> str:
    """The code of an answer: its first fenced block tagged one of ``tags``, else its first
    fenced block, else the whole text."""
    block = pick_block(answer, tags)
    return block if block is not None else answer


def _signal_name(n: int) -> str:
    return signal.Signals(n).name if n in _SIGNALS else f"signal {n}"


def explain(result: SandboxResult, timeout_s: float, last: bool = True) -> str:
    """One line on why a sandboxed run failed: the timeout, the signal (``128 + n`` from a PID
    namespace's ``sh`` read as signal ``n``), or the exit status, with the error line of
    stderr (Python's last ``…Error`` line, with the failing source line where the error has
    no message; node's first, with the line after it)."""
    if result.timed_out:
        return f"timed out after {timeout_s:g} s"
    rc = result.returncode
    if rc < 0:
        head = f"killed by {_signal_name(-rc)}"
    elif rc > 128 and rc - 128 in _SIGNALS:
        head = f"exit {rc} (killed by {_signal_name(rc - 128)})"
    else:
        head = f"exit {rc}"
    lines = result.stderr_tail.splitlines()
    hits = [i for i, line in enumerate(lines) if _ERROR_LINE.match(line)]
    if not hits:
        rest = [line for line in (lines or result.stdout_tail.splitlines()) if line.strip()]
        return f"{head}: {rest[-1].strip()}" if rest else head
    at = hits[-1] if last else hits[0]
    text = lines[at].strip()
    if last and ":" not in text:  # a bare AssertionError: show the line that raised it
        source = [
            line.strip()
            for line in lines[:at]
            if line.startswith("    ") and line.strip() and set(line.strip()) - set("^~ ")
        ]
        if source:
            text += f" ({source[-1]})"
    if not last:
        after = [line.strip() for line in lines[at + 1 : at + 4] if line.strip()]
        if after and not after[0].startswith("at "):
            text += f" {after[0]}"
    return f"{head}: {text}"


def _run(argv: Sequence[str], files: dict[str, str], cell: Cell, last: bool) -> Result:
    try:
        result = run_sandboxed(argv, files, cell.limits)
    except SandboxUnavailable as exc:
        return unmeasured(str(exc))
    except OSError as exc:
        return unmeasured(f"cannot start {argv[0]}: {exc.strerror or exc}")
    return PASS if result.ok else fail(explain(result, cell.limits.timeout_s, last))


def check_python_asserts(check: PythonAsserts, cell: Cell) -> Result:
    """The model's Python code, then a blank line, then the hidden asserts, run as one file
    ``main.py`` by this interpreter (``-I``) in the sandbox: exit 0 within the time passes.
    The code is ``tool``'s first call's string at ``path``, or else taken from the final
    answer (:func:`pick_code` with :data:`PYTHON_TAGS`); none: fail. The sandbox
    unavailable: not measured."""
    code = _code(check, cell, PYTHON_TAGS)
    if isinstance(code, Result):
        return code
    if check.asserts is None:
        return unmeasured("the check has no asserts")
    program = f"{code.rstrip()}\n\n{check.asserts}\n"
    return _run([*python_argv(), "main.py"], {"main.py": program}, cell, last=True)


def check_node_asserts(check: NodeAsserts, cell: Cell) -> Result:
    """The model's JavaScript, then ``;`` on a line, then the hidden asserts, run as one
    CommonJS file ``main.js`` by ``node`` (looked up on this process's ``PATH``) in the
    sandbox: exit 0 within the time passes. Code as for ``python_asserts`` with
    :data:`NODE_TAGS`. ``node`` missing or the sandbox unavailable: not measured."""
    node = shutil.which("node", path=os.environ.get("PATH", ""))
    if node is None:
        return unmeasured("node not found")
    code = _code(check, cell, NODE_TAGS)
    if isinstance(code, Result):
        return code
    if check.asserts is None:
        return unmeasured("the check has no asserts")
    program = f"{code.rstrip()}\n;\n{check.asserts}\n"
    return _run([node, "main.js"], {"main.js": program}, cell, last=False)


# --- edits ---------------------------------------------------------------------------------


def norm_path(path: str) -> str:
    """A file path as edits and fixtures are compared: ``/``-separated, normalised, without a
    leading ``./`` or ``/``."""
    return posixpath.normpath(path.replace("\\", "/")).lstrip("/")


def _edits(check: EditApplies | EditedPython, cell: Cell) -> list[Made]:
    """The calls of the edit tool whose ``path_arg`` names ``file``, in order."""
    target = norm_path(check.file)
    found = []
    for m in cell.calls_of(check.tool):
        args = m.call.arguments
        if not isinstance(args, dict) or not m.call.arguments_valid_json:
            continue
        path = args.get(check.path_arg)
        if isinstance(path, str) and norm_path(path) == target:
            found.append(m)
    return found


def _occurrences(text: str, old: str, cap: int = 100) -> int:
    """How often ``old`` occurs in ``text``, overlapping ones too (counted up to ``cap``)."""
    n, at = 0, text.find(old)
    while at >= 0 and n < cap:
        n += 1
        at = text.find(old, at + 1)
    return n


def apply_edit(text: str, m: Made, check: EditApplies | EditedPython) -> tuple[str, str]:
    """``(new text, "")`` after the edit call ``m``, or ``(text, why)`` where it does not
    apply: its old text missing or empty, its new text not a string, the old text not found
    or found more than once (overlaps count)."""
    args = m.call.arguments
    old, new = args.get(check.old_arg), args.get(check.new_arg)
    if not isinstance(old, str) or not old:
        return text, f"{m.label}: {check.old_arg} missing or empty"
    if not isinstance(new, str):
        return text, f"{m.label}: {check.new_arg} is not a string: {show(new)}"
    n = _occurrences(text, old)
    if n != 1:
        where = "not found" if n == 0 else f"found {n} times"
        return text, f"{m.label}: {check.old_arg} text {where} in {check.file}"
    return text.replace(old, new, 1), ""


def check_edit_applies(check: EditApplies, cell: Cell) -> Result:
    """At least one call of ``tool`` edits ``file`` (its ``path_arg``, compared by
    :func:`norm_path`), and applied in order to the fixture, each one's ``old_arg`` text occurs
    exactly once in the file as the earlier edits left it (:func:`apply_edit`)."""
    edits = _edits(check, cell)
    if not edits:
        return fail(f"no {check.tool} call on {check.file}")
    text = cell.pack.world.files[check.file]
    for m in edits:
        text, why = apply_edit(text, m, check)
        if why:
            return fail(why)
    return PASS


def check_edited_python(check: EditedPython, cell: Cell) -> Result:
    """``file`` as a real edit tool would have left it (the edits of ``tool`` on it applied
    in order, one that does not apply refused and skipped) passes the hidden asserts in the
    sandbox: every fixture file written under its path, the edited one in its place, and the
    asserts run from :data:`CHECK_SCRIPT` with the file's folder first on ``sys.path`` (so
    ``import <module>`` finds it). No edit that applies: fail."""
    edits = _edits(check, cell)
    if not edits:
        return fail(f"no {check.tool} call on {check.file}")
    text = cell.pack.world.files[check.file]
    refused = []
    for m in edits:
        text, why = apply_edit(text, m, check)
        if why:
            refused.append(why)
    if len(refused) == len(edits):
        return fail(f"no edit applies: {refused[0]}")
    if check.asserts is None:
        return unmeasured("the check has no asserts")
    files = {}
    for name, body in cell.pack.world.files.items():
        path = norm_path(name)
        if path not in (".", CHECK_SCRIPT) and ".." not in path.split("/"):
            files[path] = body
    target = norm_path(check.file)
    if target not in files:
        return unmeasured(f"{check.file} cannot be written into the sandbox")
    files[target] = text
    folder = posixpath.dirname(target) or "."
    prelude = f"import os, sys\nsys.path.insert(0, os.path.abspath({folder!r}))\n\n"
    files[CHECK_SCRIPT] = prelude + check.asserts + "\n"
    return _run([*python_argv(), CHECK_SCRIPT], files, cell, last=True)
