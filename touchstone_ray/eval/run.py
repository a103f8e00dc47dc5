"""``touchstone-ray eval``: load, plan, connect, preflight, run the matrix, finalize.

The public entry point is :func:`run_eval`; the CLI only parses flags and prints.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Container, MutableSet
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from touchstone_ray.bundle import AgentEntry, Bundle, EngineFound, Footprint
from touchstone_ray.config import FleetConfig, load_config
from touchstone_ray.errors import writes_into
from touchstone_ray.eval.driver import HostRun, MatrixRunner, Phase
from touchstone_ray.eval.matrix import CellIndex, CellSet, ModelPlan, plan_models, select_prompts
from touchstone_ray.eval.resume import ResumeScan, ShardGate, need_order
from touchstone_ray.eval.sink import RecordSink
from touchstone_ray.eval.startup import FleetStart
from touchstone_ray.fleet import (
    PREFLIGHT_TIMEOUT_S,
    AgentClient,
    MonitorSet,
    abort_guard,
    actor_ready_timeout_s,
    agent_entries,
    client_spec,
    close_actors,
    current_nodes,
    ensure_ray,
    resolve_hosts,
    start_clients,
)
from touchstone_ray.lang import count, lines
from touchstone_ray.pack import Pack, load_pack
from touchstone_ray.telemetry.engines import EngineTarget
from touchstone_ray.telemetry.finalize import finalize_bundle

# The client-actor, engine and monitor modules are imported here, with this module, so their
# import time is spent before ``run_start`` rather than inside the measured run.


@dataclass
class EvalOptions:
    """The flags of ``touchstone-ray eval`` (SPEC §6)."""

    pack: Path
    config: Path
    address: str | None = None
    out: Path | None = None
    resume: Path | None = None
    models: list[str] | None = None
    variants: list[str] | None = None
    limit: int | None = None
    """``--limit``: the first N prompts of each category (a quick try)."""
    prompts: list[str] | None = None
    """``--prompts``: only these prompt ids."""
    strict_preflight: bool = False
    dry_run: bool = False
    allow_cut: bool = False
    """Run cells whose prompt + ``max_tokens`` does not fit the model's context."""


@dataclass
class EvalOutcome:
    """What a run did; ``exit_code`` 1 if any cell failed or a host or model stopped before
    its cells, else 0."""

    bundle: Path | None
    n_ok: int = 0
    n_failed: int = 0
    n_reused: int = 0
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    hosts_stopped: dict[str, str] = field(default_factory=dict)
    """Host → why it stopped before its cells (``--strict-preflight``); its cells have no
    record, so a ``--resume`` runs them."""
    models_stopped: dict[str, str] = field(default_factory=dict)
    """Model label → why it stopped before its cells (``--strict-preflight`` and a flagged
    warm-up answer); its cells have no record, so a ``--resume`` runs them."""

    @property
    def exit_code(self) -> int:
        return 1 if self.n_failed or self.hosts_stopped or self.models_stopped else 0


def print_plan(
    pack: Pack, plans: dict[str, list[ModelPlan]], skip: Container[str], out: TextIO
) -> None:
    """The ``--dry-run`` plan in the pack's language: per host, models in run order with their
    cell counts (``1 cell``, ``2 cells``)."""
    lang = pack.language
    w = lines(lang)
    total = 0
    for host, models in plans.items():
        print(w["plan_host"].format(host=host), file=out)
        for order, plan in enumerate(models, start=1):
            todo = sum(1 for _ in plan.cells(pack, skip))
            total += todo
            left = plan.n_cells(pack) - todo
            line = w["plan_model"].format(
                order=order,
                label=plan.label,
                engine=plan.spec.engine,
                concurrency=plan.spec.concurrency,
                cells=count(lang, todo, "cell"),
                variants=count(lang, len(plan.variants), "variant"),
                per=plan.cells_per_variant(pack),
            )
            print(line + (w["plan_done"].format(n=left) if left else ""), file=out)
    cells, hosts = count(lang, total, "cell"), count(lang, len(plans), "host")
    print(w["plan_total"].format(cells=cells, hosts=hosts), file=out)


def _selection(opts: EvalOptions) -> dict[str, Any] | None:
    """The manifest's ``selection`` of this run (``None``: every prompt)."""
    if opts.limit is not None:
        return {"limit": opts.limit}
    return {"prompts": list(opts.prompts)} if opts.prompts else None


def run_eval(opts: EvalOptions, out: TextIO = sys.stdout) -> EvalOutcome:
    """Run (or resume) the matrix and return the outcome; the bundle path is printed last.

    Raises :class:`~touchstone_ray.errors.UsageError` subclasses for bad input (before any
    request) and :class:`RunError` for an aborted run.
    """
    pack = load_pack(opts.pack)
    config = load_config(opts.config)
    selection = select_prompts(pack, opts.limit, opts.prompts)
    plans = plan_models(pack, config, opts.models, opts.variants, selection)
    bundle: Bundle | None = None
    cell_set = partial(CellSet, CellIndex(pack, plans))
    done: MutableSet[str] = cell_set()
    if opts.resume is not None:
        bundle = Bundle.open(opts.resume)
        bundle.check_resume(opts.pack, config)  # before anything is written
    if opts.dry_run:
        if bundle is not None:  # no repair: writes nothing
            done = bundle.scan_responses(key_set=cell_set).ok_keys
        print_plan(pack, plans, done, out)
        return EvalOutcome(bundle=None)

    scanning: ResumeScan | None = None
    if bundle is not None:  # the shards are read beside Ray's start and the actors' start
        scanning = ResumeScan(bundle.root, need_order(plans), cell_set)
        done = scanning.total.ok_keys
    try:
        ray_start = time.time()
        ray_info = ensure_ray(opts.address, config.ray)
        ray_span = (ray_start, time.time())
        import ray

        nodes = resolve_hosts(config, current_nodes(), ray.get_runtime_context().get_node_id())
        chosen = _selection(opts)
        if bundle is None:
            out_dir = Path(opts.out or config.out)
            with writes_into(out_dir, "run"):
                bundle = Bundle.create(out_dir, pack, opts.pack, config, ray_info)
                if chosen is not None:
                    bundle.update_manifest(selection=chosen)
        else:
            with writes_into(bundle.root, "run"):
                bundle.update_manifest(status="running", resumed_at=time.time(), selection=chosen)
        left: dict[str, int] | None = None
        todo: dict[str, int] = dict.fromkeys(plans, 0)
        if scanning is None:  # a new run: every cell of the plan
            left = {
                p.label: sum(1 for _ in p.cells(pack, done)) for ms in plans.values() for p in ms
            }
            todo = {host: sum(left[p.label] for p in models) for host, models in plans.items()}
        with writes_into(bundle.root, "run"):
            sink = RecordSink(bundle, pack.id, pack.version, todo)
    except BaseException:
        if scanning is not None:
            scanning.close()  # it may be cutting a torn tail
        raise
    started = time.monotonic()
    outcome = EvalOutcome(bundle=bundle.root, n_reused=len(done))
    fleet: Fleet | None = None

    def stop_fleet(reason: str) -> None:
        if scanning is not None:
            scanning.close()  # before finalize reads the shards
        if fleet is not None:
            _stop_fleet(fleet, bundle)

    def aborted(reason: str) -> None:
        sink.event("run_aborted", reason=reason)
        sink.close()

    steps = [
        # the status first: a step left behind (the fleet stopping in a Ray that is gone,
        # finalize on a slow disk) or cut short by an exit must not leave the bundle "running"
        lambda _: bundle.update_manifest(status="failed", finished_at=time.time()),
        stop_fleet,
        aborted,
        lambda _: finalize_bundle(bundle.root),  # every record written so far, also on Ctrl-C
    ]
    with abort_guard(bundle.root, "run", steps, f"resume with --resume {bundle.root}"):
        sink.event("run_start", pack=pack.id, hosts={h: n.node_id for h, n in nodes.items()})
        fleet = _start_fleet(pack, config, plans, nodes, done, left, bundle, sink, opts)
        gate: ShardGate | None = None
        on_tick: Callable[[], object] = fleet.start.tick
        if scanning is not None:
            gate = ShardGate(scanning, pack, fleet.runs, sink, out, ray_span)
            on_tick = partial(_tick_both, fleet.start.tick, gate.tick)
            gate.tick()
        runner = MatrixRunner(
            config,
            fleet.runs,
            sink,
            baselines=fleet.monitors,
            startup=fleet.start.lane,
            on_tick=on_tick,
            strict_preflight=opts.strict_preflight,
            release=gate.release_now if gate is not None else None,
        )
        runner.run()
        if gate is not None:
            gate.finish()  # the shards of models this run does not plan, read to the end
            outcome.n_reused = len(done)
        stopped = fleet.start.stopped
        _stop_fleet(fleet, bundle)
        fleet = None
        flagged: Counter[str] = Counter()
        finalize_bundle(bundle.root, flagged=flagged)  # every unfinalized record, earlier too
    outcome.n_ok, outcome.n_failed = sink.n_ok, sink.n_failed
    outcome.failures_by_kind = dict(sink.failures_by_kind)
    outcome.hosts_stopped = dict(stopped)
    outcome.models_stopped = dict(runner.models_stopped)
    elapsed = time.monotonic() - started
    sink.event("run_done", ok=outcome.n_ok, failed=outcome.n_failed, elapsed_s=elapsed)
    sink.close()
    failed = bool(outcome.exit_code)
    bundle.update_manifest(status="failed" if failed else "done", finished_at=time.time())
    busy = busy_line(flagged)
    if busy:  # before the summary: the last two lines stay the summary and the bundle path
        print(busy, file=out)
    print(end_line(outcome, elapsed, pack.language), file=out)
    print(bundle.root, file=out, flush=True)
    return outcome


def end_line(outcome: EvalOutcome, elapsed_s: float, lang: str) -> str:
    """The run's last line but the bundle path, in the pack's language ``lang``: ``eval done:
    N ok, M failed (kind n, …), R reused in S s`` and each host, then each model, stopped
    before its cells."""
    w = lines(lang)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(outcome.failures_by_kind.items()))
    stopped = "".join(
        w["host_stopped"].format(host=name, reason=reason)
        for name, reason in [
            *sorted(outcome.hosts_stopped.items()),
            *sorted(outcome.models_stopped.items()),
        ]
    )
    return (
        w["eval_end"].format(
            state=w["eval_failed" if outcome.exit_code else "eval_done"],
            ok=outcome.n_ok,
            failed=outcome.n_failed,
            kinds=f" ({kinds})" if kinds else "",
            reused=outcome.n_reused,
            elapsed=f"{elapsed_s:.1f}",
        )
        + stopped
    )


def busy_line(flagged: Counter[str]) -> str | None:
    """The line that says how many of the cells finalized now were measured on a host that
    other processes kept busy or that throttled (:func:`finalize_bundle` ``flagged``), and
    what that does to the figures; ``None`` when none was."""
    contended, throttled = flagged["contended"], flagged["throttled"]
    if not contended and not throttled:
        return None
    parts = [f"{n} {what}" for n, what in ((contended, "contended"), (throttled, "throttled")) if n]
    return (
        f"speed: {' and '.join(parts)} of {flagged['finalized']} cells (the host was busy with "
        "other processes, or throttled, while they ran): their TTFT and decode tok/s are left "
        "out of the speed figures, so those read – where no cell is left; rerun on a quieter "
        "host for speed"
    )


def _tick_both(first: Callable[[], object], second: Callable[[], object]) -> None:
    """One dispatcher turn's hooks: the fleet's start-up, then the resume's shard gate."""
    first()
    second()


@dataclass
class Fleet:
    """The per-host actors of one eval and their shared start-up state."""

    runs: list[HostRun]
    actors: dict[str, Any]
    monitors: MonitorSet
    start: FleetStart


def _start_fleet(
    pack: Pack,
    config: FleetConfig,
    plans: dict[str, list[ModelPlan]],
    nodes: dict[str, Any],
    done: Container[str],
    left: dict[str, int] | None,
    bundle: Bundle,
    sink: RecordSink,
    opts: EvalOptions,
) -> Fleet:
    """Create each host's client actor (pinned) and monitor without waiting for any of them,
    and build the phases (``left``: cells still to run per model label; ``None`` on a resume,
    whose phases wait for their shards, stage ``scan``). Each host's start-up
    (ready, preflight, context check) then runs in the dispatcher (:mod:`.startup`)."""
    import ray

    specs = {
        host: client_spec(
            host,
            nodes[host].node_id,
            {p.label: p.spec for p in models},
            name=f"client:{host}:{bundle.root.name}",
            pack_id=pack.id,
            pack_version=pack.version,
            sampling=pack.sampling.model_dump(),
            max_attempts=config.scheduling.max_attempts,
            scheduling=config.scheduling.model_dump(),
            run_id=bundle.root.name,
            language=pack.language,
        )
        for host, models in plans.items()
    }
    actors = start_clients(specs, bundle.root.name)  # a standing cluster's agents, if up
    agents = agent_entries(actors)
    if agents:
        sink.event("agents", agents=agents)
        bundle.update_manifest(agents={h: AgentEntry(**a) for h, a in agents.items()})
    monitors = MonitorSet(
        bundle.root,
        config.monitor.interval_s,
        config.monitor.gpu,
        autodrain_s=1.0,
        agents={h: a for h, a in actors.items() if isinstance(a, AgentClient)},
    )
    targets = {
        host: [EngineTarget.from_spec(p.label, p.spec.model_dump()) for p in plans[host]]
        for host in plans
    }
    driver_node = ray.get_runtime_context().get_node_id()
    # the driver is harness too where it shares the host (its pid means nothing elsewhere)
    driver = {h: [os.getpid()] for h in plans if nodes[h].node_id == driver_node}
    monitors.launch({h: nodes[h].node_id for h in plans}, targets, pids=driver)
    start = FleetStart(
        pack=pack,
        plans=plans,
        bundle=bundle,
        sink=sink,
        monitors=monitors,
        strict_preflight=opts.strict_preflight,
        allow_cut=opts.allow_cut,
        ready_timeout_s=actor_ready_timeout_s(),
        preflight_timeout_s=PREFLIGHT_TIMEOUT_S,
    )
    runs: list[HostRun] = []
    for host, models in plans.items():
        phases = deque(
            Phase(plan=p, cells=iter(()), todo=0, stage="scan")
            if left is None  # a resume: released once its shard is read (ShardGate)
            else Phase(plan=p, cells=p.cells(pack, done), todo=left[p.label])
            for p in models
        )
        run = HostRun(host=host, node_id=nodes[host].node_id, actor=actors[host], queue=phases)
        runs.append(run)
    return Fleet(runs=runs, actors=actors, monitors=monitors, start=start)


def _stop_fleet(fleet: Fleet, bundle: Bundle) -> None:
    """Close the client actors, stop the monitors, record footprint and monitoring losses."""
    import ray

    lost = {run.host for run in fleet.runs if run.lost}
    asked = {h: a.harness_pids.remote() for h, a in fleet.actors.items() if h not in lost}
    answered, _ = ray.wait(list(asked.values()), num_returns=len(asked), timeout=10)
    for host, ref in asked.items():  # the stream workers a split endpoint started
        if ref in answered:
            with contextlib.suppress(Exception):
                fleet.monitors.register_pids(host, ray.get(ref))
    footprint = fleet.monitors.footprint()
    engines = fleet.monitors.engines()
    close_actors(fleet.actors, lost)
    fleet.monitors.stop()
    with bundle.edit_manifest() as manifest:
        for host, entry in manifest.hosts.items():
            if host in footprint:
                entry.touchstone_footprint = Footprint.model_validate(footprint[host])
            if host in engines:  # how each endpoint's engine process was found, or why not
                entry.engines = {e: EngineFound.model_validate(v) for e, v in engines[host].items()}
            if host in fleet.monitors.lost:
                entry.monitoring_lost_at = fleet.monitors.lost[host]
                entry.monitoring_lost_reason = fleet.monitors.lost_reason.get(host)
