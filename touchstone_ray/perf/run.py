"""``touchstone-ray perf``: plan the points, run them pinned per host, write the perf bundle.

Per host one thread drives that host's :class:`~touchstone_ray.perf.client.PerfClient`
actor (pinned hard to its node, SPEC §8): models one after another (baseline tick, warm-up,
prompt fitting, every point not yet complete, then the capacity search), hosts in parallel.
Each point's requests are written the moment the point returns (one ``write`` per line,
:class:`~touchstone_ray.storage.JsonlWriter`), so a crash loses at most the points in flight;
``--resume`` reuses every complete point. After the run the host samples are joined onto the
requests (finalize) and ``summary.json`` is written.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from touchstone_ray.bundle import Bundle, Footprint, Layout, ShardFolder
from touchstone_ray.config import FleetConfig, load_config
from touchstone_ray.errors import (
    BundleWriteError,
    RunError,
    UsageError,
    is_disk_error,
    write_failed,
    writes_into,
)
from touchstone_ray.perf.bundle import (
    complete_points,
    create_perf_bundle,
    open_perf_bundle,
    read_points,
)
from touchstone_ray.perf.capacity import capacity_line, capacity_points, search_capacity
from touchstone_ray.perf.plan import ModelPoints, Point, plan_points, runs_at
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.perf.summary import slo_share, summarize
from touchstone_ray.storage import JsonlWriter, atomic_write_json

MIN_RUNS = 8
"""Below this many requests per point the figures are noisy: a warning is printed."""
ACTOR_READY_TIMEOUT_S = 60.0
"""How long a host's client actor may take to start (s)."""
POINT_SLACK_S = 60.0
"""Added to a point's retry budget before the driver gives up on it (s)."""


@dataclass
class PerfOptions:
    """The flags of ``touchstone-ray perf`` (SPEC §6); token counts in tokens, SLO in s."""

    config: Path
    address: str | None = None
    models: list[str] | None = None
    contexts: list[int] = field(default_factory=lambda: [1024, 4096])
    concurrency: list[int] = field(default_factory=lambda: [1, 2, 4])
    output_tokens: int = 128
    runs: int = 8
    slo: dict[str, float] = field(default_factory=dict)
    capacity: bool = False
    embed: bool = False
    embed_chunks: int = 64
    """``--embed``: chunks embedded per model."""
    embed_tokens: int = 256
    """``--embed``: target tokens per chunk (estimated from words, see :mod:`.embed`)."""
    embed_batch: int = 8
    """``--embed``: chunks per request."""
    out: Path | None = None
    resume: Path | None = None
    lockstep: bool = False
    """``--lockstep``: each point's requests in rounds of ``concurrency`` sent together
    instead of a closed loop (:mod:`.schedule`); a resumed run keeps its bundle's choice."""


@dataclass
class PerfOutcome:
    """What a run did; ``exit_code`` 1 if any request failed, else 0."""

    bundle: Path
    n_ok: int = 0
    n_failed: int = 0
    n_reused_points: int = 0
    capacity: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 1 if self.n_failed else 0


class _Writer:
    """The run's one writer per shard and the event log, shared by the host threads; a disk
    that fails raises :class:`~touchstone_ray.errors.BundleWriteError`."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.lock = threading.Lock()
        self.shards: dict[str, JsonlWriter] = {}
        self.events = JsonlWriter(bundle.layout.events)
        self.n_ok = 0
        self.n_failed = 0

    def records(self, label: str, records: list[dict[str, Any]]) -> None:
        with self.lock, writes_into(self.bundle.root, "run"):
            writer = self.shards.get(label)
            if writer is None:
                writer = self.shards[label] = JsonlWriter(
                    self.bundle.layout.shard(label, ShardFolder.POINTS)
                )
            for rec in records:
                writer.write(rec)
                if rec.get("ok"):
                    self.n_ok += 1
                else:
                    self.n_failed += 1
            writer.sync()

    def embeds(self, label: str, records: list[dict[str, Any]]) -> None:
        with self.lock, writes_into(self.bundle.root, "run"):
            path = self.bundle.layout.shard(label, ShardFolder.EMBED)
            path.parent.mkdir(exist_ok=True)
            with JsonlWriter(path) as writer:
                for rec in records:
                    writer.write(rec)

    def event(self, name: str, **fields: Any) -> None:
        with self.lock, writes_into(self.bundle.root, "run"):
            self.events.write({"event": name, "ts": time.time(), **fields})
            self.events.sync_if_due()

    def close(self) -> None:
        with self.lock, writes_into(self.bundle.root, "run"):
            for writer in self.shards.values():
                writer.close()
            self.events.close()


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
    plans = plan_points(config, opts.contexts, opts.concurrency, opts.runs, opts.models)
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
    writer = _Writer(bundle)
    outcome = PerfOutcome(bundle=bundle.root, n_reused_points=len(done))
    recorded_settings = bundle.manifest().settings
    schedule = recorded_settings.schedule if recorded_settings is not None else None
    fleet = _Fleet(config, plans, nodes, bundle, writer, lockstep=schedule == "lockstep")
    try:
        writer.event("run_start", kind="perf", hosts={h: n.node_id for h, n in nodes.items()})
        fleet.start()
        threads = [
            threading.Thread(
                target=fleet.run_host,
                args=(host, models, opts, done, existing),
                name=f"perf:{host}",
                daemon=True,
            )
            for host, models in plans.items()
        ]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=0.5)
        if fleet.write_error is not None:
            raise fleet.write_error
        with writes_into(bundle.root, "run"):
            fleet.stop()
        writer.close()
        _finalize(bundle.root)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            fleet.stop()
        with contextlib.suppress(Exception):
            writer.event("run_aborted", reason=str(exc) or type(exc).__name__)
            writer.close()
        with contextlib.suppress(Exception):  # every request written so far, also on Ctrl-C
            _finalize(bundle.root)
        with contextlib.suppress(Exception):
            bundle.update_manifest(status="failed", finished_at=time.time())
        if isinstance(exc, KeyboardInterrupt):
            raise RunError(f"interrupted; resume with --resume {bundle.root}") from None
        if is_disk_error(exc):
            raise write_failed(bundle.root, exc, "run") from exc
        raise
    with writes_into(bundle.root, "run"):
        return _report(opts, bundle, writer, fleet, outcome, out)


def _report(
    opts: PerfOptions,
    bundle: Bundle,
    writer: _Writer,
    fleet: _Fleet,
    outcome: PerfOutcome,
    out: TextIO,
) -> PerfOutcome:
    """After the points: the summary, the manifest's status and the lines for the user."""
    if fleet.errors:
        outcome.n_failed += len(fleet.errors)
        for err in fleet.errors:
            print(f"perf: {err}", file=sys.stderr)
    outcome.capacity = fleet.capacity
    records = read_points(bundle.root)
    summary = summarize(records, opts.slo, fleet.capacity)
    embed_lines = _embed_summary(bundle.root, summary)
    atomic_write_json(bundle.layout.summary, summary)
    outcome.n_ok, outcome.n_failed = writer.n_ok, writer.n_failed + len(fleet.errors)
    bundle.update_manifest(status="failed" if outcome.n_failed else "done", finished_at=time.time())
    print(
        f"perf {'failed' if outcome.n_failed else 'done'}: {outcome.n_ok} ok, "
        f"{outcome.n_failed} failed, {outcome.n_reused_points} points reused",
        file=out,
    )
    for entry in fleet.capacity.values():
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


class _Fleet:
    """The per-host perf actors and monitors of one run."""

    def __init__(
        self,
        config: FleetConfig,
        plans: dict[str, list[ModelPoints]],
        nodes: dict[str, Any],
        bundle: Bundle,
        writer: _Writer,
        lockstep: bool = False,
    ) -> None:
        self.config = config
        self.lockstep = lockstep
        self.plans = plans
        self.nodes = nodes
        self.bundle = bundle
        self.writer = writer
        self.actors: dict[str, Any] = {}
        self.limits: dict[str, int | None] = {}
        self.monitors: Any = None
        self.capacity: dict[str, Any] = {}
        self.errors: list[str] = []
        self.write_error: BundleWriteError | None = None
        """The first disk failure of a host thread; :func:`run_perf` raises it."""
        self.ran: dict[str, list[PerfResponse]] = {}
        """Point prefix → the requests this run measured for it (the capacity search reuses
        the matrix's points)."""
        self._stopped = False

    def start(self) -> None:
        import ray

        from touchstone_ray.fleet import MonitorSet
        from touchstone_ray.perf.client import spawn_perf_client
        from touchstone_ray.telemetry.engines import EngineTarget

        sched = self.config.scheduling.model_dump()
        sched["cache_bust"] = True
        for host, models in self.plans.items():
            self.actors[host] = spawn_perf_client(
                host,
                self.nodes[host].node_id,
                {m.label: m.spec for m in models},
                name=f"perf:{host}:{self.bundle.root.name}",
                scheduling=sched,
                max_attempts=self.config.scheduling.max_attempts,
                run_id=self.bundle.root.name,
            )
        refs = {h: a.ready.remote() for h, a in self.actors.items()}
        ready, _ = ray.wait(
            list(refs.values()), num_returns=len(refs), timeout=ACTOR_READY_TIMEOUT_S
        )
        missing = [h for h, r in refs.items() if r not in ready]
        if missing:
            raise RunError(
                f"perf client actor did not start on {missing} within {ACTOR_READY_TIMEOUT_S:.0f} s"
            )
        facts = {h: ray.get(r, timeout=10) for h, r in refs.items()}
        self.monitors = MonitorSet(
            self.bundle.root,
            self.config.monitor.interval_s,
            self.config.monitor.gpu,
            autodrain_s=1.0,
        )
        targets = {
            h: [EngineTarget.from_spec(m.label, m.spec.model_dump()) for m in ms]
            for h, ms in self.plans.items()
        }
        capabilities = self.monitors.start({h: self.nodes[h].node_id for h in facts}, targets)
        for host, f in facts.items():
            self.monitors.register_pids(host, [f["client_pid"]])
        preflight = {h: ray.get(a.preflight.remote(), timeout=60) for h, a in self.actors.items()}
        with self.bundle.edit_manifest() as manifest:
            for host, f in facts.items():
                entry = manifest.host(host)
                entry.update(f)
                entry.capabilities = capabilities.get(host, {})
            for host, entries in preflight.items():
                self.writer.event("preflight", host=host, result=entries)
                for label, found in entries.items():
                    self.limits[label] = found.get("context_limit")
                    if found.get("server_facts"):
                        server = {
                            "engine_kind": found.get("engine_kind"),
                            "server_facts": found["server_facts"],
                        }
                        manifest.servers = {**(manifest.servers or {}), label: server}
                    if not found.get("reachable"):
                        print(
                            f"preflight: {host}: {label}: endpoint unreachable "
                            f"({found.get('error')})",
                            file=sys.stderr,
                        )

    def run_host(
        self,
        host: str,
        models: list[ModelPoints],
        opts: PerfOptions,
        done: set[str],
        existing: list[PerfResponse],
    ) -> None:
        """Every model of ``host``, one after another; errors are collected, not raised. A
        disk that fails ends this host's run (:attr:`write_error`, raised by the caller)."""
        import ray

        actor = self.actors[host]
        for m in models:
            try:
                self.monitors.baseline(host, m.label)
                self.writer.event("model_start", host=host, model=m.label)
                if self.config.scheduling.warmup:
                    ray.get(actor.warmup.remote(m.label), timeout=self._warmup_deadline_s(m))
                contexts = sorted({p.context for p in m.points})
                fits = ray.get(
                    actor.fit.remote(m.label, contexts, self.limits.get(m.label)), timeout=600
                )
                self.writer.event(
                    "fit", host=host, model=m.label, contexts={str(k): v for k, v in fits.items()}
                )
                for point in m.points:
                    if point.prefix not in done:
                        self._run_point(actor, m, point, opts.output_tokens)
                if opts.capacity:
                    self._capacity(actor, m, opts, existing)
                if opts.embed:
                    batches = -(-opts.embed_chunks // opts.embed_batch)
                    embeds = ray.get(
                        actor.run_embed.remote(
                            m.label, opts.embed_chunks, opts.embed_tokens, opts.embed_batch
                        ),
                        timeout=m.spec.timeout_s * batches + POINT_SLACK_S,
                    )
                    self.writer.embeds(m.label, embeds)
                self.writer.event("model_done", host=host, model=m.label)
            except Exception as exc:
                if not self._model_failed(host, m.label, exc):
                    return

    def _model_failed(self, host: str, label: str, exc: Exception) -> bool:
        """Record ``exc`` as the model's failure and say whether the host goes on (``False``:
        the disk failed, kept in :attr:`write_error`)."""
        if isinstance(exc, BundleWriteError):
            failed = exc
        elif is_disk_error(exc):  # the monitor's baseline write
            failed = write_failed(self.bundle.root, exc, "run")
        else:
            msg = f"{host}: {label}: {type(exc).__name__}: {exc}"
            self.errors.append(msg)
            try:
                self.writer.event("model_failed", host=host, model=label, error=msg)
                return True
            except BundleWriteError as write_exc:
                failed = write_exc
        self.write_error = self.write_error or failed
        return False

    def _warmup_deadline_s(self, m: ModelPoints) -> float:
        """The warm-up request's deadline (s), derived like eval's from the endpoint's engine
        settings (:func:`~touchstone_ray.fleet.dispatch.call_deadline_s`)."""
        from touchstone_ray.fleet import call_deadline_s

        max_attempts = self.config.scheduling.max_attempts
        return call_deadline_s(m.spec.engine_settings(None, max_attempts=max_attempts))

    def _run_point(
        self, actor: Any, m: ModelPoints, point: Point, output_tokens: int
    ) -> list[dict[str, Any]]:
        import ray

        rounds = -(-point.runs // point.concurrency) + 1  # the warm-up round, then the runs
        budget = m.spec.timeout_s * self.config.scheduling.max_attempts * rounds + POINT_SLACK_S
        records: list[dict[str, Any]] = ray.get(
            actor.run_point.options(name=f"perf:{point.prefix}").remote(
                point.__dict__, output_tokens, lockstep=self.lockstep
            ),
            timeout=budget,
        )
        self.writer.records(m.label, records)
        self.ran[point.prefix] = [PerfResponse.model_validate(r) for r in records]
        self.writer.event(
            "point_done",
            point=point.prefix,
            n=len(records),
            ok=sum(1 for r in records if r.get("ok")),
        )
        return records

    def _capacity(
        self, actor: Any, m: ModelPoints, opts: PerfOptions, existing: list[PerfResponse]
    ) -> None:
        ctx = min(opts.contexts)

        def share_at(c: int) -> float | None:
            point = Point(m.label, m.host, ctx, c, runs_at(opts.runs, c))
            have = self.ran.get(point.prefix) or [
                r for r in existing if r.key.rsplit("|", 1)[0] == point.prefix
            ]
            if len(have) < point.runs:
                self._run_point(actor, m, point, opts.output_tokens)
                have = self.ran[point.prefix]
            return slo_share(have, opts.slo)

        found, tried = search_capacity(share_at)
        line = capacity_line(m.label, m.host, found, opts.slo)
        entry = {
            "model": m.label,
            "host": m.host,
            "context": ctx,
            "capacity": found,
            "slo": opts.slo,
            "tried": {str(k): v for k, v in sorted(tried.items())},
            "points": capacity_points(m.label, m.host, ctx, tried),
            "line": line,
        }
        key = f"{m.label}|{m.host}"
        self.capacity[key] = entry
        with self.writer.lock, self.bundle.edit_manifest() as manifest:  # host threads share it
            manifest.capacity = {**(manifest.capacity or {}), key: entry}
        self.writer.event("capacity", model=m.label, host=m.host, capacity=found)

    def stop(self) -> None:
        """Close the actors and stop the monitors (once)."""
        if self._stopped:
            return
        self._stopped = True
        import ray

        closing = [a.close.remote() for a in self.actors.values()]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        for actor in self.actors.values():
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if self.monitors is not None:
            footprint = self.monitors.footprint()
            self.monitors.stop()
            with self.bundle.edit_manifest() as manifest:
                for host, entry in manifest.hosts.items():
                    if host in footprint:
                        entry.touchstone_footprint = Footprint.model_validate(footprint[host])
