"""The check types of a tools item (SPEC §3b) as data: what each one asks of a finished cell.

Each is a pydantic model discriminated by ``type``; :mod:`touchstone_ray.checks` runs them.
Paths into a call's arguments are JSON paths of the form ``$.a.b[0]`` (``$`` = the arguments
object); the loader refuses one that the tool's schema cannot match.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    return pattern


Pattern = Annotated[str, AfterValidator(_compiles)]
"""A Python regular expression, refused at load where it does not compile."""


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    id: str = Field(min_length=1)
    """Unique within the item."""


class ExpectedCall(BaseModel):
    """One call a ``calls`` check expects: the tool's name and, optionally, its arguments."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    name: str = Field(min_length=1)
    """The tool's name."""
    args: dict[str, list[Any]] | None = None
    """Per argument, the values accepted (BFCL's possible answers: ``""`` in the list means the
    argument may be left out); ``None``: arguments not compared. An argument not named here
    must not be given, unless the schema makes it optional and ``args`` is ``None``."""


class Calls(_Check):
    """The model's calls: how many, which tools, in which order, in one turn or over all."""

    type: Literal["calls"] = "calls"
    expect: list[str | ExpectedCall]
    """The calls expected (a name, or an :class:`ExpectedCall`); ``[]`` with ``allow_extra``
    false means no call at all."""
    ordered: bool = False
    """The calls must come in this order."""
    turn: int | None = Field(default=None, ge=1)
    """Only this turn's calls (1 = the first answer); ``None``: every turn's calls together."""
    allow_extra: bool = False
    """Calls beyond the expected ones are allowed."""
    compare: Literal["json", "bfcl"] = "json"
    """How argument values meet the accepted ones: ``json``, JSON equality (``1`` = ``1.0``,
    ``true`` ≠ ``1`` ≠ ``"1"``); ``bfcl``, as BFCL's AST checker: strings (also inside arrays
    and objects) compared lower-cased without spaces and ``,./-_*^``, ``'`` read as ``"``; an
    object against accepted objects whose values are lists of accepted values (``""``: may be
    left out); an array of objects against accepted arrays of such objects, one by one."""


class SchemaValid(_Check):
    """Every call (of ``tool``) names an offered tool and its arguments validate against that
    tool's JSON Schema (``jsonschema``, the schema's own draft)."""

    type: Literal["schema_valid"] = "schema_valid"
    tool: str | None = None
    """Only calls of this tool; ``None``: every call."""


class NoEmptyArgs(_Check):
    """No call (of ``tool``) has empty arguments (``{}``, ``""``, ``null``) where its tool
    has required parameters."""

    type: Literal["no_empty_args"] = "no_empty_args"
    tool: str | None = None
    """Only calls of this tool; ``None``: every call."""


class ArgEquals(_Check):
    """A call of ``tool`` has ``value`` (or one of ``one_of``) at ``path`` in its arguments."""

    type: Literal["arg_equals"] = "arg_equals"
    tool: str
    """The tool whose calls are looked at."""
    path: str = Field(pattern=r"^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])+$")
    """JSON path into the arguments, ``$.a.b[0]``."""
    value: Any = None
    """The value expected (JSON equality: ``1`` ≠ ``"1"``)."""
    one_of: list[Any] | None = None
    """Values accepted instead of ``value``."""
    every: bool = False
    """Every call of ``tool`` must match, not just one."""


class ArgRegex(_Check):
    """A call of ``tool`` has a string at ``path`` that ``pattern`` matches (``re.search``)."""

    type: Literal["arg_regex"] = "arg_regex"
    tool: str
    """The tool whose calls are looked at."""
    path: str = Field(pattern=r"^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])+$")
    """JSON path into the arguments, ``$.a.b[0]``."""
    pattern: Pattern
    """A Python regular expression."""
    every: bool = False
    """Every call of ``tool`` must match, not just one."""


class NoCall(_Check):
    """The model made no tool call in any turn (the right answer needs none)."""

    type: Literal["no_call"] = "no_call"


class FinishReason(_Check):
    """A turn's ``finish_reason`` is one of ``expect``."""

    type: Literal["finish_reason"] = "finish_reason"
    expect: list[str] = Field(min_length=1)
    """Accepted finish reasons (``stop``, ``tool_calls``, ``length``)."""
    turn: int | None = Field(default=None, ge=1)
    """The turn looked at (1 = first); ``None``: the last."""


class AnswerRegex(_Check):
    """The final answer text (the last turn's content) matches ``pattern`` (``re.search``)."""

    type: Literal["answer_regex"] = "answer_regex"
    pattern: Pattern
    """A Python regular expression."""
    ignore_case: bool = False
    """Match case-insensitively."""


class AnswerContains(_Check):
    """The final answer text contains every (or any) of ``values``."""

    type: Literal["answer_contains"] = "answer_contains"
    values: list[str] = Field(min_length=1)
    """Substrings looked for."""
    any: bool = False
    """One of them is enough."""
    ignore_case: bool = True
    """Compare case-insensitively."""


class JsonEquals(_Check):
    """JSON taken from the final answer (the whole text, or its first fenced block) or from a
    call's argument equals ``value``."""

    type: Literal["json_equals"] = "json_equals"
    value: Any
    """The JSON value expected."""
    tool: str | None = None
    """Take it from this tool's (first) call at ``path`` instead of the answer."""
    path: str | None = Field(default=None, pattern=r"^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*$")
    """JSON path into that call's arguments; a string there is parsed as JSON."""


class _CodeCheck(_Check):
    asserts: str | None = None
    """The hidden asserts (code run after the model's code)."""
    asserts_file: str | None = None
    """A file holding them, relative to the pack file (refused at load when missing)."""
    tool: str | None = None
    """Take the code from this tool's (first) call at ``path``; ``None``: from the final
    answer (its first fenced code block, else the whole text)."""
    path: str | None = Field(default=None, pattern=r"^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])+$")
    """JSON path of the code in that call's arguments."""


class PythonAsserts(_CodeCheck):
    """The model's Python code, followed by the hidden asserts, exits 0 in the sandbox."""

    type: Literal["python_asserts"] = "python_asserts"


class NodeAsserts(_CodeCheck):
    """The model's JavaScript, followed by the hidden asserts, exits 0 under ``node`` in the
    sandbox (``not_measured`` where ``node`` is missing)."""

    type: Literal["node_asserts"] = "node_asserts"


class _EditCheck(_Check):
    tool: str
    """The edit tool (its calls carry the file, the old and the new text)."""
    file: str
    """The fixture file (a key of ``world.files``) the edit must apply to."""
    path_arg: str = "path"
    """The argument naming the file."""
    old_arg: str = "old"
    """The argument with the text to replace (must occur exactly once)."""
    new_arg: str = "new"
    """The argument with the replacement."""


class EditApplies(_EditCheck):
    """Every edit call on ``file`` has an ``old`` text that occurs exactly once in the file as
    it stands (edits applied in order), and at least one such call was made."""

    type: Literal["edit_applies"] = "edit_applies"


class EditedPython(_EditCheck):
    """``file`` with the model's edits applied passes the hidden asserts (Python, sandbox)."""

    type: Literal["edited_python"] = "edited_python"
    asserts: str | None = None
    """The hidden asserts; the edited file is importable as its module name."""
    asserts_file: str | None = None
    """A file holding them, relative to the pack file."""


Check = Annotated[
    Calls
    | SchemaValid
    | NoEmptyArgs
    | ArgEquals
    | ArgRegex
    | NoCall
    | FinishReason
    | AnswerRegex
    | AnswerContains
    | JsonEquals
    | PythonAsserts
    | NodeAsserts
    | EditApplies
    | EditedPython,
    Field(discriminator="type"),
]
"""Any check of a tools item, chosen by its ``type``."""

CHECK_TYPES: tuple[str, ...] = (
    "calls",
    "schema_valid",
    "no_empty_args",
    "arg_equals",
    "arg_regex",
    "no_call",
    "finish_reason",
    "answer_regex",
    "answer_contains",
    "json_equals",
    "python_asserts",
    "node_asserts",
    "edit_applies",
    "edited_python",
)
"""The check types, in SPEC §3b order."""


def check_tool(check: Any) -> str | None:
    """The tool a check names (``None`` where it names none)."""
    tool = getattr(check, "tool", None)
    return tool if isinstance(tool, str) else None


def code_source(check: PythonAsserts | NodeAsserts | EditedPython) -> dict[str, Any]:
    """The check's code-location fields (for error messages and fingerprints)."""
    return {k: getattr(check, k, None) for k in ("tool", "path")}
