"""The tools cells on the shared dispatcher (:mod:`touchstone_ray.fleet.dispatch`): per host
one pinned :class:`~touchstone_ray.tools.client.ToolsClient` actor with two lanes.

1. :class:`ToolsStart` (:class:`~touchstone_ray.fleet.PreflightStart`): ``ready`` and
   ``preflight``; the host's facts go into ``bundle.json`` ``hosts``, each endpoint's context
   limit and server facts are kept.
2. :class:`HostCells`: the run's pack to the actor (``use_pack``), then the host's models one
   after another in config order, each with its baseline tick, its tool-support check (a
   server that cannot take tool calls is refused with one line naming the fix, its cells
   left without a record), its context check (a cell whose first request does not fit the
   model's context is recorded as a ``context`` failure without being sent) and its cells, up
   to the model's ``concurrency`` at once.

A cell's result is checked on the driver (:class:`CheckPool`: the code checks run sandboxed,
up to 20 s, so never on the dispatcher's thread) and written when its checks are through.
Transport errors are not model results: the engine retried each request already
(``max_attempts``); a failed cell is written with ``ok: false``, and three failed cells in a
row stop the model (its other cells get no record, so ``--resume`` runs exactly those).
"""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from touchstone_ray.bundle import AgentEntry, Footprint
from touchstone_ray.checks import run_checks, verdict
from touchstone_ray.config import FleetConfig, ModelSpec
from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.errors import ErrorKind, writes_into
from touchstone_ray.fleet import (
    AgentClient,
    Call,
    Dispatcher,
    Lane,
    MonitorSet,
    Pinned,
    PreflightStart,
    actor_ready_timeout_s,
    agent_entries,
    call_deadline_s,
    close_actors,
    estimate_prompt_tokens,
    start_clients,
    store_servers,
)
from touchstone_ray.storage import JsonlWriter
from touchstone_ray.tool_records import ToolsRecord, tools_key
from touchstone_ray.toolpack import ToolItem, ToolsPack
from touchstone_ray.tools.bundle import ToolsBundle
from touchstone_ray.tools.client import ToolsCell, tools_client_spec
from touchstone_ray.tools.loop import first_messages

__all__ = [
    "FAILS_IN_A_ROW",
    "CheckPool",
    "HostCells",
    "ModelCells",
    "ToolsFleet",
    "ToolsStart",
    "ToolsWriter",
    "cell_record",
    "prompt_need",
]

FAILS_IN_A_ROW = 3
"""Failed cells in a row (transport errors) that stop a model."""


@dataclass
class ModelCells:
    """One model's cells still to run in this run."""

    label: str
    spec: ModelSpec
    host: str
    cells: list[tuple[ToolItem, int]]
    """``(item, repeat)`` in pack order, those already ok left out."""


def prompt_need(pack: ToolsPack, item: ToolItem) -> int:
    """Tokens the first request of ``item`` needs before its answer: the documented estimate
    of its messages (:func:`~touchstone_ray.fleet.estimate_prompt_tokens`, ``ceil(chars / 3)
    + 8`` per message) plus the tool schemas' JSON at the same rate."""
    messages = [
        {"content": str(m.get("content") or "") + json.dumps(m.get("tool_calls") or "")}
        for m in first_messages(pack, item)
    ]
    tools = json.dumps([t.as_openai() for t in pack.offered(item)], ensure_ascii=False)
    return estimate_prompt_tokens([*messages, {"content": tools}]).tokens


def cell_record(pack: ToolsPack, raw: dict[str, Any]) -> ToolsRecord:
    """The record of one cell from the client's answer (``ToolsClient.run_tools_cell``): its
    checks run here (sandboxed code included) when the loop got through."""
    record = ToolsRecord(pack_id=pack.id, pack_version=pack.version, **raw)
    if record.ok:
        item = pack.item(record.item_id)
        record.checks = run_checks(pack, item, record.turns)
        record.passed, record.not_measured = verdict(record.checks)
    return record


class ToolsWriter:
    """The run's one writer: the cell shards (``cells/<model>.jsonl``, one ``write`` per line,
    synced) and the event log; counts cells written, ok, failed and passed."""

    def __init__(self, bundle: ToolsBundle) -> None:
        self.bundle = bundle
        self.shards: dict[str, Any] = {}
        self.events = JsonlWriter(bundle.layout.events)
        self.n_ok = 0
        self.n_failed = 0
        self.n_passed = 0
        self.failures_by_kind: dict[str, int] = {}

    def cell(self, record: ToolsRecord) -> None:
        """Append ``record`` to its model's shard and sync it."""
        with writes_into(self.bundle.root, "tools"):
            writer = self.shards.get(record.model)
            if writer is None:
                writer = self.shards[record.model] = self.bundle.cells.writer(record.model)
            writer.write(record.model_dump(mode="json"))
            writer.sync()
        if record.ok:
            self.n_ok += 1
            self.n_passed += bool(record.passed)
        else:
            self.n_failed += 1
            kind = record.error_kind or "unknown"
            self.failures_by_kind[kind] = self.failures_by_kind.get(kind, 0) + 1
        self.event("cell_done", key=record.key, ok=record.ok, passed=record.passed)

    def event(self, name: str, **fields: Any) -> None:
        """Append ``{"event": name, "ts": <epoch s>, **fields}`` to ``events.jsonl``."""
        import time

        with writes_into(self.bundle.root, "tools"):
            self.events.write({"event": name, "ts": time.time(), **fields})
            self.events.sync_if_due()

    def close(self) -> None:
        """Close every shard and the event log."""
        with writes_into(self.bundle.root, "tools"):
            for writer in self.shards.values():
                writer.close()
            self.events.close()


class CheckPool:
    """Runs each landed cell's checks in worker threads (the code checks wait on sandboxed
    subprocesses) and hands the records to the writer in the dispatcher's thread
    (:meth:`drain`), so one thread writes the bundle."""

    def __init__(self, pack: ToolsPack, writer: ToolsWriter, workers: int = 2) -> None:
        self.pack = pack
        self.writer = writer
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="checks")
        self._pending: deque[Future[ToolsRecord]] = deque()

    def submit(self, raw: dict[str, Any]) -> None:
        """Check ``raw`` (a client's answer) in the background."""
        self._pending.append(self._pool.submit(cell_record, self.pack, raw))

    def write_now(self, record: ToolsRecord) -> None:
        """Write a record that needs no checks (a failed or refused cell), after those before."""
        done: Future[ToolsRecord] = Future()
        done.set_result(record)
        self._pending.append(done)
        self.drain()

    def drain(self) -> None:
        """Write every record whose checks are through, in the order the cells landed."""
        while self._pending and self._pending[0].done():
            self.writer.cell(self._pending.popleft().result())

    def close(self) -> None:
        """Wait for every check and write its record."""
        while self._pending:
            self.writer.cell(self._pending.popleft().result())
        self._pool.shutdown()


@dataclass
class ToolsFleet:
    """The per-host tools actors, monitors and lanes of one run, and what they found."""

    config: FleetConfig
    pack: ToolsPack
    plans: dict[str, list[ModelCells]]
    nodes: dict[str, Any]
    bundle: ToolsBundle
    writer: ToolsWriter
    checks: CheckPool
    actors: dict[str, Any] = field(default_factory=dict)
    monitors: MonitorSet | None = None
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)
    limits: dict[str, int | None] = field(default_factory=dict)
    """Model label → the server's context limit (tokens) from the preflight."""
    stopped: dict[str, str] = field(default_factory=dict)
    """Model label (or host) → why its cells stopped before they all ran."""
    lost: set[str] = field(default_factory=set)
    harness_s: list[float] = field(default_factory=list)
    """Every cell's time between a reply's end and the next turn's request (s)."""

    def __post_init__(self) -> None:
        self.dispatcher = Dispatcher(on_tick=self._tick)
        self._pinned: dict[str, Pinned] = {}
        self._stopped_once = False

    def start(self) -> None:
        """Create each host's actor (pinned) and start the monitors, then put each host's
        lanes on the dispatcher; no actor is waited for here."""
        from touchstone_ray.telemetry.engines import EngineTarget

        specs = {
            host: tools_client_spec(
                host,
                self.nodes[host].node_id,
                {m.label: m.spec for m in models},
                name=f"tools:{host}:{self.bundle.root.name}",
                pack=self.pack,
                scheduling=self.config.scheduling.model_dump(),
                max_attempts=self.config.scheduling.max_attempts,
                run_id=self.bundle.root.name,
            )
            for host, models in self.plans.items()
        }
        self.actors.update(start_clients(specs, self.bundle.root.name))
        agents = agent_entries(self.actors)
        if agents:
            self.bundle.update_manifest(agents={h: AgentEntry(**a) for h, a in agents.items()})
        self.monitors = MonitorSet(
            self.bundle.root,
            self.config.monitor.interval_s,
            self.config.monitor.gpu,
            autodrain_s=1.0,
            agents={h: a for h, a in self.actors.items() if isinstance(a, AgentClient)},
        )
        targets = {
            h: [EngineTarget.from_spec(m.label, m.spec.model_dump()) for m in ms]
            for h, ms in self.plans.items()
        }
        self.capabilities = self.monitors.start(
            {h: self.nodes[h].node_id for h in self.plans}, targets
        )
        ready_s = actor_ready_timeout_s()
        for host in self.plans:
            start = ToolsStart(self, host, ready_s)
            node_id = self.nodes[host].node_id
            pinned = Pinned(f"host {host}", node_id, self.actors[host], role="client actor")
            pinned.lanes = [start, HostCells(self, host, start)]
            pinned.on_lost = lambda reason, host=host: self.lost.add(host)
            self._pinned[host] = pinned
            self.dispatcher.add(pinned)

    def run(self) -> None:
        """Run every host's lanes to their end, then write the last checked records."""
        self.dispatcher.run()
        self.checks.close()

    def _tick(self) -> None:
        self.checks.drain()
        if self.monitors is not None:
            self.monitors.poll()

    def stop_model(self, host: str, label: str, why: str) -> None:
        """Model ``label``'s remaining cells will not run (``model_failed``, one line)."""
        self.stopped[label] = why
        self.writer.event("model_failed", host=host, model=label, error=why)
        print(f"tools: {host}: {label}: {why}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """Close the actors and stop the monitors (once); the monitors' footprint goes into
        ``bundle.json`` ``hosts``."""
        if self._stopped_once:
            return
        self._stopped_once = True
        close_actors(self.actors, self.lost)
        if self.monitors is not None:
            footprint = self.monitors.footprint()
            self.monitors.stop()
            with self.bundle.edit_manifest() as manifest:
                for host, entry in manifest.hosts.items():
                    if host in footprint:
                        entry.touchstone_footprint = Footprint.model_validate(footprint[host])


class ToolsStart(PreflightStart):
    """One host's start (see the module docstring); its cells wait for :attr:`started`."""

    def __init__(self, fleet: ToolsFleet, host: str, ready_timeout_s: float) -> None:
        super().__init__(fleet.actors[host], host, fleet.nodes[host].node_id, ready_timeout_s)
        self.fleet = fleet

    def ready(self, facts: dict[str, Any]) -> None:
        fleet = self.fleet
        with fleet.bundle.edit_manifest() as manifest:
            entry = manifest.host(self.host)
            entry.update(facts)
            entry.capabilities = fleet.capabilities.get(self.host, {})
        if fleet.monitors is not None:
            fleet.monitors.register_pids_soon(self.host, [facts["client_pid"]])

    def preflighted(self, result: dict[str, dict[str, Any]] | None, problems: list[str]) -> None:
        fleet = self.fleet
        fleet.writer.event("preflight", host=self.host, result=result)
        for label, found in (result or {}).items():
            fleet.limits[label] = found.get("context_limit")
        with fleet.bundle.edit_manifest() as manifest:
            store_servers(manifest, result)
        self.finish()

    def not_started(self, reason: str) -> None:
        fleet = self.fleet
        fleet.lost.add(self.host)
        for m in fleet.plans[self.host]:
            fleet.stop_model(self.host, m.label, reason)


class HostCells(Lane):
    """One host's models, one after another (see the module docstring)."""

    def __init__(self, fleet: ToolsFleet, host: str, start: ToolsStart) -> None:
        self.fleet = fleet
        self.host = host
        self.start = start
        self.actor = fleet.actors[host]
        self.queue: deque[ModelCells] = deque(fleet.plans[host])
        self.model: ModelCells | None = None
        self.stage = "pack"
        self.settings: EngineSettings | None = None
        self.cells: Iterator[tuple[ToolItem, int]] = iter(())
        self.in_flight = 0
        self.fails_in_a_row = 0
        self._done = False

    @property
    def window(self) -> int:
        return self.model.spec.concurrency if self.model is not None else 1

    def finished(self) -> bool:
        return self._done

    def next_call(self) -> Call | None:
        if not self.start.started:
            if self.start.finished():  # the actor never started: nothing will run here
                self._done = True
            return None
        while not self._done:
            call = self._step()
            if call is not None:
                return call
            if self.stage in ("pack_wait", "wait", "cells"):  # an answer is awaited
                return None
        return None

    def _step(self) -> Call | None:
        fleet = self.fleet
        if self.stage == "pack":
            self.stage = "pack_wait"
            pack = fleet.pack.model_dump(mode="json")
            return Call(self.actor.use_pack, (pack,), "tools:pack", None, "pack", 60.0)
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
            self.fails_in_a_row = 0
            self.stage = "baseline"
            fleet.writer.event("model_start", host=self.host, model=self.model.label)
        m = self.model
        assert m is not None and self.settings is not None
        if self.stage == "baseline":
            self.stage = "support"
            monitors = fleet.monitors
            method = monitors.baseline_method(self.host) if monitors is not None else None
            if method is not None:
                assert monitors is not None
                budget = monitors.call_timeout_s
                name = f"baseline:{m.label}"
                return Call(method, (m.label,), name, None, "baseline", budget, other_actor=True)
        if self.stage == "support":
            self.stage = "wait"
            budget = call_deadline_s(self.settings)
            return Call(
                self.actor.tool_support,
                (m.label,),
                f"tools:support:{m.label}",
                None,
                "support",
                budget,
            )
        if self.stage == "cells":
            if self.in_flight >= self.window:
                return None
            for item, repeat in self.cells:
                call = self._cell_call(m, item, repeat)
                if call is not None:
                    return call
            if self.in_flight == 0:
                self._model_done()
            return None
        return None

    def _cell_call(self, m: ModelCells, item: ToolItem, repeat: int) -> Call | None:
        """The call for one cell, or ``None`` when the context check refused it (recorded)."""
        fleet = self.fleet
        key = tools_key(m.label, item.id, repeat)
        headroom = m.spec.reasoning_headroom_tokens or None
        limit = fleet.limits.get(m.label) or m.spec.context_tokens
        need = prompt_need(fleet.pack, item) + (item.max_tokens or 0)
        if limit is not None and need > limit:
            fleet.checks.write_now(
                ToolsRecord(
                    key=key,
                    pack_id=fleet.pack.id,
                    pack_version=fleet.pack.version,
                    model=m.label,
                    engine=m.spec.engine,
                    host=self.host,
                    node_id=fleet.nodes[self.host].node_id,
                    item_id=item.id,
                    repeat=repeat,
                    ok=False,
                    error_kind="context",
                    error=f"the first request needs about {need} tokens (estimated), the "
                    f"model's context is {limit}: not sent",
                )
            )
            return None
        cell = ToolsCell(key, m.label, item.id, repeat, headroom)
        assert self.settings is not None
        budget = call_deadline_s(self.settings, calls=item.max_turns)
        self.in_flight += 1
        return Call(self.actor.run_tools_cell, (cell,), cell.task_name, cell, "cell", budget)

    def _model_done(self) -> None:
        assert self.model is not None
        self.fleet.writer.event("model_done", host=self.host, model=self.model.label)
        self.model = None
        self.stage = "next"

    def landed(self, call: Call, value: Any) -> None:
        m = self.model
        if call.kind == "pack":
            self.stage = "next"
            return
        if call.kind == "support":
            assert m is not None
            if isinstance(value, str):
                self.fleet.stop_model(self.host, m.label, value)
                self._model_done()
            else:
                self.cells = iter(m.cells)
                self.stage = "cells"
            return
        if call.kind != "cell":
            return
        self.in_flight -= 1
        self.fleet.harness_s.extend(value.get("harness_s") or [])
        self.fleet.checks.submit(value)
        self._count(m, bool(value.get("ok")), value.get("error"))

    def _count(self, m: ModelCells | None, ok: bool, error: str | None) -> None:
        """Three failed cells in a row stop the model (its other cells get no record)."""
        self.fails_in_a_row = 0 if ok else self.fails_in_a_row + 1
        if m is not None and self.fails_in_a_row >= FAILS_IN_A_ROW and self.stage == "cells":
            why = f"{FAILS_IN_A_ROW} cells in a row failed (last: {error}); --resume runs the rest"
            self.fleet.stop_model(self.host, m.label, why)
            self.cells = iter(())

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        m = self.model
        if call.kind == "pack":
            self.lost([], f"the client did not take the pack: {error}")
            return
        if call.kind == "support":  # the check itself failed: go on, the cells will say
            if m is not None:
                self.cells = iter(m.cells)
                self.stage = "cells"
            return
        if call.kind != "cell":
            return
        self.in_flight -= 1
        self._write_failed(call.job, "timeout" if timed_out else "protocol", error)
        self._count(m, False, error)

    def _write_failed(self, cell: ToolsCell, kind: str, error: str) -> None:
        fleet = self.fleet
        spec = fleet.plans[self.host]
        engine = next((x.spec.engine for x in spec if x.label == cell.model), "unknown")
        fleet.checks.write_now(
            ToolsRecord(
                key=cell.key,
                pack_id=fleet.pack.id,
                pack_version=fleet.pack.version,
                model=cell.model,
                engine=engine,
                host=self.host,
                node_id=fleet.nodes[self.host].node_id,
                item_id=cell.item_id,
                repeat=cell.repeat,
                ok=False,
                error_kind=cast(ErrorKind, kind),
                error=error,
            )
        )

    def lost(self, calls: list[Call], reason: str) -> None:
        for call in calls:
            if call.kind == "cell":
                self._write_failed(call.job, "node_lost", reason)
        for m in [self.model, *self.queue]:
            if m is not None:
                self.fleet.stop_model(self.host, m.label, reason)
        self.queue.clear()
        self._done = True
