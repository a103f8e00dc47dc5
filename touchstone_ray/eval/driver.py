"""The eval driver: each model on each host is a lane of the shared dispatcher.

Flow (SPEC §8): per host, models one after another (``models_per_host`` at once), each with
warm-up (its answer probed: a flagged one warns, and stops the model under
``--strict-preflight``), baseline tick, its cells, then the engine's own end step: unload
where the engine keeps models loaded
(:attr:`~touchstone_ray.engines.base.Engine.needs_unload`), or, where it reports its own TTFT
(:attr:`~touchstone_ray.engines.base.Engine.checks_server_ttft`, vLLM), its mean over the
cells from ``/metrics``, stored under ``server_checks`` in ``bundle.json`` (the "before"
snapshot is taken after the warm-up, or, without one, alongside the first cells, so it may
count one of them); different hosts in parallel. Per endpoint at most ``concurrency``
requests are in flight (plus :func:`queue_ahead` cells queued in the actor).

Waiting, deadlines, cancelling and host loss are :mod:`touchstone_ray.fleet.dispatch`'s: a cell past
its deadline (:func:`~touchstone_ray.fleet.dispatch.call_deadline_s` of the model's engine
settings) is cancelled and recorded ``timeout``; a host whose node dies (or whose actor dies)
gets ``node_lost`` records for its in-flight and pending cells while the rest of the fleet
finishes.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from touchstone_ray.bundle import WarmupProbe
from touchstone_ray.config import FleetConfig
from touchstone_ray.engines.registry import engine_class
from touchstone_ray.eval.matrix import ModelPlan
from touchstone_ray.eval.sink import RecordSink
from touchstone_ray.fleet import (
    Call,
    Cell,
    Dispatcher,
    Lane,
    Pinned,
    call_deadline_s,
    probe_reason,
    probe_warning,
)

QUEUE_AHEAD = 2
"""The fewest cells queued in a client actor beyond its endpoint's ``concurrency``
(:func:`queue_ahead`); the actor's semaphore still caps requests in flight, and the driver's
round trip leaves the critical path (their wait is ``queue_wait_s``, outside every latency
figure)."""


def queue_ahead(concurrency: int) -> int:
    """Cells queued in a client actor beyond ``concurrency``: ``max(QUEUE_AHEAD,
    concurrency)``, so every stream that ends finds its next cell in the actor, also when a
    whole wave of streams ends at once. With a fixed 2, at 64 streams the other 62 of a wave
    waited for the driver's round trip (its ``ray.wait`` turn, the record's write, a new
    submission), measured on the dispatch bench's simulator (TTFT 100 ms, 100 tok/s, 200
    tokens): 60–100 ms from a stream's end to the next request at the server, against 20–40
    ms with the cells queued."""
    return max(QUEUE_AHEAD, concurrency)


BASELINE_WAIT_S = 15.0
"""How long a model's first call waits for its baseline tick (s); past it the model starts
without one (its records' baseline figures are then ``null``)."""


class BaselineTicks(Protocol):
    """Where a model's baseline tick is taken (eval: the :class:`MonitorSet`)."""

    def baseline_method(self, host: str) -> Any:
        """``host``'s monitor's ``baseline`` method handle (also while it is starting), or
        ``None`` where the host has no monitor."""

    def write_baseline(self, host: str, sample: dict[str, Any]) -> None:
        """Store the baseline ``sample`` of ``host``."""


@dataclass
class Phase:
    """One model on one host: baseline tick → warm-up → cells → unload or server check."""

    plan: ModelPlan
    cells: Iterator[Cell]
    todo: int
    stage: str = "queued"  # scan | queued | baseline | start | warmup | run | unload | check | done
    """``scan``: a resumed run's model waits for its shard to be read (``cells`` and ``todo``
    are set when it is, :class:`~touchstone_ray.eval.resume.ShardGate`)."""
    cold_pending: bool = False
    exhausted: bool = False


@dataclass
class HostRun:
    """A host's client actor and its queue of model phases."""

    host: str
    node_id: str
    actor: Any
    queue: deque[Phase]
    active: list[Phase] = field(default_factory=list)
    lost: bool = False
    started: bool = True
    """Whether the host's start-up is through (a start-up lane sets it false, then true:
    :mod:`touchstone_ray.eval.startup`); its models wait until then."""


class _PhaseLane(Lane):
    """The dispatcher's view of one :class:`Phase`."""

    def __init__(self, runner: MatrixRunner, run: HostRun, phase: Phase) -> None:
        self.runner = runner
        self.run = run
        self.phase = phase
        spec = phase.plan.spec
        self.engine = engine_class(spec.engine)
        settings = spec.engine_settings(
            None,
            max_attempts=runner.max_attempts,
            engine_down_timeout_s=runner.engine_down_timeout_s,
        )
        self.budget_s = call_deadline_s(settings)
        self.cells_in_flight = 0

    @property
    def label(self) -> str:
        return self.phase.plan.label

    @property
    def window(self) -> int:
        concurrency = self.phase.plan.spec.concurrency
        return concurrency + queue_ahead(concurrency)

    def finished(self) -> bool:
        return self.phase.stage == "done" or (self.phase.stage == "queued" and not self.phase.todo)

    def _control(self, stage: str, method: Any) -> Call:
        self.phase.stage = stage
        name = f"{stage}:{self.label}"
        return Call(method, (self.label,), name, None, stage, self.budget_s)

    def next_call(self) -> Call | None:
        phase, run = self.phase, self.run
        if not run.started:
            return None
        if phase.stage == "queued":
            if not phase.todo or not self.runner.may_start(run):
                return None
            run.active.append(phase)
            self.runner.sink.event("model_start", host=run.host, model=self.label, cells=phase.todo)
            ticks = self.runner.baselines
            method = ticks.baseline_method(run.host) if ticks is not None else None
            if method is not None:  # the tick before any of the model's requests
                phase.stage = "baseline"
                name = f"baseline:{self.label}"
                return Call(
                    method, (self.label,), name, None, "baseline", BASELINE_WAIT_S, other_actor=True
                )
            phase.stage = "start"
        if phase.stage == "start":
            if self.runner.config.scheduling.warmup:
                return self._control("warmup", run.actor.warmup)
            phase.stage = "run"
            phase.cold_pending = True
            if self.engine.checks_server_ttft:
                run.actor.mark_cells_start.remote(self.label)  # before the cells
        if phase.stage != "run":
            return None
        if not phase.exhausted:
            cell = next(phase.cells, None)
            if cell is not None:
                cold, phase.cold_pending = phase.cold_pending, False
                self.cells_in_flight += 1
                return Call(
                    run.actor.run_cell, (cell, cold), cell.task_name, cell, "cell", self.budget_s
                )
            phase.exhausted = True
        if self.cells_in_flight:
            return None
        if self.engine.checks_server_ttft:  # the server's own TTFT over the cells
            return self._control("check", run.actor.server_check)
        if self.engine.needs_unload:
            return self._control("unload", run.actor.unload)
        phase.stage = "done"
        return None

    def landed(self, call: Call, value: Any) -> None:
        phase, run, sink = self.phase, self.run, self.runner.sink
        if call.kind == "cell":
            self.cells_in_flight -= 1
            if isinstance(value, dict):
                sink.record(value)
            else:
                self._cell_failed(call, "protocol", f"cell task returned {value!r}")
        elif call.kind == "baseline":
            if isinstance(value, dict) and self.runner.baselines is not None:
                self.runner.baselines.write_baseline(run.host, value)
            phase.stage = "start"
        elif call.kind == "warmup":
            sink.event("warmup", host=run.host, model=self.label, result=value)
            phase.stage = "run"
            probe = value.get("probe") if isinstance(value, dict) else None
            if isinstance(probe, dict):
                self._probed(WarmupProbe.model_validate(probe))
        elif call.kind == "unload":
            sink.event("unload", host=run.host, model=self.label, error=value)
            phase.stage = "done"
        elif call.kind == "check":
            check = value if isinstance(value, dict) else {"error": str(value)}
            sink.event("server_check", host=run.host, model=self.label, check=check)
            with sink.bundle.edit_manifest() as manifest:
                manifest.server_checks = {**(manifest.server_checks or {}), self.label: check}
            phase.stage = "done"

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        if call.kind == "cell":
            self.cells_in_flight -= 1
            if timed_out:
                self._cell_failed(call, "timeout", error)
            else:
                self._cell_failed(call, "protocol", f"cell {error}")
        elif call.kind == "baseline":  # no tick (monitor lost or slow): the model starts
            self.phase.stage = "start"
        elif call.kind == "warmup":  # like a warm-up that answered an error: the cells run
            self.landed(call, {"ok": False, "error": error, "load_duration_s": None})
        else:
            self.landed(call, error if call.kind == "unload" else {"error": error})

    def _probed(self, probe: WarmupProbe) -> None:
        """Store the warm-up's content probe; a flagged one prints its warning line and, with
        ``strict_preflight``, stops the model before its cells: they get no record (a later
        ``--resume`` runs them), the end step (unload) still runs."""
        run, sink = self.run, self.runner.sink
        warning = probe_warning(run.host, self.label, probe)
        stop = warning is not None and self.runner.strict_preflight
        reason = probe_reason(probe)
        with sink.bundle.edit_manifest() as manifest:
            server = manifest.server(self.label)
            server.warmup = probe
            if stop:
                server.stopped_reason = reason
            elif server.stopped_reason is not None:  # stopped by an earlier run, not this one
                server.stopped_reason = None
        if warning is None:
            return
        print(f"preflight: warning: {warning}", file=sys.stderr, flush=True)
        if stop:
            self.runner.models_stopped[self.label] = reason
            sink.event("model_stopped", host=run.host, model=self.label, reason=reason)
            self.phase.exhausted = True

    def _cell_failed(self, call: Call, kind: str, error: str) -> None:
        self.runner.sink.record(self.runner.failed(call.job, self.run, kind, error))

    def lost(self, calls: list[Call], reason: str) -> None:
        sink, run = self.runner.sink, self.run
        if self.phase.stage == "scan" and self.runner.release is not None:
            self.runner.release(self.phase)  # its cells are known once its shard is read
        for call in calls:
            if call.kind == "cell":
                sink.record(self.runner.failed(call.job, run, "node_lost", reason))
        for cell in self.phase.cells:
            sink.record(self.runner.failed(cell, run, "node_lost", reason))
        self.phase.stage = "done"

    def closed(self) -> None:
        if self.phase in self.run.active:
            self.run.active.remove(self.phase)
            self.runner.sink.event("model_done", host=self.run.host, model=self.label)


class MatrixRunner:
    """Runs every host's phases to completion, writing each record through ``sink``.

    ``baselines`` takes each model's baseline tick after its ``model_start`` and before its
    warm-up and cells (after the previous model on that host was unloaded); the model waits
    for it at most :data:`BASELINE_WAIT_S`. The host's monitor starts beside its client actor,
    so for a host's first model the tick can land a moment after ``model_start`` (the
    monitor's start-up); it still precedes every request of the model.
    ``startup(runner, run)``, when given, makes the first lane of each host's actor, which
    holds that host's models back until it sets ``run.started`` (each host on its own: no
    barrier over the fleet); ``on_tick()`` runs once per dispatcher turn after the sink's tick.
    Each warm-up answer's content probe (:mod:`touchstone_ray.fleet.probe`) goes into
    ``bundle.json`` ``servers.<model>.warmup``; a flagged one prints one warning line, and with
    ``strict_preflight`` stops that model before its cells (:attr:`models_stopped`).
    ``release(phase)``, when given, blocks until a phase still in stage ``scan`` (a resumed
    run's model whose shard is being read) knows its cells; a lost host calls it before it
    records its pending cells lost.
    """

    def __init__(
        self,
        config: FleetConfig,
        hosts: list[HostRun],
        sink: RecordSink,
        baselines: BaselineTicks | None = None,
        startup: Callable[[MatrixRunner, HostRun], Lane] | None = None,
        on_tick: Callable[[], object] | None = None,
        strict_preflight: bool = False,
        release: Callable[[Phase], None] | None = None,
    ) -> None:
        self.config = config
        self.release = release
        self.strict_preflight = strict_preflight
        self.models_stopped: dict[str, str] = {}
        """Model label → why it stopped before its cells (a flagged warm-up answer under
        ``strict_preflight``)."""
        self.hosts = hosts
        self.sink = sink
        self.baselines = baselines
        self.max_attempts = config.scheduling.max_attempts
        self.engine_down_timeout_s = config.scheduling.engine_down_timeout_s
        self.engines = {config.model_label(m): m.engine for m in config.models}
        self.on_tick = on_tick
        self.dispatcher = Dispatcher(on_tick=self._tick)
        self._pinned: dict[str, Pinned] = {}
        for run in hosts:
            pinned = Pinned(f"host {run.host}", run.node_id, run.actor, role="client actor")
            pinned.on_lost = lambda reason, run=run: self._on_lost(run, reason)
            first = [startup(self, run)] if startup is not None else []
            pinned.lanes = first + [_PhaseLane(self, run, phase) for phase in run.queue]
            self._pinned[run.host] = pinned
            self.dispatcher.add(pinned)

    def may_start(self, run: HostRun) -> bool:
        """Whether ``run``'s host may start another model now (``models_per_host``)."""
        return not run.lost and len(run.active) < self.config.scheduling.models_per_host

    def _tick(self) -> None:
        self.sink.tick()
        if self.on_tick is not None:
            self.on_tick()

    def run(self) -> None:
        """Drive every host until all phases are done or lost."""
        self.dispatcher.run()

    def host_lost(self, run: HostRun, reason: str) -> None:
        """Record ``node_lost`` for every in-flight and pending cell of ``run``'s host."""
        self.dispatcher.lose(self._pinned[run.host], reason)

    def _on_lost(self, run: HostRun, reason: str) -> None:
        run.lost = True
        self.sink.event("node_lost", host=run.host, node_id=run.node_id, reason=reason)
        run.active.clear()

    def failed(self, cell: Cell, run: HostRun, kind: str, error: str) -> dict[str, Any]:
        """An ``ok=false`` record for a cell that never produced a result."""
        engine = self.engines[cell.model]
        return self.sink.failed_record(cell, run.host, run.node_id, engine, kind, error)
