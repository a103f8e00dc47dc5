"""The perf points on the shared dispatcher (:mod:`touchstone_ray.fleet.dispatch`): per host
one pinned :class:`~touchstone_ray.perf.client.PerfClient` actor with two lanes.

1. :class:`PerfStart` (:class:`~touchstone_ray.fleet.HostStart`): ``ready`` and
   ``preflight``. The host's facts and its monitor's capabilities go into ``bundle.json``
   ``hosts``, the actor's pid to the host's monitor; then a ``preflight`` event, each
   endpoint's ``context_limit`` and the servers' facts (``servers``).
2. :class:`HostPoints`, one call at a time: the host's models one after another in plan
   order, each with its baseline tick, ``model_start``, warm-up, prompt fitting (``fit``
   event), every point not yet complete in plan order (its requests written the moment it
   returns, then ``point_done``), the capacity search (``capacity`` event and
   ``bundle.json`` ``capacity``), the rate sweep (``--sweep``: ``sweep`` event and
   ``bundle.json`` ``sweep``), the embeddings run, ``model_done``.

Different hosts run at once, each as soon as its own actor is ready. Every call has a
deadline derived from the endpoint's engine settings
(:func:`~touchstone_ray.fleet.dispatch.call_deadline_s`, see :func:`point_deadline_s`,
:func:`fit_deadline_s`, :func:`embed_deadline_s`). A call that fails or passes its deadline
ends its model (``model_failed``, counted as failed; the host goes on with its next model); a
host whose actor does not start in time, or whose node or actor dies, ends every model it
has not done the same way, while the other hosts go on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from touchstone_ray.bundle import Bundle
from touchstone_ray.config import FleetConfig
from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.fleet import (
    Call,
    Dispatcher,
    HostClients,
    HostStart,
    Lane,
    Pinned,
    actor_ready_timeout_s,
    call_deadline_s,
)
from touchstone_ray.perf.capacity import (
    CapacitySearch,
    SweepSearch,
    capacity_line,
    capacity_points,
    sweep_line,
)
from touchstone_ray.perf.options import PerfOptions
from touchstone_ray.perf.plan import ModelPoints, Point, runs_at
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.perf.summary import point_figures, slo_share
from touchstone_ray.perf.workload import MAX_COUNTS
from touchstone_ray.perf.writer import PerfWriter

__all__ = [
    "HostPoints",
    "PerfFleet",
    "PerfStart",
    "embed_deadline_s",
    "fit_deadline_s",
    "point_deadline_s",
]

REQUESTS_PER_COUNT = 2
"""HTTP requests one token count may send (llama.cpp: ``/apply-template``, ``/tokenize``)."""


def point_deadline_s(settings: EngineSettings, point: Point) -> float:
    """How long (s) the driver waits for one point: a warm-up round, then
    ``ceil(runs / concurrency)`` rounds of requests, each round one request per stream with its
    every attempt (:func:`~touchstone_ray.fleet.dispatch.call_deadline_s` with that many
    calls). An open-loop point: its schedule's span (``runs / rate`` s, the last due one
    sent then), plus a warm-up request and the last request's every attempt (2 calls)."""
    if point.rate is not None:
        return point.runs / point.rate + call_deadline_s(settings, calls=2)
    rounds = -(-point.runs // point.concurrency) + 1
    return call_deadline_s(settings, calls=rounds)


def fit_deadline_s(settings: EngineSettings, n_contexts: int) -> float:
    """How long (s) the driver waits for a model's prompt fitting: up to
    :data:`~touchstone_ray.perf.workload.MAX_COUNTS` token counts per context, each up to
    :data:`REQUESTS_PER_COUNT` requests (:func:`~touchstone_ray.fleet.dispatch.call_deadline_s`
    with that many calls)."""
    return call_deadline_s(settings, calls=n_contexts * MAX_COUNTS * REQUESTS_PER_COUNT)


def embed_deadline_s(settings: EngineSettings, n_batches: int) -> float:
    """How long (s) the driver waits for a model's embeddings run: ``n_batches`` requests one
    after another (:func:`~touchstone_ray.fleet.dispatch.call_deadline_s`)."""
    return call_deadline_s(settings, calls=n_batches)


class PerfFleet:
    """The per-host perf actors, monitors and lanes of one run, and what they found.

    ``done``: prefixes of the points already complete (``--resume``), skipped; ``existing``:
    the requests already stored (the capacity search reuses them).
    """

    def __init__(
        self,
        config: FleetConfig,
        plans: dict[str, list[ModelPoints]],
        nodes: dict[str, Any],
        bundle: Bundle,
        writer: PerfWriter,
        opts: PerfOptions,
        done: set[str],
        existing: list[PerfResponse],
        lockstep: bool = False,
    ) -> None:
        self.config = config
        self.plans = plans
        self.nodes = nodes
        self.bundle = bundle
        self.writer = writer
        self.opts = opts
        self.done = done
        self.existing = existing
        self.lockstep = lockstep
        self.clients = HostClients(bundle, writer.event)
        """Each host's client and monitor."""
        self.capacity: dict[str, Any] = {}
        """``model|host`` → the capacity search's entry (``--capacity``)."""
        self.sweep: dict[str, Any] = {}
        """``model|host`` → the rate sweep's entry (``--sweep``)."""
        self.errors: list[str] = []
        """One line per model that failed: ``<host>: <model>: <why>``."""
        self.ran: dict[str, list[PerfResponse]] = {}
        """Point prefix → the requests this run measured for it (the capacity search reuses
        the matrix's points)."""
        self.lost: set[str] = set()
        """Hosts whose actor did not start or whose node or actor died."""
        self.dispatcher = Dispatcher(on_tick=self._tick)
        self._pinned: dict[str, Pinned] = {}
        self._stopped = False

    def start(self) -> None:
        """Create each host's actor (pinned) and start the monitors (each within
        :class:`MonitorSet`'s own deadline), then put each host's lanes on the dispatcher;
        no actor is waited for here."""
        from touchstone_ray.perf.client import perf_client_spec

        sched = self.config.scheduling.model_dump()
        sched["cache_bust"] = True
        specs = {
            host: perf_client_spec(
                host,
                self.nodes[host].node_id,
                {m.label: m.spec for m in models},
                name=f"perf:{host}:{self.bundle.root.name}",
                scheduling=sched,
                max_attempts=self.config.scheduling.max_attempts,
                run_id=self.bundle.root.name,
            )
            for host, models in self.plans.items()
        }
        self.clients.start(
            self.config,
            specs,
            {h: [(m.label, m.spec) for m in ms] for h, ms in self.plans.items()},
        )
        ready_s = actor_ready_timeout_s()

        def lanes(host: str) -> list[Lane]:
            start = PerfStart(self, host, ready_s)
            return [start, HostPoints(self, host, start)]

        nodes = {host: self.nodes[host].node_id for host in self.plans}
        self._pinned = self.clients.pin(self.dispatcher, nodes, lanes, self.lost)

    def run(self) -> None:
        """Run every host's lanes to their end."""
        self.dispatcher.run()

    def lose(self, host: str, reason: str) -> None:
        """``host`` is gone (``reason``, one line): every model it has not done fails."""
        self.dispatcher.lose(self._pinned[host], reason)

    def _tick(self) -> None:
        self.clients.poll()

    def record_point(self, label: str, point: Point, records: list[dict[str, Any]]) -> None:
        """Write one point's requests at once, keep them for the capacity search, and say
        ``point_done``."""
        self.writer.records(label, records)
        self.ran[point.prefix] = [PerfResponse.model_validate(r) for r in records]
        self.writer.event(
            "point_done",
            point=point.prefix,
            n=len(records),
            ok=sum(1 for r in records if r.get("ok")),
        )

    def stored(self, point: Point) -> list[PerfResponse]:
        """The requests of ``point`` measured in this run, else those stored before."""
        return self.ran.get(point.prefix) or [
            r for r in self.existing if r.key.rsplit("|", 1)[0] == point.prefix
        ]

    def model_failed(self, host: str, label: str, why: str) -> None:
        """Record model ``label`` of ``host`` as failed (``model_failed``, one error line)."""
        msg = f"{host}: {label}: {why}"
        self.errors.append(msg)
        self.writer.event("model_failed", host=host, model=label, error=msg)

    def stop(self) -> None:
        """Close the clients and stop the monitors (once; :meth:`HostClients.stop`)."""
        self.clients.stop(self.lost)


class PerfStart(HostStart):
    """One host's start (see the module docstring); its points wait for :attr:`started`."""

    def __init__(self, fleet: PerfFleet, host: str, ready_timeout_s: float) -> None:
        super().__init__(fleet.clients, host, fleet.nodes[host].node_id, ready_timeout_s)
        self.fleet = fleet

    def not_started(self, reason: str) -> None:
        self.fleet.lose(self.host, reason)


class HostPoints(Lane):
    """One host's models, one call at a time (see the module docstring).

    Stages of the model in hand: ``baseline`` → ``start`` → ``warmup`` → ``fit`` →
    ``points`` → ``capacity`` → ``embed`` → ``model_done``, then ``next`` (the next model).
    """

    def __init__(self, fleet: PerfFleet, host: str, start: PerfStart) -> None:
        self.fleet = fleet
        self.host = host
        self.start = start
        self.actor = fleet.clients.actors[host]
        self.queue: deque[ModelPoints] = deque(fleet.plans[host])
        self.model: ModelPoints | None = None
        self.stage = "next"
        self.settings: EngineSettings | None = None
        self.points: deque[Point] = deque()
        self.search: CapacitySearch | None = None
        self.sweeping: SweepSearch | None = None
        self._done = False

    @property
    def window(self) -> int:
        return 1

    def finished(self) -> bool:
        return self._done

    def next_call(self) -> Call | None:
        if not self.start.started:
            return None
        while not self._done:
            call = self._step()
            if call is not None:
                return call
        return None

    def _call(self, method: Any, args: tuple[Any, ...], name: str, job: Any, kind: str) -> Call:
        return Call(method, args, name, job, kind, self._deadline_s(kind, job))

    def _deadline_s(self, kind: str, job: Any) -> float:
        settings, opts = self.settings, self.fleet.opts
        assert settings is not None
        if kind in ("point", "capacity", "sweep"):
            return point_deadline_s(settings, job)
        if kind == "fit":
            return fit_deadline_s(settings, len(job))
        if kind == "embed":
            return embed_deadline_s(settings, -(-opts.embed_chunks // opts.embed_batch))
        return call_deadline_s(settings)

    def _step(self) -> Call | None:
        """Move the model in hand one stage on; the call to make there, if any."""
        fleet, opts = self.fleet, self.fleet.opts
        if self.stage == "next":
            if not self.queue:
                self._done = True
                return None
            self.model = self.queue.popleft()
            scheduling = fleet.config.scheduling
            self.settings = self.model.spec.engine_settings(
                None,
                max_attempts=scheduling.max_attempts,
                engine_down_timeout_s=scheduling.engine_down_timeout_s,
            )
            self.stage = "baseline"
        m = self.model
        assert m is not None
        label = m.label
        if self.stage == "baseline":
            self.stage = "start"
            monitors = fleet.clients.monitors
            method = monitors.baseline_method(self.host) if monitors is not None else None
            if method is not None:
                assert monitors is not None
                name, budget = f"baseline:{label}", monitors.call_timeout_s
                return Call(method, (label,), name, None, "baseline", budget, other_actor=True)
        if self.stage == "start":
            fleet.writer.event("model_start", host=self.host, model=label)
            self.stage = "warmup"
        if self.stage == "warmup":
            self.stage = "fit"
            if fleet.config.scheduling.warmup:
                return self._call(self.actor.warmup, (label,), f"warmup:{label}", None, "warmup")
        if self.stage == "fit":
            self.stage = "points"
            self.points = deque(p for p in m.points if p.prefix not in fleet.done)
            contexts = sorted({p.context for p in m.points} | self._extra_contexts())
            fit = (label, contexts, fleet.clients.limits.get(label))
            return self._call(self.actor.fit, fit, f"fit:{label}", contexts, "fit")
        if self.stage == "points":
            if self.points:
                return self._point_call(self.points.popleft(), "point")
            self.stage = "capacity"
        if self.stage == "capacity":
            call = self._capacity_call() if opts.capacity else None
            if call is not None:
                return call
            self.stage = "sweep"
        if self.stage == "sweep":
            call = self._sweep_call() if opts.sweep else None
            if call is not None:
                return call
            self.stage = "embed"
        if self.stage == "embed":
            self.stage = "model_done"
            if opts.embed:
                embed = (label, opts.embed_chunks, opts.embed_tokens, opts.embed_batch)
                return self._call(self.actor.run_embed, embed, f"embed:{label}", None, "embed")
        fleet.writer.event("model_done", host=self.host, model=label)
        self._next_model()
        return None

    def _point_call(self, point: Point, kind: str) -> Call:
        args = (point.__dict__, self.fleet.opts.output_tokens, 1, self.fleet.lockstep)
        return self._call(self.actor.run_point, args, f"perf:{point.prefix}", point, kind)

    def _capacity_call(self) -> Call | None:
        """The next point the capacity search needs run; ``None`` when it is over (its entry
        written). Points whose requests are already here are not run again."""
        fleet, opts, m = self.fleet, self.fleet.opts, self.model
        assert m is not None
        search = self.search = self.search or CapacitySearch()
        ctx = min(opts.contexts)
        while search.next is not None:
            c = search.next
            point = Point(m.label, m.host, ctx, c, runs_at(opts.runs, c))
            have = fleet.stored(point)
            if len(have) < point.runs:
                return self._point_call(point, "capacity")
            search.record(slo_share(have, opts.slo))
        assert search.capacity is not None
        self._write_capacity(m, ctx, search.capacity, search.tried)
        return None

    def _extra_contexts(self) -> set[int]:
        """The context (tokens) the capacity search and the sweep run at, when they run."""
        opts = self.fleet.opts
        return {min(opts.contexts)} if opts.capacity or opts.sweep else set()

    def _sweep_point(self, step: tuple[str, float]) -> Point:
        m, opts = self.model, self.fleet.opts
        assert m is not None
        ctx = min(opts.contexts)
        kind, value = step
        if kind == "closed":
            c = int(value)
            return Point(m.label, m.host, ctx, c, runs_at(opts.runs, c))
        return opts.open_loop().point(m.label, m.host, ctx, value)

    def _sweep_call(self) -> Call | None:
        """The next point the rate sweep needs run (:class:`SweepSearch`); ``None`` when it is
        over (its entry written). Points already measured are not run again."""
        fleet, opts, m = self.fleet, self.fleet.opts, self.model
        assert m is not None
        if self.sweeping is None:
            self.sweeping = SweepSearch(opts.sweep_points, max(opts.concurrency), opts.slo)
        search = self.sweeping
        while search.next is not None:
            point = self._sweep_point(search.next)
            have = fleet.stored(point)
            if not have:
                return self._point_call(point, "sweep")
            search.record(point_figures(have, opts.slo))
        self._write_sweep(m, search)
        return None

    def _write_sweep(self, m: ModelPoints, search: SweepSearch) -> None:
        fleet, slo = self.fleet, self.fleet.opts.slo
        best = search.result
        entry = {
            "model": m.label,
            "host": m.host,
            "context": min(fleet.opts.contexts),
            "slo": slo,
            "closed_loop_rps": {str(c): v for c, v in search.closed_rps.items()},
            "saturation_concurrency": search.saturation_concurrency,
            "rates": search.rates,
            "sustainable_rate": best["rate"] if best else None,
            "goodput_rps": best["goodput_rps"] if best else None,
            "line": sweep_line(m.label, m.host, best, slo),
        }
        key = f"{m.label}|{m.host}"
        fleet.sweep[key] = entry
        with fleet.bundle.edit_manifest() as manifest:
            manifest.sweep = {**(manifest.sweep or {}), key: entry}
        fleet.writer.event(
            "sweep", model=m.label, host=m.host, sustainable_rate=entry["sustainable_rate"]
        )

    def _write_capacity(
        self, m: ModelPoints, ctx: int, found: int, tried: dict[int, float | None]
    ) -> None:
        fleet, slo = self.fleet, self.fleet.opts.slo
        entry = {
            "model": m.label,
            "host": m.host,
            "context": ctx,
            "capacity": found,
            "slo": slo,
            "tried": {str(k): v for k, v in sorted(tried.items())},
            "points": capacity_points(m.label, m.host, ctx, tried),
            "line": capacity_line(m.label, m.host, found, slo),
        }
        key = f"{m.label}|{m.host}"
        fleet.capacity[key] = entry
        with fleet.bundle.edit_manifest() as manifest:
            manifest.capacity = {**(manifest.capacity or {}), key: entry}
        fleet.writer.event("capacity", model=m.label, host=m.host, capacity=found)

    def _next_model(self) -> None:
        self.model, self.settings, self.search, self.sweeping = None, None, None, None
        self.points.clear()
        self.stage = "next"

    def landed(self, call: Call, value: Any) -> None:
        fleet, m = self.fleet, self.model
        assert m is not None
        if call.kind == "baseline":
            if isinstance(value, dict) and fleet.clients.monitors is not None:
                fleet.clients.monitors.write_baseline(self.host, value)
        elif call.kind == "fit":
            contexts = {str(k): v for k, v in value.items()}
            fleet.writer.event("fit", host=self.host, model=m.label, contexts=contexts)
        elif call.kind in ("point", "capacity", "sweep"):
            fleet.record_point(m.label, call.job, value)
            if call.kind == "capacity" and self.search is not None:
                self.search.record(slo_share(fleet.ran[call.job.prefix], fleet.opts.slo))
            if call.kind == "sweep" and self.sweeping is not None:
                figures = point_figures(fleet.ran[call.job.prefix], fleet.opts.slo)
                self.sweeping.record(figures)
        elif call.kind == "embed":
            fleet.writer.embeds(m.label, value)

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        if call.kind == "baseline":  # no tick (monitor lost or slow): the model starts
            return
        assert self.model is not None
        self.fleet.model_failed(self.host, self.model.label, error)
        self._next_model()

    def lost(self, calls: list[Call], reason: str) -> None:
        left: Iterable[ModelPoints] = [*([self.model] if self.model else []), *self.queue]
        for m in left:
            self.fleet.model_failed(self.host, m.label, reason)
        self.queue.clear()
        self._next_model()
        self._done = True
