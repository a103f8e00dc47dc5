"""The tools pack model and its strict loader (SPEC §3b)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack._checks import Check, check_tool
from touchstone_ray.yamlio import RuleError, validate_document

__all__ = [
    "CannedResult",
    "ToolItem",
    "ToolSpec",
    "ToolsPack",
    "World",
    "dump_tools_pack",
    "tools_pack_from_data",
]

_PACK_ID = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class ToolSpec(_Strict):
    """One tool offered to the model (OpenAI ``tools[].function``)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
    """The tool's name, unique in the pack."""
    description: str = ""
    """What the tool does (sent to the model)."""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    """The arguments' JSON Schema (an object schema)."""

    def as_openai(self) -> dict[str, Any]:
        """``{"type": "function", "function": {name, description, parameters}}``."""
        return {"type": "function", "function": self.model_dump(mode="json")}


class CannedResult(_Strict):
    """A fixed reply of the world to calls of ``tool`` whose arguments contain ``match``."""

    tool: str
    """The tool's name."""
    match: dict[str, Any] = {}
    """Arguments that must equal these values (others are ignored); ``{}`` matches any call."""
    reply: str
    """The text sent back as the tool's result."""


class World(_Strict):
    """The stand-in world the agent loop answers calls from."""

    files: dict[str, str] = {}
    """Fixture files: path → text (``read`` returns the text, ``ls``/``find`` list paths)."""
    results: tuple[CannedResult, ...] = ()
    """Canned replies, the first match wins."""
    default: str = "ok"
    """The reply to any other call."""


class ToolSampling(_Strict):
    """Sampling parameters sent with every request; ``null`` leaves the field out."""

    temperature: float | None = Field(default=0.0, ge=0.0)
    """Sampling temperature (default 0.0)."""
    seed: int | None = 42
    """Sampling seed (default 42)."""


class ToolItem(_Strict):
    """One task: a prompt, the tools offered, and the checks of what the model did."""

    id: str = Field(min_length=1)
    """Unique in the pack (BFCL's own id for ``bfcl:`` packs)."""
    title: str = ""
    """Short title."""
    prompt: str = Field(min_length=1)
    """The user message."""
    system: str | None = None
    """The system prompt; ``None``: none sent."""
    tools: tuple[str, ...] = ()
    """Names of the tools offered in this item: the item's ``own_tools`` or else the pack's."""
    own_tools: tuple[ToolSpec, ...] = ()
    """Tools defined for this item only (a BFCL question's own function docs: one name may
    have a different schema in each question); each must be named in ``tools`` too, and wins
    over a pack tool of the same name."""
    tool_choice: str = "auto"
    """``auto`` | ``none`` | ``required`` | an offered tool's name (forces that tool)."""
    max_turns: int = Field(default=5, ge=1, le=50)
    """Most model answers in the loop."""
    repeats: int = Field(default=1, ge=1)
    """Cells per model."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Completion token cap per turn (tokens); ``None``: none sent."""
    context_files: tuple[str, ...] = ()
    """Fixture files put into the conversation as earlier ``read`` results (long context)."""
    checks: tuple[Check, ...] = Field(min_length=1)
    """What is checked, in order; the cell passes when every measured check is ok."""


class ToolsPack(_Strict):
    """A validated tools pack (SPEC §3b). Construct with :func:`load_tools_pack`."""

    kind: Literal["tools"]
    """Always ``tools`` (a quality pack has no ``kind``)."""
    id: str = Field(pattern=_PACK_ID)
    """Part of the bundle folder name."""
    title: str
    """Display title."""
    version: int = 1
    """Stored in every record."""
    description: str = ""
    """Free text."""
    language: Literal["de", "en"] = "en"
    """Language of the report."""
    sampling: ToolSampling = ToolSampling()
    """Sampling parameters."""
    tools: tuple[ToolSpec, ...] = ()
    """Every tool any item offers."""
    world: World = World()
    """Fixture files and canned results."""
    items: tuple[ToolItem, ...] = Field(min_length=1)
    """The tasks, in order (``--limit N`` takes the first N)."""

    @model_validator(mode="after")
    def _cross_field_rules(self) -> ToolsPack:
        tools = {t.name: t for t in self.tools}
        _unique([(f"tools[{i}].name", t.name) for i, t in enumerate(self.tools)], "tool")
        _unique([(f"items[{i}].id", it.id) for i, it in enumerate(self.items)], "item")
        for i, canned in enumerate(self.world.results):
            if canned.tool not in tools:
                raise RuleError(f"world.results[{i}].tool", "unknown tool", canned.tool)
        for i, item in enumerate(self.items):
            at = f"items[{i}]"
            own = {t.name: t for t in item.own_tools}
            _unique(
                [(f"{at}.own_tools[{j}].name", t.name) for j, t in enumerate(item.own_tools)],
                "tool",
            )
            for j, name in enumerate(item.tools):
                if name not in tools and name not in own:
                    raise RuleError(f"{at}.tools[{j}]", "unknown tool", name)
            for j, spec in enumerate(item.own_tools):
                if spec.name not in item.tools:
                    raise RuleError(f"{at}.own_tools[{j}].name", "not named in tools", spec.name)
            if item.tool_choice not in ("auto", "none", "required", *item.tools):
                raise RuleError(
                    f"{at}.tool_choice",
                    "expected auto, none, required or an offered tool's name",
                    item.tool_choice,
                )
            for j, path in enumerate(item.context_files):
                if path not in self.world.files:
                    raise RuleError(f"{at}.context_files[{j}]", "not a file of world.files", path)
            _unique([(f"{at}.checks[{j}].id", c.id) for j, c in enumerate(item.checks)], "check")
            for j, check in enumerate(item.checks):
                _check_rules(check, f"{at}.checks[{j}]", item, {**tools, **own}, self.world)
        return self

    def item(self, item_id: str) -> ToolItem:
        """The item with ``item_id``; raises ``KeyError`` if there is none."""
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(item_id)

    def tool(self, name: str, item: ToolItem | None = None) -> ToolSpec:
        """The tool named ``name`` as ``item`` offers it (its ``own_tools`` first), else the
        pack's; raises ``KeyError`` if there is none."""
        if item is not None:
            for tool in item.own_tools:
                if tool.name == name:
                    return tool
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    def offered(self, item: ToolItem) -> list[ToolSpec]:
        """The tools ``item`` offers, in its order."""
        return [self.tool(name, item) for name in item.tools]

    def cells(self) -> Iterator[tuple[ToolItem, int]]:
        """``(item, repeat)`` in pack order, repeats from 1."""
        for item in self.items:
            for repeat in range(1, item.repeats + 1):
                yield item, repeat

    @property
    def n_cells(self) -> int:
        """Cells one model runs: Σ repeats."""
        return sum(item.repeats for item in self.items)

    def summary(self) -> str:
        """``<id> v<version>: <N> items, <C> cells/model, <T> tools, <K> checks`` (``checks``:
        over every item, each counted once however many repeats)."""
        n_checks = sum(len(item.checks) for item in self.items)
        return (
            f"{self.id} v{self.version}: {len(self.items)} items, {self.n_cells} cells/model, "
            f"{len(self.tools)} tools, {n_checks} checks"
        )

    def fingerprint(self) -> str:
        """Hex sha256 of the whole pack, canonical JSON (``pack_fingerprint``)."""
        return _sha256(self.model_dump(mode="json"))

    def checks_fingerprint(self) -> str:
        """Hex sha256 of every item's id, repeats and checks (asserts inlined), canonical JSON
        (``checks_fingerprint``): two bundles compare only where it is equal."""
        return _sha256(
            [
                {"id": it.id, "checks": [c.model_dump(mode="json") for c in it.checks]}
                for it in self.items
            ]
        )


def _sha256(data: object) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _unique(items: list[tuple[str, str]], what: str) -> None:
    seen: dict[str, str] = {}
    for path, item_id in items:
        if item_id in seen:
            raise RuleError(path, f"duplicate {what} (first at {seen[item_id]})", item_id)
        seen[item_id] = path


def schema_at(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The sub-schema ``path`` (``$.a.b[0]``) points at in an object ``schema``, ``{}`` where
    the schema does not say (no ``properties``/``items`` to follow), ``None`` where it cannot
    match (a property the schema does not have while it forbids others, or an index into a
    non-array)."""
    node: dict[str, Any] = schema
    for step in _PATH_STEP.finditer(path):
        key, index = step.group(1), step.group(2)
        if key is not None:
            props = node.get("properties")
            if not isinstance(props, dict):
                if node.get("type") not in (None, "object", "dict"):
                    return None
                return {}
            if key not in props:
                return None
            node = props[key] if isinstance(props[key], dict) else {}
        elif index is not None:
            if node.get("type") not in (None, "array", "tuple"):
                return None
            items = node.get("items")
            node = items if isinstance(items, dict) else {}
    return node


def _check_rules(
    check: Any, at: str, item: ToolItem, tools: dict[str, ToolSpec], world: World
) -> None:
    tool = check_tool(check)
    if tool is not None and tool not in item.tools:
        raise RuleError(f"{at}.tool", f"tool not offered by item {item.id}", tool)
    path = getattr(check, "path", None)
    if (
        tool is not None
        and isinstance(path, str)
        and path != "$"
        and schema_at(tools[tool].parameters, path) is None
    ):
        raise RuleError(f"{at}.path", f"cannot match the parameters of tool {tool}", path)
    if check.type == "calls":
        for k, expected in enumerate(check.expect):
            name = expected if isinstance(expected, str) else expected.name
            if name not in item.tools:
                raise RuleError(f"{at}.expect[{k}]", f"tool not offered by item {item.id}", name)
    if check.type in ("edit_applies", "edited_python") and check.file not in world.files:
        raise RuleError(f"{at}.file", "not a file of world.files", check.file)
    if check.type in ("python_asserts", "node_asserts", "edited_python"):
        if check.asserts is None and check.asserts_file is None:
            raise RuleError(f"{at}.asserts", "asserts or asserts_file is required", None)
        if check.type != "edited_python" and (check.tool is None) != (check.path is None):
            raise RuleError(f"{at}.path", "tool and path go together", check.path)


def _inline_asserts(pack: ToolsPack, base: Path, source: str) -> ToolsPack:
    """``pack`` with each ``asserts_file`` read into ``asserts`` (relative to ``base``)."""
    items = []
    for i, item in enumerate(pack.items):
        checks = []
        for j, check in enumerate(item.checks):
            name = getattr(check, "asserts_file", None)
            if name is not None:
                file = base / name
                try:
                    text = file.read_text(encoding="utf-8")
                except OSError as exc:
                    raise PackError(
                        f"{source}: items[{i}].checks[{j}].asserts_file: cannot read "
                        f"{file} ({exc.strerror or exc}) (got {name!r})"
                    ) from None
                check = check.model_copy(update={"asserts": text, "asserts_file": None})
            checks.append(check)
        items.append(item.model_copy(update={"checks": tuple(checks)}))
    return pack.model_copy(update={"items": tuple(items)})


def tools_pack_from_data(data: object, source: str, base: Path | None = None) -> ToolsPack:
    """Validate already-parsed tools-pack data; ``source`` prefixes the error line, ``base``
    is where ``asserts_file`` paths start (``None``: the current directory).

    Raises :class:`PackError` ``"<source>: <yaml path>: <message> (got <value>)"``.
    """
    pack = validate_document(ToolsPack, data, source, PackError)
    return _inline_asserts(pack, base or Path("."), source)


def dump_tools_pack(pack: ToolsPack) -> str:
    """The pack as YAML that :func:`load_tools_pack` reads back to an equal pack (asserts
    inlined, so the bundle's copy needs no other file; ``kind``, each check's ``type`` and
    every value that differs from its default, so the largest BFCL category,
    ``live_multiple``, stays under the reader's YAML node cap)."""
    data = pack.model_dump(mode="json", exclude_defaults=True)
    for item, dumped in zip(pack.items, data["items"], strict=True):
        dumped["checks"] = [
            {"type": check.type, **kept}
            for check, kept in zip(item.checks, dumped["checks"], strict=True)
        ]
    return yaml.safe_dump({"kind": "tools", **data}, sort_keys=False, allow_unicode=False)
