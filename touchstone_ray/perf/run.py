"""``touchstone-ray perf``: plan the points, run them pinned per host, write the perf bundle.

Each host's points run as lanes of the shared dispatcher (:mod:`.lanes`): per host its
:class:`~touchstone_ray.perf.client.PerfClient` actor (pinned hard to its node, SPEC §8) runs
the models one after another (baseline tick, warm-up, prompt fitting, every point not yet
complete, then the capacity search); hosts at once. Each point's requests are written the
moment the point returns (one ``write`` per line, :class:`~touchstone_ray.storage.JsonlWriter`),
so a crash loses at most the points in flight; ``--resume`` reuses every complete point. After
the run the host samples are joined onto the requests (finalize) and ``summary.json`` is
written; a run that ends early finalizes what it wrote
(:func:`~touchstone_ray.fleet.abort.abort_guard`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from touchstone_ray.bundle import Bundle, Layout, ShardFolder
from touchstone_ray.config import load_config
from touchstone_ray.errors import UsageError, writes_into
from touchstone_ray.fleet import abort_guard
from touchstone_ray.perf.bundle import (
    complete_points,
    create_perf_bundle,
    open_perf_bundle,
    read_points,
)
from touchstone_ray.perf.lanes import PerfFleet
from touchstone_ray.perf.options import PerfOptions
from touchstone_ray.perf.plan import plan_points
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.perf.schedule import ARRIVALS
from touchstone_ray.perf.summary import summarize
from touchstone_ray.perf.writer import PerfWriter
from touchstone_ray.storage import atomic_write_json

__all__ = ["MIN_RUNS", "PerfOptions", "PerfOutcome", "run_perf"]

MIN_RUNS = 8
"""Below this many requests per point the figures are noisy: a warning is printed."""


@dataclass
class PerfOutcome:
    """What a run did; ``exit_code`` 1 if any request failed, else 0."""

    bundle: Path
    n_ok: int = 0
    n_failed: int = 0
    n_reused_points: int = 0
    capacity: dict[str, Any] = field(default_factory=dict)
    sweep: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 1 if self.n_failed else 0


def _check(opts: PerfOptions) -> None:
    if opts.runs < 1:
        raise UsageError(f"--runs: must be ≥ 1, not {opts.runs}")
    if opts.output_tokens < 2:
        raise UsageError(
            f"--output-tokens: must be ≥ 2 (TPOT needs two tokens), not {opts.output_tokens}"
        )
    for flag, value in (
        ("--embed-chunks", opts.embed_chunks),
        ("--embed-tokens", opts.embed_tokens),
        ("--embed-batch", opts.embed_batch),
    ):
        if value < 1:
            raise UsageError(f"{flag}: must be ≥ 1, not {value}")
    if opts.capacity and not opts.slo:
        raise UsageError("--capacity needs --slo (e.g. --slo ttft=0.5,tpot=0.05)")
    _check_open_loop(opts)


def _check_open_loop(opts: PerfOptions) -> None:
    """The open-loop flags (``--rate``, ``--sweep`` and theirs): one line each."""
    if opts.rates is not None and opts.concurrency_given:
        raise UsageError(
            "--rate and --concurrency are exclusive: an open-loop point has no fixed concurrency"
        )
    if opts.rates is not None and opts.sweep:
        raise UsageError("--rate and --sweep are exclusive: the sweep picks its own rates")
    for rate in opts.rates or []:
        if not rate > 0:
            raise UsageError(f"--rate: {rate:g} is not a positive number of requests/s")
    if opts.arrival not in ARRIVALS:
        raise UsageError(
            f"--arrival: unknown process {opts.arrival!r}; use {' or '.join(ARRIVALS)}"
        )
    if opts.sweep_points < 2:
        raise UsageError(f"--sweep-points: must be ≥ 2, not {opts.sweep_points}")
    if opts.duration_s is not None and opts.requests is not None:
        raise UsageError("--duration and --requests are exclusive: give one per open-loop point")
    if opts.duration_s is not None and not opts.duration_s > 0:
        raise UsageError(f"--duration: must be > 0 s, not {opts.duration_s:g}")
    if opts.requests is not None and opts.requests < 1:
        raise UsageError(f"--requests: must be ≥ 1, not {opts.requests}")
    if opts.max_in_flight < 1:
        raise UsageError(f"--max-in-flight: must be ≥ 1, not {opts.max_in_flight}")


def _finalize(root: Path) -> None:
    """Resource fields for every request and embeddings batch still without them (idempotent:
    :func:`~touchstone_ray.telemetry.finalize.finalize_bundle`)."""
    from touchstone_ray.telemetry.finalize import finalize_bundle

    finalize_bundle(root, shards=ShardFolder.POINTS)
    finalize_bundle(root, shards=ShardFolder.EMBED)


def run_perf(opts: PerfOptions, out: TextIO = sys.stdout) -> PerfOutcome:
    """Run (or resume) the perf points; print the capacity lines and the bundle path last.

    Raises UsageError subclasses for bad input (before any request) and RunError for an
    aborted run."""
    _check(opts)
    config = load_config(opts.config)
    plans = plan_points(
        config,
        opts.contexts,
        opts.concurrency,
        opts.runs,
        opts.models,
        rates=opts.rates,
        open_loop=opts.open_loop(),
        sweep=opts.sweep,
    )
    if opts.runs < MIN_RUNS:
        print(
            f"warning: --runs {opts.runs} is under {MIN_RUNS}: percentiles and CV % of so "
            "few requests are noisy",
            file=sys.stderr,
        )
    from touchstone_ray.fleet import current_nodes, ensure_ray, resolve_hosts

    done: set[str] = set()
    existing: list[PerfResponse] = []
    planned = [p.to_json() for ms in plans.values() for m in ms for p in m.points]
    if opts.resume is not None:
        bundle = open_perf_bundle(opts.resume)
        bundle.check_frozen_config(config)
        existing = read_points(bundle.root, repair=True)
        recorded = bundle.manifest().points
        runs = (
            {p.prefix: p.runs for p in recorded}
            if recorded is not None
            else {p.prefix: p.runs for ms in plans.values() for m in ms for p in m.points}
        )
        done = complete_points(existing, runs)
    ray_info = ensure_ray(opts.address, config.ray)
    import ray

    nodes = resolve_hosts(config, current_nodes(), ray.get_runtime_context().get_node_id())
    if opts.resume is None:
        settings = {
            "output_tokens": opts.output_tokens,
            "runs": opts.runs,
            "slo": opts.slo,
            "contexts": opts.contexts,
            "concurrency": opts.concurrency,
            "capacity": opts.capacity,
            "schedule": "lockstep" if opts.lockstep else "closed-loop",
        }
        if opts.rates is not None or opts.sweep:
            loop = opts.open_loop()
            settings["schedule"] = "open-loop"
            settings["open_loop"] = {
                "rates": opts.rates,
                "arrival": loop.arrival,
                "duration_s": loop.duration_s,
                "requests": loop.requests,
                "max_in_flight": loop.max_in_flight,
                "seed": loop.seed,
                "sweep": opts.sweep,
                "sweep_points": opts.sweep_points if opts.sweep else None,
            }
        if opts.embed:
            settings["embed"] = {
                "chunks": opts.embed_chunks,
                "chunk_tokens": opts.embed_tokens,
                "batch": opts.embed_batch,
            }
        bundle = create_perf_bundle(
            Path(opts.out or config.out), config, opts.config.stem, ray_info, planned, settings
        )
    else:
        bundle.update_manifest(status="running", resumed_at=time.time())
        print(f"{len(done)} points reused", file=out, flush=True)
    writer = PerfWriter(bundle)
    outcome = PerfOutcome(bundle=bundle.root, n_reused_points=len(done))
    recorded_settings = bundle.manifest().settings
    schedule = recorded_settings.schedule if recorded_settings is not None else None
    fleet = PerfFleet(
        config, plans, nodes, bundle, writer, opts, done, existing, lockstep=schedule == "lockstep"
    )

    def aborted(reason: str) -> None:
        writer.event("run_aborted", reason=reason)
        writer.close()

    steps = [
        # the status first: a step left behind (the fleet stopping in a Ray that is gone,
        # finalize on a slow disk) or cut short by an exit must not leave the bundle "running"
        lambda _: bundle.update_manifest(status="failed", finished_at=time.time()),
        lambda _: fleet.stop(),
        aborted,
        lambda _: _finalize(bundle.root),  # every request written so far, also on Ctrl-C
    ]
    with abort_guard(bundle.root, "run", steps, f"resume with --resume {bundle.root}"):
        writer.event("run_start", kind="perf", hosts={h: n.node_id for h, n in nodes.items()})
        fleet.start()
        fleet.run()
        with writes_into(bundle.root, "run"):
            fleet.stop()
        writer.close()
        _finalize(bundle.root)
    with writes_into(bundle.root, "run"):
        return _report(opts, bundle, writer, fleet, outcome, out)


def _report(
    opts: PerfOptions,
    bundle: Bundle,
    writer: PerfWriter,
    fleet: PerfFleet,
    outcome: PerfOutcome,
    out: TextIO,
) -> PerfOutcome:
    """After the points: the summary, the manifest's status and the lines for the user."""
    if fleet.errors:
        outcome.n_failed += len(fleet.errors)
        for err in fleet.errors:
            print(f"perf: {err}", file=sys.stderr)
    outcome.capacity = fleet.capacity
    outcome.sweep = fleet.sweep
    records = read_points(bundle.root)
    summary = summarize(records, opts.slo, fleet.capacity, fleet.sweep)
    embed_lines = _embed_summary(bundle.root, summary)
    atomic_write_json(bundle.layout.summary, summary)
    outcome.n_ok, outcome.n_failed = writer.n_ok, writer.n_failed + len(fleet.errors)
    bundle.update_manifest(status="failed" if outcome.n_failed else "done", finished_at=time.time())
    print(
        f"perf {'failed' if outcome.n_failed else 'done'}: {outcome.n_ok} ok, "
        f"{outcome.n_failed} failed, "
        + (f"{writer.n_dropped} dropped, " if writer.n_dropped else "")
        + f"{outcome.n_reused_points} points reused",
        file=out,
    )
    for entry in [*fleet.capacity.values(), *fleet.sweep.values()]:
        print(entry["line"], file=out)
    for line in embed_lines:
        print(line, file=out)
    print(bundle.root, file=out, flush=True)
    return outcome


def _embed_summary(root: Path, summary: dict[str, Any]) -> list[str]:
    """Add ``embed: {"model|host": figures}`` to ``summary`` from ``embed/*.jsonl``; returns
    one line per model and host."""
    from touchstone_ray.perf.embed import embed_line, embed_summary
    from touchstone_ray.storage import iter_jsonl

    lines = []
    for shard in Layout(root).shards(ShardFolder.EMBED):
        by: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for rec in iter_jsonl(shard):
            by.setdefault((str(rec["model"]), str(rec["host"])), []).append(rec)
        for (model, host), recs in by.items():
            figures = embed_summary(recs)
            summary.setdefault("embed", {})[f"{model}|{host}"] = figures
            lines.append(embed_line(model, host, figures))
    return lines
