"""The tools cells on the shared dispatcher (:mod:`touchstone_ray.fleet.dispatch`): per host
one pinned :class:`~touchstone_ray.tools.client.ToolsClient` actor with two lanes.

1. :class:`ToolsStart` (:class:`~touchstone_ray.fleet.HostStart`): ``ready`` and
   ``preflight``; the host's facts go into ``bundle.json`` ``hosts``, each endpoint's context
   limit and server facts are kept.
2. :class:`HostCells`: the run's pack to the actor (``use_pack``), then the host's models one
   after another in config order, each with its baseline tick, its tool-support check (a
   server that cannot take tool calls is refused with one line naming the fix, its cells
   left without a record), its context check (a cell whose first request does not fit the
   model's context is recorded as a ``context`` failure without being sent) and its cells, up
   to the model's ``concurrency`` at once.

A cell's result is checked on the driver (:class:`~.writer.CheckPool`: the code checks run
sandboxed, up to 20 s, so never on the dispatcher's thread) and written when its checks are
through.
Transport errors are not model results: the engine retried each request already
(``max_attempts``); a failed cell is written with ``ok: false``, and three failed cells in a
row stop the model (its other cells get no record, so ``--resume`` runs exactly those).
"""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from touchstone_ray.config import FleetConfig, ModelSpec
from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.errors import ErrorKind
from touchstone_ray.fleet import (
    Call,
    Dispatcher,
    HostClients,
    HostStart,
    Lane,
    actor_ready_timeout_s,
    call_deadline_s,
    estimate_prompt_tokens,
)
from touchstone_ray.tool_records import ToolsRecord, tools_key
from touchstone_ray.toolpack import ToolItem, ToolsPack
from touchstone_ray.tools.bundle import ToolsBundle
from touchstone_ray.tools.client import ToolsCell, tools_client_spec
from touchstone_ray.tools.loop import first_messages
from touchstone_ray.tools.writer import CheckPool, ToolsWriter

__all__ = [
    "FAILS_IN_A_ROW",
    "HostCells",
    "ModelCells",
    "ToolsFleet",
    "ToolsStart",
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
    stopped: dict[str, str] = field(default_factory=dict)
    """Model label (or host) → why its cells stopped before they all ran."""
    lost: set[str] = field(default_factory=set)
    harness_s: list[float] = field(default_factory=list)
    """Every cell's time between a reply's end and the next turn's request (s)."""

    def __post_init__(self) -> None:
        self.clients = HostClients(self.bundle, self.writer.event)
        """Each host's client and monitor."""
        self.dispatcher = Dispatcher(on_tick=self._tick)

    def start(self) -> None:
        """Create each host's actor (pinned) and start the monitors, then put each host's
        lanes on the dispatcher; no actor is waited for here."""
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
        self.clients.start(
            self.config,
            specs,
            {h: [(m.label, m.spec) for m in ms] for h, ms in self.plans.items()},
        )
        ready_s = actor_ready_timeout_s()

        def lanes(host: str) -> list[Lane]:
            start = ToolsStart(self, host, ready_s)
            return [start, HostCells(self, host, start)]

        nodes = {host: self.nodes[host].node_id for host in self.plans}
        self.clients.pin(self.dispatcher, nodes, lanes, self.lost)

    def run(self) -> None:
        """Run every host's lanes to their end, then write the last checked records."""
        self.dispatcher.run()
        self.checks.close()

    def _tick(self) -> None:
        self.checks.drain()
        self.clients.poll()

    def stop_model(self, host: str, label: str, why: str) -> None:
        """Model ``label``'s remaining cells will not run (``model_failed``, one line)."""
        self.stopped[label] = why
        self.writer.event("model_failed", host=host, model=label, error=why)
        print(f"tools: {host}: {label}: {why}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """Close the clients and stop the monitors (once; :meth:`HostClients.stop`)."""
        self.clients.stop(self.lost)


class ToolsStart(HostStart):
    """One host's start (see the module docstring); its cells wait for :attr:`started`."""

    def __init__(self, fleet: ToolsFleet, host: str, ready_timeout_s: float) -> None:
        super().__init__(fleet.clients, host, fleet.nodes[host].node_id, ready_timeout_s)
        self.fleet = fleet

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
        self.actor = fleet.clients.actors[host]
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
            monitors = fleet.clients.monitors
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
        limit = fleet.clients.limits.get(m.label) or m.spec.context_tokens
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
