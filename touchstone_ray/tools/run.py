"""``touchstone-ray tools``: load, plan, connect, preflight, run the cells, check, finalize.

The public entry point is :func:`run_tools`; the CLI only parses flags and prints.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from touchstone_ray.bundle import ShardFolder
from touchstone_ray.config import FleetConfig, load_config
from touchstone_ray.descriptive import percentile
from touchstone_ray.errors import UsageError, writes_into
from touchstone_ray.scoring.tools import write_tools_summary
from touchstone_ray.tool_records import tools_key
from touchstone_ray.toolpack import ToolItem, ToolsPack, load_tools_pack
from touchstone_ray.tools.bundle import ToolsBundle, create_tools_bundle, open_tools_bundle
from touchstone_ray.tools.lanes import ModelCells, ToolsFleet
from touchstone_ray.tools.writer import CheckPool, ToolsWriter

__all__ = ["ToolsOptions", "ToolsOutcome", "plan_cells", "run_tools", "select_items"]


@dataclass
class ToolsOptions:
    """The flags of ``touchstone-ray tools`` (SPEC §6)."""

    pack: str
    """A tools pack YAML path or ``bfcl:<category>``."""
    config: Path
    address: str | None = None
    out: Path | None = None
    resume: Path | None = None
    models: list[str] | None = None
    items: list[str] | None = None
    """``--items``: only these item ids."""
    limit: int | None = None
    """``--limit``: the first N items of the pack."""


@dataclass
class ToolsOutcome:
    """What a run did; ``exit_code`` 1 while any planned cell has no ok record."""

    bundle: Path | None
    n_ok: int = 0
    n_failed: int = 0
    n_passed: int = 0
    n_reused: int = 0
    n_missing: int = 0
    """Planned cells without an ok record after the run (``--resume`` runs them)."""
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)
    harness_p50_s: float | None = None
    """Median time between a reply's end and the next turn's request, over every turn after a
    cell's first (s; the engine's own stamps)."""
    harness_p99_s: float | None = None
    """p99 of that time (s)."""
    harness_n: int = 0
    """Turns those figures come from."""

    @property
    def exit_code(self) -> int:
        return 1 if self.n_missing else 0


def select_items(pack: ToolsPack, limit: int | None, items: list[str] | None) -> list[ToolItem]:
    """The items this run asks: ``--items`` (in pack order; an unknown id raises
    :class:`UsageError` naming it), or the first ``--limit`` N, or all."""
    if limit is not None and items:
        raise UsageError("--limit and --items are exclusive: give one")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit: must be ≥ 1, not {limit}")
    if items:
        known = {it.id for it in pack.items}
        for item_id in items:
            if item_id not in known:
                raise UsageError(f"--items: unknown item {item_id!r} in pack {pack.id}")
        return [it for it in pack.items if it.id in items]
    return list(pack.items[:limit] if limit is not None else pack.items)


def plan_cells(
    pack: ToolsPack,
    config: FleetConfig,
    models: list[str] | None,
    items: list[ToolItem],
    done: set[str],
) -> dict[str, list[ModelCells]]:
    """Per host (first-use order), its models in config order with their cells not in
    ``done`` (``model|item|repeat`` keys). ``models`` filters by id or label (an unknown one
    raises :class:`UsageError` listing the known ones)."""
    labels = {config.model_label(m): m for m in config.models}
    for name in models or []:
        if name not in labels and not any(m.id == name for m in labels.values()):
            raise UsageError(f"--models: unknown model {name!r}; the config has {list(labels)}")
    plans: dict[str, list[ModelCells]] = {}
    for label, spec in labels.items():
        if models and label not in models and spec.id not in models:
            continue
        cells = [
            (item, r)
            for item in items
            for r in range(1, item.repeats + 1)
            if tools_key(label, item.id, r) not in done
        ]
        plans.setdefault(spec.host_name, []).append(ModelCells(label, spec, spec.host_name, cells))
    return plans


def _selection(opts: ToolsOptions) -> dict[str, Any] | None:
    if opts.limit is not None:
        return {"limit": opts.limit}
    return {"items": list(opts.items)} if opts.items else None


def run_tools(opts: ToolsOptions, out: TextIO = sys.stdout) -> ToolsOutcome:
    """Run (or resume) the tools cells and return the outcome; the bundle path is printed
    last. Raises :class:`UsageError` subclasses for bad input (before any request) and
    :class:`~touchstone_ray.errors.RunError` for an aborted run."""
    from touchstone_ray.fleet import abort_guard, current_nodes, ensure_ray, resolve_hosts
    from touchstone_ray.telemetry.finalize import finalize_bundle

    pack = load_tools_pack(opts.pack)
    config = load_config(opts.config)
    bundle: ToolsBundle | None = None
    done: set[str] = set()
    if opts.resume is not None:
        bundle = open_tools_bundle(opts.resume)
        bundle.check_same_checks(pack)
        selected = bundle.manifest().selection or {}
        if opts.limit is None and not opts.items:  # the run's own quick-try selection
            opts.limit = selected.get("limit")
            opts.items = selected.get("items")
        with writes_into(bundle.root, "tools"):
            done = set(bundle.cells.scan(repair=True).ok_keys)
    items = select_items(pack, opts.limit, opts.items)
    plans = plan_cells(pack, config, opts.models, items, done)
    planned = {
        tools_key(m.label, it.id, r)
        for ms in plan_cells(pack, config, opts.models, items, set()).values()
        for m in ms
        for it, r in m.cells
    }
    ray_info = ensure_ray(opts.address, config.ray)
    import ray

    nodes = resolve_hosts(config, current_nodes(), ray.get_runtime_context().get_node_id())
    if bundle is None:
        out_dir = Path(opts.out or config.out)
        with writes_into(out_dir, "tools"):
            bundle = create_tools_bundle(out_dir, pack, config, ray_info, _selection(opts))
    else:
        bundle.update_manifest(status="running", resumed_at=time.time())
    root = bundle.root
    writer = ToolsWriter(bundle)
    fleet = ToolsFleet(config, pack, plans, nodes, bundle, writer, CheckPool(pack, writer))
    outcome = ToolsOutcome(bundle=root, n_reused=len(done & planned))
    started = time.monotonic()

    def aborted(reason: str) -> None:
        writer.event("run_aborted", reason=reason)
        writer.close()

    steps = [
        # the status first: a step left behind (the fleet stopping in a Ray that is gone,
        # finalize on a slow disk) or cut short by an exit must not leave the bundle "running"
        lambda _: bundle.update_manifest(status="failed", finished_at=time.time()),
        lambda _: fleet.stop(),
        aborted,
        lambda _: finalize_bundle(root, shards=ShardFolder.CELLS),
    ]
    with abort_guard(root, "tools", steps, f"resume with --resume {root}"):
        writer.event("run_start", kind="tools", hosts={h: n.node_id for h, n in nodes.items()})
        fleet.start()
        fleet.run()
        with writes_into(root, "tools"):
            fleet.stop()
        finalize_bundle(root, shards=ShardFolder.CELLS)
    ok_now = set(bundle.cells.scan().ok_keys)
    outcome.n_ok, outcome.n_failed, outcome.n_passed = writer.n_ok, writer.n_failed, writer.n_passed
    outcome.failures_by_kind = dict(writer.failures_by_kind)
    outcome.stopped = dict(fleet.stopped)
    outcome.n_missing = len(planned - ok_now)
    if fleet.harness_s:
        outcome.harness_p50_s = percentile(fleet.harness_s, 50)
        outcome.harness_p99_s = percentile(fleet.harness_s, 99)
        outcome.harness_n = len(fleet.harness_s)
    elapsed = time.monotonic() - started
    writer.event(
        "run_done",
        ok=outcome.n_ok,
        failed=outcome.n_failed,
        passed=outcome.n_passed,
        missing=outcome.n_missing,
        harness_p50_s=outcome.harness_p50_s,
        harness_p99_s=outcome.harness_p99_s,
        harness_n=outcome.harness_n,
        elapsed_s=elapsed,
    )
    writer.close()
    bundle.update_manifest(
        status="failed" if outcome.exit_code else "done", finished_at=time.time()
    )
    write_tools_summary(root)
    print(end_line(outcome, elapsed), file=out)
    print(root, file=out, flush=True)
    return outcome


def end_line(outcome: ToolsOutcome, elapsed_s: float) -> str:
    """``tools done: N ok (P passed), M failed (kind n, …), R reused, K without a result in
    S s`` and each model stopped before its cells."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(outcome.failures_by_kind.items()))
    state = "failed" if outcome.exit_code else "done"
    line = (
        f"tools {state}: {outcome.n_ok} ok ({outcome.n_passed} passed), {outcome.n_failed} "
        f"failed{f' ({kinds})' if kinds else ''}, {outcome.n_reused} reused, "
        f"{outcome.n_missing} without a result in {elapsed_s:.1f} s"
    )
    for label, why in sorted(outcome.stopped.items()):
        line += f"; {label} stopped: {why}"
    return line
