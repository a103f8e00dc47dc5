"""BFCL v4 categories as tools packs (``--pack bfcl:<category>``).

The Berkeley Function Calling Leaderboard ships its data in the ``bfcl-eval`` package
(``bfcl_eval/data``, Apache-2.0): per category a JSON-lines file of questions (``id``,
``question`` — turns of chat messages — and ``function``, the function docs offered) and, beside
it in ``possible_answer/``, the accepted calls (``ground_truth``: a list of ``{name: {param:
[accepted values]}}``). Only these data files are read, so the package is installed without
its dependencies (``pip install --no-deps bfcl-eval``; they pin an old numpy).

Mapping (one item per question, BFCL's id and file order, so ``--limit N`` takes BFCL's first
N):

* **Messages.** Every supported category asks one turn: a user message, optionally after a
  system message. They become the item's ``prompt`` and ``system``. A question with any other
  shape (several turns, or assistant messages as history: ``live_irrelevance``) is refused; such
  categories are not offered.
* **Tools.** The function docs as BFCL's own OpenAI handler sends them
  (``model_handler/utils.py: convert_to_tool`` with ``GORILLA_TO_OPENAPI``, after
  ``utils.py: add_language_specific_hint_to_function_doc``): the description gets
  ``" Note that the provided function is in Python 3 syntax."``, a ``.`` in a name becomes
  ``_`` (OpenAI's name pattern), the parameters' type becomes ``object``, each property's type
  is mapped (``dict→object``, ``float→number`` with ``format: float`` and ``" This is a float
  type value."`` appended to its description, ``tuple→array``, ``any→string``, an unknown or
  missing type → ``string``), into nested ``properties`` and one or two levels of ``items``.
  Every other key (``required``, ``enum``, ``default``, BFCL's ``optional``) is kept as BFCL
  sends it. The same name has different docs in different questions: the definition most
  questions offer goes into the pack's ``tools``, any other one into the item's own
  (:attr:`~touchstone_ray.toolpack.ToolItem.own_tools`).
* **Checks.** A category with possible answers gets one ``calls`` check with ``compare: bfcl``
  (BFCL's AST checker: exactly these calls in any order, each argument one of the accepted
  values, ``""`` = may be left out), one :class:`ExpectedCall` per ground-truth call with the
  renamed tool name and the accepted values as given. ``irrelevance`` gets ``no_call`` with
  ``compare: bfcl``. No ``schema_valid``: BFCL does not validate against the schema, and an extra
  check would make a pass rate differ from BFCL's.
* Every item has ``max_turns: 1`` (BFCL scores the first answer) and ``tool_choice: auto``.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.resources
import json
from pathlib import Path
from typing import Any

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack._model import ToolsPack, tools_pack_from_data

__all__ = [
    "CATEGORIES",
    "GORILLA_TO_OPENAPI",
    "bfcl_data_dir",
    "load_bfcl",
    "openai_tool",
    "tool_name",
]

CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""The BFCL v4 categories offered as packs: the single-turn Python ones whose questions are a
user message (after an optional system message) and whose answers the AST checker scores, and
``irrelevance``."""

NO_ANSWER: frozenset[str] = frozenset({"irrelevance"})
"""Categories scored by "no call" instead of possible answers."""

INSTALL_HINT = "pip install --no-deps bfcl-eval"
"""How to install the package the data comes from (its own dependencies are not needed)."""

PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
"""Appended to every function description by BFCL before it is sent (Python categories)."""

GORILLA_TO_OPENAPI: dict[str, str] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}
"""BFCL's type names → JSON Schema types (``bfcl_eval/constants/type_mappings.py``)."""


def bfcl_data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl-eval`` package; raises :class:`PackError`
    (one line saying how to install it) when it is not installed."""
    try:
        root = importlib.resources.files("bfcl_eval")
    except ModuleNotFoundError:
        raise PackError(
            f"bfcl: the bfcl-eval package is not installed (install it with: {INSTALL_HINT})"
        ) from None
    return Path(str(root)) / "data"


def _version() -> str:
    try:
        return importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _read_lines(path: Path, source: str) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PackError(f"{source}: cannot read {path} ({exc.strerror or exc})") from None
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PackError(f"{source}: {path}: line {n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise PackError(f"{source}: {path}: line {n}: not an object (got {row!r:.60})")
        rows.append(row)
    return rows


def _cast_properties(properties: dict[str, Any]) -> dict[str, Any]:
    """BFCL's ``_cast_to_openai_type`` with ``GORILLA_TO_OPENAPI``, in place (on a copy)."""
    for value in properties.values():
        var_type = value.get("type")
        if var_type is None:
            value["type"] = "string"
        else:
            if var_type == "float":
                value["format"] = "float"
                value["description"] = value.get("description", "") + " This is a float type value."
            value["type"] = GORILLA_TO_OPENAPI.get(var_type, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_properties(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI.get(items.get("type", ""), "string")
                if items["type"] == "array" and "items" in items:
                    inner = items["items"]
                    inner["type"] = GORILLA_TO_OPENAPI.get(inner.get("type", ""), "string")
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_properties(items["properties"])
    return properties


def openai_tool(function: dict[str, Any], hint: str = PYTHON_HINT) -> dict[str, Any]:
    """One BFCL function doc as BFCL's OpenAI handler sends it: ``{name, description,
    parameters}`` with ``hint`` appended to the description, ``.`` → ``_`` in the name and the
    parameter types mapped to JSON Schema (see the module docstring). ``function`` is not
    changed."""
    item = copy.deepcopy(function)
    item["description"] = item.get("description", "") + hint
    item["name"] = str(item["name"]).replace(".", "_")
    params = item.setdefault("parameters", {})
    params["type"] = "object"
    params["properties"] = _cast_properties(params.get("properties", {}))
    return item


def tool_name(name: str) -> str:
    """The name a BFCL function is offered under (``.`` → ``_``, as BFCL does for OpenAI)."""
    return name.replace(".", "_")


def _messages(question: dict[str, Any], source: str) -> tuple[str | None, str]:
    """``(system, prompt)`` of a single-turn question ``[[system?, user]]``."""
    turns = question.get("question")
    at = f"{source}: {question.get('id')}"
    if not isinstance(turns, list) or len(turns) != 1 or not isinstance(turns[0], list):
        raise PackError(f"{at}: expected one turn of messages (got {turns!r:.80})")
    roles = [m.get("role") if isinstance(m, dict) else None for m in turns[0]]
    if roles == ["user"]:
        return None, str(turns[0][0]["content"])
    if roles == ["system", "user"]:
        return str(turns[0][0]["content"]), str(turns[0][1]["content"])
    raise PackError(f"{at}: expected a user message after an optional system message (got {roles})")


def _shared_tools(tools_per_item: list[list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per tool name, the definition most items of the category offer (the first seen on a
    tie): it goes into the pack's ``tools``, every other variant into its item's
    ``own_tools`` (keeps the pack and the bundle's copy of it small: ``live_multiple`` offers
    4178 tools in 1073 distinct definitions)."""
    counts: dict[str, dict[str, int]] = {}
    first: dict[str, dict[str, Any]] = {}
    for tools in tools_per_item:
        for tool in tools:
            key = json.dumps(tool, sort_keys=True)
            variants = counts.setdefault(tool["name"], {})
            variants[key] = variants.get(key, 0) + 1
            first.setdefault(key, tool)
    return {name: first[max(v, key=lambda k: v[k])] for name, v in counts.items()}


def _item(
    question: dict[str, Any],
    tools: list[dict[str, Any]],
    shared: dict[str, dict[str, Any]],
    answer: dict[str, Any] | None,
    source: str,
) -> dict[str, Any]:
    system, prompt = _messages(question, source)
    check: dict[str, Any]
    if answer is None:
        check = {"id": "no_call", "type": "no_call", "compare": "bfcl"}
    else:
        expect = []
        for call in answer.get("ground_truth", []):
            ((name, args),) = call.items()
            expect.append({"name": tool_name(name), "args": args})
        check = {"id": "calls", "type": "calls", "expect": expect, "compare": "bfcl"}
    return {
        "id": question["id"],
        "prompt": prompt,
        "system": system,
        "tools": [t["name"] for t in tools],
        "own_tools": [t for t in tools if shared[t["name"]] != t],
        "max_turns": 1,
        "checks": [check],
    }


def load_bfcl(category: str) -> ToolsPack:
    """The BFCL v4 category ``category`` (one of :data:`CATEGORIES`) as a tools pack with id
    ``bfcl-<category>``, read from the installed ``bfcl-eval`` package (module docstring:
    the mapping).

    Raises :class:`PackError` with one line for an unknown category (naming the known ones),
    a missing package (saying how to install it), or a data file that does not parse.
    """
    source = f"bfcl:{category}"
    if category not in CATEGORIES:
        raise PackError(
            f"{source}: unknown BFCL category {category!r} (known: {', '.join(CATEGORIES)})"
        )
    data = bfcl_data_dir()
    questions = _read_lines(data / f"BFCL_v4_{category}.json", source)
    answers: dict[str, dict[str, Any]] = {}
    if category not in NO_ANSWER:
        for row in _read_lines(data / "possible_answer" / f"BFCL_v4_{category}.json", source):
            answers[str(row.get("id"))] = row
    tools_per_item = [[openai_tool(f) for f in q.get("function", [])] for q in questions]
    shared = _shared_tools(tools_per_item)
    items = []
    for question, tools in zip(questions, tools_per_item, strict=True):
        answer = None
        if category not in NO_ANSWER:
            answer = answers.get(str(question.get("id")))
            if answer is None:
                raise PackError(f"{source}: {question.get('id')}: no possible answer")
        items.append(_item(question, tools, shared, answer, source))
    version = _version()
    pack = {
        "kind": "tools",
        "id": f"bfcl-{category}",
        "title": f"BFCL v4 {category}",
        "description": (
            f"BFCL v4 category {category}, {len(items)} questions, from bfcl-eval {version} "
            "(Apache-2.0), scored by BFCL's AST rules"
        ),
        "tools": list(shared.values()),
        "items": items,
    }
    return tools_pack_from_data(pack, source)
