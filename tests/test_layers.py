"""The package's floors (docs/architecture.md): a package imports only from floors below it,
never a sibling on its own floor, and no module takes part in an import circle.

Imports are read with :mod:`ast` from the source, the lazy ones inside functions and
``TYPE_CHECKING`` blocks included (a circle through a lazy import is still a circle).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import touchstone_ray

PACKAGE = Path(touchstone_ray.__file__).parent

FLOORS: list[set[str]] = [
    {"errors", "version", "descriptive"},
    {"records", "lang", "storage", "yamlio", "sim"},
    {"tool_records"},
    {"engines", "answers"},
    {"endpoint", "pack", "toolpack"},
    {"config", "checks"},
    {"bundle", "doc"},
    {"telemetry"},
    {"fleet"},
    {"scoring"},
    {"eval", "perf", "judging", "tools"},
    {"report"},
    {"queue"},
    {"ui", "demo", "sim_cli"},
    {"cli"},
]
"""Bottom first. ``sim`` sits on the ground floor because the fleet config names simulated
models (:class:`~touchstone_ray.sim.SimConfig`); ``scoring`` sits below the stages because
``judge`` and ``perf`` write their summaries (``scorecard.json``, ``summary.json``) at the end of
a run; ``answers`` (the per-answer flags) sits just above the records and the language
tables, so every stage from ``fleet`` up can flag an answer."""

FLOOR_OF = {name: i for i, floor in enumerate(FLOORS) for name in floor}


def module_name(path: Path) -> str:
    """``touchstone_ray.fleet.dispatch`` for ``<package>/fleet/dispatch.py``."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The project modules ``name`` imports (``from pkg import submodule`` names the module)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def top(name: str) -> str:
    """The top-level package or module of ``touchstone_ray.<top>.…``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def circles() -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_every_top_level_package_has_a_floor() -> None:
    tops = {top(name) for name in MODULES} - {""}
    assert sorted(tops - FLOOR_OF.keys()) == []


def test_no_import_circle() -> None:
    assert circles() == []


def test_every_import_goes_down_a_floor() -> None:
    wrong = defaultdict(set)
    for name, targets in GRAPH.items():
        here = top(name)
        for target in targets:
            there = top(target)
            if not here or here == there:
                continue
            if FLOOR_OF[there] >= FLOOR_OF[here]:
                wrong[name].add(target)
    assert dict(wrong) == {}


def test_the_lower_floors_import_no_stage() -> None:
    stages = {"eval", "perf", "judging", "report", "ui", "cli", "demo"}
    lower = {"fleet", "scoring", "doc", "bundle", "telemetry"}
    found = {
        name: sorted(t for t in targets if top(t) in stages)
        for name, targets in GRAPH.items()
        if top(name) in lower
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_the_walker_sees_lazy_imports_and_circles() -> None:
    assert "touchstone_ray.judging.runner" in GRAPH["touchstone_ray.judging"]
    GRAPH["touchstone_ray.errors"].add("touchstone_ray.records")
    try:
        assert ["touchstone_ray.errors", "touchstone_ray.records"] in circles()
    finally:
        GRAPH["touchstone_ray.errors"].discard("touchstone_ray.records")
