"""Each host's start-up as the first lane of its client actor: no barrier over the fleet.

Per host, inside the dispatcher's loop (:mod:`touchstone_ray.fleet.dispatch`) and beside every
other host, :class:`HostStart` makes these calls to the host's client actor:

1. ``ready`` and ``preflight``, submitted together (Ray queues them until the actor runs).
   ``ready``'s facts go into ``bundle.json`` ``hosts`` at once and the actor's pid to the
   host's monitor; an actor not ready within its deadline loses the host (``node_lost``
   records for its cells, as a dead node does).
2. When the preflight lands: a ``preflight`` event, each problem printed
   (``preflight: <host>: …``) and each warning (``preflight: warning: <host>: …``: a chat
   template whose markers the served model does not know), the servers' facts and template
   checks into ``bundle.json`` ``servers``. With
   ``--strict-preflight`` a host with problems stops here: its cells never start and write
   no record (a later ``--resume`` runs them), the reason goes into the ``host_stopped``
   event and ``hosts.<host>.stopped_reason``, and the run exits 1; the other hosts go on.
3. The context check (:mod:`touchstone_ray.eval.context`) of each model of the host, with
   that host's ``context_limit``: one ``count_prompts`` call per model. A prompt that does not
   fit stops the whole run (:class:`~touchstone_ray.errors.UsageError`, exit 2) before this
   host sends any request. The context each model got goes into a ``context`` event and
   ``bundle.json`` ``models[].context``.
4. Then the host's model lanes start (warm-up, baseline tick, cells).

Monitors start beside it (:meth:`MonitorSet.launch`); each host's capabilities and engine
processes reach the manifest when its monitor answers (:meth:`FleetStart.tick`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.bundle import Bundle, ContextChoice
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
from touchstone_ray.fleet import Call, MonitorSet, PreflightStart, store_servers
from touchstone_ray.pack import Pack


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


class HostStart(PreflightStart):
    """One host's start-up (see the module docstring); ``run.started`` turns true at its end."""

    def __init__(self, start: FleetStart, runner: MatrixRunner, run: HostRun) -> None:
        ready_s, preflight_s = start.ready_timeout_s, start.preflight_timeout_s
        super().__init__(run.actor, run.host, run.node_id, ready_s, preflight_s)
        self.start = start
        self.runner = runner
        self.run = run
        self.models = start.plans.get(run.host, [])
        run.started = False
        self._context: dict[str, dict[str, Any]] = {}

    @property
    def window(self) -> int:
        return max(2, len(self.models))

    def finish(self, *, started: bool = True) -> None:
        super().finish(started=started)
        self.run.started = started

    def answered(self, call: Call, value: Any) -> None:
        if call.kind != "count":
            super().answered(call, value)
            return
        plan, cells, context = call.job
        entry = context_entry(plan, cells, value, context, self.start.allow_cut)
        self._context[plan.label] = entry
        if len(self._context) == len(self.models):
            self.start.sink.event("context", host=self.run.host, models=self._context)
            with self.start.bundle.edit_manifest() as manifest:
                for model in manifest.models:
                    if model.model in self._context:
                        got = self._context[model.model]
                        model.context = ContextChoice(
                            tokens=got["context_tokens"],
                            source=got["context_source"],
                            sent=got["context_sent"],
                        )
            self.finish()

    def call_failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        if call.kind != "count":
            super().call_failed(call, error, timed_out=timed_out)
            return
        label = call.job[0].label
        raise RunError(f"{self.run.host}: counting the prompts of {label} failed: {error}")

    def not_started(self, reason: str) -> None:
        self.runner.host_lost(self.run, reason)

    def ready(self, facts: dict[str, Any]) -> None:
        host, start = self.run.host, self.start
        with start.bundle.edit_manifest() as manifest:
            manifest.host(host).update(facts)
        start.monitors.register_pids_soon(host, [facts["client_pid"]])  # the driver's: at launch

    def preflighted(self, result: dict[str, Any] | None, problems: list[str]) -> None:
        host, start = self.run.host, self.start
        start.sink.event("preflight", host=host, result=result)
        start.preflight[host] = result or {}
        with start.bundle.edit_manifest() as manifest:
            store_servers(manifest, result)
        if problems and start.strict_preflight:
            self._stop(f"preflight failed ({len(problems)} problems): " + "; ".join(problems))
            return
        if not self.models:
            self.finish()
            return
        for plan in self.models:
            context = model_limit(plan, start.preflight[host].get(plan.label) or {})
            cells = distinct_prompts(plan, start.pack)
            self.queue(
                Call(
                    self.run.actor.count_prompts,
                    (plan.label, cells, context.tokens),
                    f"count:{plan.label}",
                    (plan, cells, context),
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
        self.finish(started=False)
