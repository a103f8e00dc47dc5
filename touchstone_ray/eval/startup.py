"""Each host's start-up as the first lane of its client actor: no barrier over the fleet.

Per host, inside the dispatcher's loop (:mod:`touchstone_ray.fleet.dispatch`) and beside every
other host, :class:`HostStart` makes these calls to the host's client actor:

1. ``ready`` and ``preflight``, submitted together (Ray queues them until the actor runs).
   ``ready``'s facts go into ``bundle.json`` ``hosts`` at once and the actor's pid to the
   host's monitor; an actor not ready within its deadline loses the host (``node_lost``
   records for its cells, as a dead node does).
2. When the preflight lands: a ``preflight`` event, each problem printed
   (``preflight: <host>: …``), the servers' facts into ``bundle.json`` ``servers``. With
   ``--strict-preflight`` a host with problems stops here: its cells never start and write
   no record (a later ``--resume`` runs them), the reason goes into the ``host_stopped``
   event and ``hosts.<host>.stopped_reason``, and the run exits 1; the other hosts go on.
3. The context check (:mod:`touchstone_ray.eval.context`) of each model of the host, with
   that host's ``context_limit``: one ``count_prompts`` call per model. A prompt that does not
   fit stops the whole run (:class:`~touchstone_ray.errors.UsageError`, exit 2) before this
   host sends any request.
4. Then the host's model lanes start (warm-up, baseline tick, cells).

Monitors start beside it (:meth:`MonitorSet.launch`); each host's capabilities and engine
processes reach the manifest when its monitor answers (:meth:`FleetStart.tick`).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.bundle import Bundle
from touchstone_ray.errors import RunError
from touchstone_ray.eval.context import (
    COUNT_TIMEOUT_S,
    context_entry,
    distinct_prompts,
    model_limit,
)
from touchstone_ray.eval.driver import HostRun, MatrixRunner
from touchstone_ray.eval.matrix import ModelPlan
from touchstone_ray.eval.sink import RecordSink
from touchstone_ray.fleet import Call, Lane, MonitorSet
from touchstone_ray.pack import Pack


def preflight_problems(host: str, result: dict[str, Any] | None, missing: str) -> list[str]:
    """The problems of one host's preflight answer, one line each (``missing``: the line for
    no answer at all)."""
    if result is None:
        return [f"{host}: {missing}"]
    problems: list[str] = []
    for label, entry in result.items():
        if not entry["reachable"]:
            problems.append(f"{host}: {label}: endpoint unreachable ({entry['error']})")
        elif not entry.get("model_served", True):
            problems.append(f"{host}: {label}: not served (server lists {entry['served']})")
    return problems


@dataclass
class FleetStart:
    """What every host's start-up shares: the run's inputs and what the hosts answered.

    ``ready_timeout_s``: how long a client actor may take to be scheduled and start (s);
    ``preflight_timeout_s``: how long its preflight may take after that (s).
    """

    pack: Pack
    plans: dict[str, list[ModelPlan]]
    bundle: Bundle
    sink: RecordSink
    monitors: MonitorSet
    strict_preflight: bool
    allow_cut: bool
    ready_timeout_s: float
    preflight_timeout_s: float
    preflight: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Host → model label → its preflight entry (``context_limit``, ``server_facts``, …)."""
    stopped: dict[str, str] = field(default_factory=dict)
    """Host → why it stopped before its cells (``--strict-preflight``)."""

    def lane(self, runner: MatrixRunner, run: HostRun) -> HostStart:
        """The start-up lane of ``run``'s host (the first lane of its client actor)."""
        return HostStart(self, runner, run)

    def tick(self) -> None:
        """Write the monitor answers that landed (capabilities, engine processes) into the
        manifest's ``hosts``; called once per dispatcher turn."""
        landed = self.monitors.poll()
        if not landed:
            return
        with self.bundle.edit_manifest() as manifest:
            for host, got in landed.items():
                entry = manifest.host(host)
                entry.capabilities = got["capabilities"]
                entry.engines = got["engines"]


class HostStart(Lane):
    """One host's start-up (see the module docstring); ``run.started`` turns true at its end."""

    def __init__(self, start: FleetStart, runner: MatrixRunner, run: HostRun) -> None:
        self.start = start
        self.runner = runner
        self.run = run
        self.models = start.plans.get(run.host, [])
        run.started = False
        actor = run.actor
        ready_s, preflight_s = start.ready_timeout_s, start.preflight_timeout_s
        self._calls: deque[Call] = deque(
            [
                Call(actor.ready, (), "ready", None, "ready", ready_s),
                Call(actor.preflight, (), "preflight", None, "preflight", ready_s + preflight_s),
            ]
        )
        self._context: dict[str, dict[str, Any]] = {}
        self._done = False

    @property
    def window(self) -> int:
        return max(2, len(self.models))

    def next_call(self) -> Call | None:
        return self._calls.popleft() if self._calls else None

    def finished(self) -> bool:
        return self._done

    def landed(self, call: Call, value: Any) -> None:
        if call.kind == "ready":
            if time.monotonic() > call.deadline:  # it landed, but after its deadline
                self.failed(call, "late", timed_out=True)
            else:
                self._ready(value)
        elif call.kind == "preflight":
            self._preflight(value if isinstance(value, dict) else None, "no preflight answer")
        elif call.kind == "count":
            plan, cells, limits = call.job
            entry = context_entry(plan, cells, value, limits, self.start.allow_cut)
            self._context[plan.label] = entry
            if len(self._context) == len(self.models):
                self.start.sink.event("context", host=self.run.host, models=self._context)
                self.run.started = True
                self._done = True

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        host = self.run.host
        if call.kind == "ready":
            if timed_out:
                reason = (
                    f"client actor could not be scheduled on node {self.run.node_id[:8]} "
                    f"within {call.budget_s:.0f} s"
                )
            else:
                reason = f"client actor failed to start: {error}"
            self.runner.host_lost(self.run, reason)
        elif call.kind == "preflight":
            missing = (
                f"no preflight answer within {self.start.preflight_timeout_s:.0f} s"
                if timed_out
                else f"preflight failed: {error}"
            )
            self._preflight(None, missing)
        else:
            label = call.job[0].label
            raise RunError(f"{host}: counting the prompts of {label} failed: {error}")

    def lost(self, calls: list[Call], reason: str) -> None:
        self._calls.clear()
        self._done = True

    def _ready(self, facts: dict[str, Any]) -> None:
        host, start = self.run.host, self.start
        with start.bundle.edit_manifest() as manifest:
            manifest.host(host).update(facts)
        start.monitors.register_pids_soon(host, [facts["client_pid"]])  # the driver's: at launch

    def _preflight(self, result: dict[str, Any] | None, missing: str) -> None:
        host, start = self.run.host, self.start
        start.sink.event("preflight", host=host, result=result)
        start.preflight[host] = result or {}
        problems = preflight_problems(host, result, missing)
        for problem in problems:
            print(f"preflight: {problem}", file=sys.stderr, flush=True)
        servers = {
            label: {k: entry[k] for k in ("engine_kind", "server_facts") if entry.get(k)}
            for label, entry in (result or {}).items()
        }
        servers = {label: server for label, server in servers.items() if server}
        if servers:
            with start.bundle.edit_manifest() as manifest:
                manifest.servers = {**(manifest.servers or {}), **servers}
        if problems and start.strict_preflight:
            self._stop(f"preflight failed ({len(problems)} problems): " + "; ".join(problems))
            return
        if not self.models:
            self.run.started = self._done = True
            return
        for plan in self.models:
            limits = model_limit(plan, start.preflight[host].get(plan.label) or {})
            cells = distinct_prompts(plan, start.pack)
            self._calls.append(
                Call(
                    self.run.actor.count_prompts,
                    (plan.label, cells, limits[0]),
                    f"count:{plan.label}",
                    (plan, cells, limits),
                    "count",
                    COUNT_TIMEOUT_S,
                )
            )

    def _stop(self, reason: str) -> None:
        """The host stops before its cells; the others go on."""
        host, start = self.run.host, self.start
        start.stopped[host] = reason
        start.sink.event("host_stopped", host=host, reason=reason)
        with start.bundle.edit_manifest() as manifest:
            manifest.host(host).stopped_reason = reason
        for phase in self.run.queue:
            phase.stage = "done"
        self._done = True
