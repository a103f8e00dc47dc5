"""The eval driver: one bounded window of pinned cells per host, results written as they land.

Flow (SPEC §8): per host, models one after another (``models_per_host`` at once), each with
warm-up, baseline tick, its cells, then unload (vLLM: instead, its own mean TTFT over the
cells from ``/metrics``, stored under ``server_checks`` in ``bundle.json``; the "before"
snapshot is taken after the warm-up, or, without one, alongside the first cells, so it may
count one of them); different hosts in parallel. Per endpoint at
most ``concurrency`` requests are in flight (plus :data:`QUEUE_AHEAD` cells queued in the
actor); results are consumed with ``ray.wait`` (timeout) and written at once. Every wait has
a deadline: a cell past its deadline is cancelled and recorded ``timeout``; a host whose node
dies (or whose actor dies) gets ``node_lost`` records for its in-flight and pending cells
while the rest of the fleet finishes.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.config import FleetConfig
from touchstone_ray.eval.plan import Cell, ModelPlan
from touchstone_ray.eval.sink import RecordSink

WAIT_TIMEOUT_S = 0.5
"""Longest single ``ray.wait``; the loop checks deadlines and liveness in between."""
LIVENESS_INTERVAL_S = 2.0
"""How often node liveness is polled (s)."""
DEADLINE_SLACK_S = 30.0
"""Added to a cell's own retry budget before the driver gives up on it (s)."""
QUEUE_AHEAD = 2
"""Cells queued in a client actor beyond its endpoint's ``concurrency``; the actor's semaphore
still caps requests in flight, and the driver's round trip leaves the critical path (their
wait is ``queue_wait_s``, outside every latency figure)."""
LOAD_BUDGET_S = 900.0
"""Matches the engines' ``load_timeout_s``: time a model may spend loading (s)."""


@dataclass
class InFlight:
    """A submitted cell and the time after which the driver gives up on it."""

    cell: Cell
    deadline: float


@dataclass
class Phase:
    """One model on one host: warm-up → cells → unload."""

    plan: ModelPlan
    cells: Iterator[Cell]
    todo: int
    stage: str = "queued"  # queued | warmup | run | unload | check | done
    inflight: dict[Any, InFlight] = field(default_factory=dict)
    control_ref: Any = None
    cold_pending: bool = False
    exhausted: bool = False

    def cell_deadline_s(self, max_attempts: int) -> float:
        spec = self.plan.spec
        return spec.timeout_s * max_attempts + LOAD_BUDGET_S + DEADLINE_SLACK_S


@dataclass
class HostRun:
    """A host's client actor and its queue of model phases."""

    host: str
    node_id: str
    actor: Any
    queue: deque[Phase]
    active: list[Phase] = field(default_factory=list)
    lost: bool = False


class MatrixRunner:
    """Runs every host's phases to completion, writing each record through ``sink``.

    ``on_model_start(host, label)`` runs before a model's warm-up (the telemetry baseline
    tick, after the previous model on that host was unloaded).
    """

    def __init__(
        self,
        config: FleetConfig,
        hosts: list[HostRun],
        sink: RecordSink,
        on_model_start: Callable[[str, str], object] | None = None,
    ) -> None:
        self.config = config
        self.hosts = hosts
        self.sink = sink
        self.on_model_start = on_model_start
        self.max_attempts = config.scheduling.max_attempts
        self.engines = {config.model_label(m): m.engine for m in config.models}
        self._last_liveness = time.monotonic()

    # --- phase transitions -----------------------------------------------------------------
    def _start_phases(self, run: HostRun) -> None:
        while (
            not run.lost and run.queue and len(run.active) < self.config.scheduling.models_per_host
        ):
            phase = run.queue.popleft()
            if phase.todo == 0:
                continue
            if self.on_model_start is not None:
                self.on_model_start(run.host, phase.plan.label)
            self.sink.event("model_start", host=run.host, model=phase.plan.label, cells=phase.todo)
            if self.config.scheduling.warmup:
                phase.stage = "warmup"
                phase.control_ref = run.actor.warmup.options(
                    name=f"warmup:{phase.plan.label}"
                ).remote(phase.plan.label)
            else:
                phase.stage = "run"
                phase.cold_pending = True
                if self.engines[phase.plan.label] == "vllm":
                    run.actor.mark_cells_start.remote(phase.plan.label)  # before the cells
            run.active.append(phase)

    def _top_up(self, run: HostRun, phase: Phase) -> None:
        limit = phase.plan.spec.concurrency + QUEUE_AHEAD
        while phase.stage == "run" and not phase.exhausted and len(phase.inflight) < limit:
            cell = next(phase.cells, None)
            if cell is None:
                phase.exhausted = True
                break
            ref = run.actor.run_cell.options(name=cell.task_name).remote(cell, phase.cold_pending)
            phase.cold_pending = False
            deadline = time.monotonic() + phase.cell_deadline_s(self.max_attempts)
            phase.inflight[ref] = InFlight(cell, deadline)
        if phase.stage == "run" and phase.exhausted and not phase.inflight:
            self._finish_phase(run, phase)

    def _finish_phase(self, run: HostRun, phase: Phase) -> None:
        if phase.plan.spec.engine == "vllm":  # the server's own TTFT over the cells
            phase.stage = "check"
            phase.control_ref = run.actor.server_check.options(
                name=f"check:{phase.plan.label}"
            ).remote(phase.plan.label)
        elif phase.plan.spec.engine == "ollama":
            phase.stage = "unload"
            phase.control_ref = run.actor.unload.options(name=f"unload:{phase.plan.label}").remote(
                phase.plan.label
            )
        else:
            self._drop_phase(run, phase)

    def _drop_phase(self, run: HostRun, phase: Phase) -> None:
        phase.stage = "done"
        phase.control_ref = None
        if phase in run.active:
            run.active.remove(phase)
        self.sink.event("model_done", host=run.host, model=phase.plan.label)

    # --- the loop --------------------------------------------------------------------------
    def run(self) -> None:
        """Drive every host until all phases are done or lost."""
        import ray

        while True:
            refs: dict[Any, tuple[HostRun, Phase, str]] = {}
            for run in self.hosts:
                self._start_phases(run)
                for phase in list(run.active):
                    self._top_up(run, phase)
                    if phase.control_ref is not None:
                        refs[phase.control_ref] = (run, phase, phase.stage)
                    for ref in phase.inflight:
                        refs[ref] = (run, phase, "cell")
            if not refs and all(not r.active and not r.queue for r in self.hosts):
                return
            if refs:
                ready, rest = ray.wait(list(refs), num_returns=1, timeout=WAIT_TIMEOUT_S)
                if ready and rest:
                    more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                    ready += more
                for ref in ready:
                    run, phase, kind = refs[ref]
                    if not run.lost:
                        self._collect(run, phase, kind, ref)
            self._check_deadlines()
            self._check_liveness()
            self.sink.tick()

    def _collect(self, run: HostRun, phase: Phase, kind: str, ref: Any) -> None:
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError, TaskCancelledError

        try:
            value = ray.get(ref, timeout=30)
        except (RayActorError, GetTimeoutError) as exc:
            self.host_lost(
                run, f"client actor on node {run.node_id[:8]} died: {type(exc).__name__}"
            )
            return
        except TaskCancelledError:
            value = None
        except Exception as exc:  # a bug in the actor: keep the run going, record the cell
            value = exc
        if kind == "cell":
            flight = phase.inflight.pop(ref)
            if isinstance(value, dict):
                self.sink.record(value)
            else:
                self.sink.record(
                    self._failed(flight.cell, run, "protocol", f"cell task failed: {value}")
                )
        elif kind == "warmup":
            self.sink.event("warmup", host=run.host, model=phase.plan.label, result=value)
            phase.stage = "run"
            phase.control_ref = None
        elif kind == "unload":
            self.sink.event("unload", host=run.host, model=phase.plan.label, error=value)
            self._drop_phase(run, phase)
        elif kind == "check":
            check = value if isinstance(value, dict) else {"error": str(value)}
            self.sink.event("server_check", host=run.host, model=phase.plan.label, check=check)
            with self.sink.bundle.edit_manifest() as manifest:
                manifest.server_checks = {**(manifest.server_checks or {}), phase.plan.label: check}
            self._drop_phase(run, phase)

    def _check_deadlines(self) -> None:
        import ray

        now = time.monotonic()
        for run in self.hosts:
            for phase in run.active:
                for ref, flight in list(phase.inflight.items()):
                    if now > flight.deadline:
                        ray.cancel(ref, force=False)
                        del phase.inflight[ref]
                        budget = phase.cell_deadline_s(self.max_attempts)
                        self.sink.record(
                            self._failed(
                                flight.cell,
                                run,
                                "timeout",
                                f"no result within the driver's deadline ({budget:.0f} s)",
                            )
                        )

    def _check_liveness(self) -> None:
        import ray

        if time.monotonic() - self._last_liveness < LIVENESS_INTERVAL_S:
            return
        self._last_liveness = time.monotonic()
        try:
            alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        except Exception:
            return
        for run in self.hosts:
            if not run.lost and (run.active or run.queue) and run.node_id not in alive:
                self.host_lost(run, f"node {run.node_id[:8]} of host {run.host} is dead")

    def host_lost(self, run: HostRun, reason: str) -> None:
        """Record ``node_lost`` for every in-flight and pending cell of ``run``'s host."""
        run.lost = True
        self.sink.event("node_lost", host=run.host, node_id=run.node_id, reason=reason)
        phases = [*run.active, *run.queue]
        run.active.clear()
        run.queue.clear()
        for phase in phases:
            for flight in phase.inflight.values():
                self.sink.record(self._failed(flight.cell, run, "node_lost", reason))
            phase.inflight.clear()
            for cell in phase.cells:
                self.sink.record(self._failed(cell, run, "node_lost", reason))
            phase.stage = "done"

    def _failed(self, cell: Cell, run: HostRun, kind: str, error: str) -> dict[str, Any]:
        """An ``ok=false`` record for a cell that never produced a result."""
        engine = self.engines[cell.model]
        return self.sink.failed_record(cell, run.host, run.node_id, engine, kind, error)
