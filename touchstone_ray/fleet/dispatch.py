"""One dispatch loop for the work of every pinned actor: eval's cells and the judges' calls.

Shapes (SPEC §8):

- :class:`Pinned`: one actor hard-pinned to one node (a host's client actor, a judge) with
  its :class:`Lane` s. It is the unit of loss: when its node dies, or a result says the actor
  died, every lane of it ends at once (:meth:`Lane.lost`) while the other actors go on.
- :class:`Lane`: one bounded window of calls to that actor (eval: one model on its host;
  judge: one judge). The plug-in decides what to call next (:meth:`Lane.next_call`, ``None``
  = nothing now: a warm-up still runs, a queue is empty) and what a result, a failure or a
  loss means; it never calls Ray itself.
- :class:`Dispatcher`: submits up to :attr:`Lane.window` calls per lane, waits with
  ``ray.wait`` (at most :data:`WAIT_TIMEOUT_S` at a time), hands every result to its lane at
  once, cancels a call past its deadline (:meth:`Lane.failed` with the reason), polls node
  liveness every :data:`LIVENESS_INTERVAL_S`, and returns when every lane is finished.
  Actors may be added while it runs (:meth:`Dispatcher.add`), so a host can start as soon as
  its own actor is ready.

Deadlines come from the engine settings the actor itself uses (:func:`call_deadline_s`): a
call may take every attempt to its own deadline plus the model-load budget, never a copied
constant. Ray alone is not enough: a partitioned node keeps a ``ray.get`` pending for minutes
(``ray-notes.md``), so every wait here has our own deadline.

:func:`pin` and :func:`spawn_pinned` are the one way an actor or task is pinned hard to a node.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.errors import one_line
from touchstone_ray.fleet.lifeline import await_verdict

__all__ = [
    "DEADLINE_SLACK_S",
    "LIVENESS_INTERVAL_S",
    "WAIT_TIMEOUT_S",
    "Call",
    "Dispatcher",
    "Lane",
    "Pinned",
    "call_deadline_s",
    "pin",
    "spawn_pinned",
]

WAIT_TIMEOUT_S = 0.5
"""Longest single ``ray.wait`` (s); deadlines and liveness are checked in between."""
LIVENESS_INTERVAL_S = 2.0
"""How often node liveness is polled (s)."""
DEADLINE_SLACK_S = 30.0
"""Added to a call's own retry budget before the dispatcher gives up on it (s): the actor's
queue, Ray's own latency, the backoff sleeps between attempts."""
IDLE_S = 0.05
"""Pause of a loop turn that had nothing in flight and nothing to submit (s)."""
GET_TIMEOUT_S = 30.0
"""``ray.get`` of a result ``ray.wait`` already reported ready (s); past it the actor is lost."""


def call_deadline_s(settings: EngineSettings, calls: int = 1) -> float:
    """How long (s) the dispatcher waits for one call that sends up to ``calls`` engine
    requests (a judge's format retry makes 2): each may use ``max_attempts`` attempts of
    ``timeout_s``, the whole call may wait ``load_timeout_s`` for a model to load and
    ``engine_down_timeout_s`` for a refusing endpoint, plus :data:`DEADLINE_SLACK_S`. Source:
    the engine's retry rules (:mod:`~touchstone_ray.engines._retry`): neither 503-while-loading
    nor a refused connect counts against ``max_attempts``."""
    per_request = settings.timeout_s * settings.max_attempts
    waits = settings.load_timeout_s + settings.engine_down_timeout_s
    return calls * per_request + waits + DEADLINE_SLACK_S


def pin(node_id: str) -> Any:
    """A hard ``NodeAffinitySchedulingStrategy`` to ``node_id`` (``soft=False``: never run
    elsewhere; if the node dies the task fails instead of moving)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)


def spawn_pinned(
    actor_cls: Any,
    node_id: str,
    *args: Any,
    name: str | None = None,
    max_concurrency: int | None = None,
    **kwargs: Any,
) -> Any:
    """Start ``actor_cls(*args, **kwargs)`` as a Ray actor pinned hard to ``node_id`` (SPEC §8):
    no CPU, never restarted (a lost host stays lost: its records say so). ``actor_cls`` is a
    plain class or one already wrapped by ``ray.remote``. Returns the actor handle; raises what
    Ray raises for a bad option (e.g. a taken ``name``)."""
    import ray

    remote_cls = actor_cls if hasattr(actor_cls, "remote") else ray.remote(actor_cls)
    options: dict[str, Any] = {
        "num_cpus": 0,
        "max_restarts": 0,
        "scheduling_strategy": pin(node_id),
    }
    if name is not None:
        options["name"] = name
    if max_concurrency is not None:
        options["max_concurrency"] = max_concurrency
    return remote_cls.options(**options).remote(*args, **kwargs)


@dataclass
class Call:
    """One actor method call a lane wants made.

    ``method`` is the actor's method handle (``actor.run_cell``); ``args`` its arguments;
    ``name`` the Ray task name; ``job`` and ``kind`` are the lane's own (handed back with the
    result); ``budget_s`` how long the dispatcher waits for it (s, usually
    :func:`call_deadline_s`). ``deadline`` (monotonic s) is set when it is submitted.
    ``other_actor``: ``method`` belongs to another actor than the lane's :class:`Pinned` (a
    host's monitor): that actor's death fails this call (:meth:`Lane.failed`) instead of
    losing the pinned actor.
    """

    method: Any
    args: tuple[Any, ...]
    name: str
    job: Any
    kind: str
    budget_s: float
    deadline: float = 0.0
    other_actor: bool = False


class Lane(ABC):
    """One bounded window of calls to one pinned actor; subclass it to plug in a policy."""

    @property
    @abstractmethod
    def window(self) -> int:
        """Calls of this lane in flight at most (≥ 1)."""

    @abstractmethod
    def next_call(self) -> Call | None:
        """The next call to submit now, or ``None`` when there is none now."""

    @abstractmethod
    def finished(self) -> bool:
        """No call will come from this lane any more (asked when none of it is in flight)."""

    @abstractmethod
    def landed(self, call: Call, value: Any) -> None:
        """``call`` returned ``value``."""

    @abstractmethod
    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        """``call`` ended without a value: its task raised (``timed_out`` false), or it passed
        its deadline and was cancelled (``timed_out`` true). ``error`` is one line saying
        which (``task failed: <type>: <message>``, ``no result within the driver's deadline
        (<budget> s)``)."""

    @abstractmethod
    def lost(self, calls: list[Call], reason: str) -> None:
        """The lane's actor or node is gone (``reason``, one line): ``calls`` were in flight.
        End them and everything still queued; :meth:`next_call` is not asked again."""

    def closed(self) -> None:  # noqa: B027 — an optional hook
        """Called once when the lane is finished and nothing of it is in flight."""


@dataclass
class Pinned:
    """One actor pinned to one node, and its lanes (see the module docstring).

    ``name`` and ``role`` name it in messages (``host gpu-c`` / ``client actor``, ``judge
    simA`` / ``judge actor``); ``on_lost(reason)`` runs once when it is lost, before its lanes
    hear of it.
    """

    name: str
    node_id: str
    actor: Any
    role: str = "actor"
    lanes: list[Lane] = field(default_factory=list)
    on_lost: Callable[[str], object] | None = None
    lost_reason: str | None = None
    """Why it was lost (one line), or ``None`` while it is not."""

    @property
    def busy(self) -> bool:
        """Some lane of it is not finished yet."""
        return any(not lane.finished() for lane in self.lanes)


@dataclass
class _Flight:
    pinned: Pinned
    lane: Lane
    call: Call


class Dispatcher:
    """Runs every lane of every added :class:`Pinned` to its end (see the module docstring).

    ``on_tick()`` runs once per loop turn (≤ :data:`WAIT_TIMEOUT_S` apart): a store flush, a
    progress line.
    """

    def __init__(self, on_tick: Callable[[], object] | None = None) -> None:
        self.pinned: list[Pinned] = []
        self.on_tick = on_tick
        self._flights: dict[Any, _Flight] = {}
        self._count: dict[int, int] = {}
        """``id(lane)`` → its calls in flight."""
        self._closed: set[int] = set()
        self._last_liveness = time.monotonic()

    def add(self, pinned: Pinned) -> None:
        """Take ``pinned`` into the loop (also while :meth:`run` runs, from a hook)."""
        self.pinned.append(pinned)

    def in_flight(self, lane: Lane) -> int:
        """Calls of ``lane`` in flight now."""
        return self._count.get(id(lane), 0)

    # --- the loop ----------------------------------------------------------------------------
    def run(self) -> None:
        """Submit, wait, collect until every lane is finished with nothing in flight."""
        import ray

        while True:
            for pinned in list(self.pinned):
                self._top_up(pinned)
            if not self._flights:
                closed = len(self._closed)
                if self._close_finished():
                    return
                if len(self._closed) == closed:  # nothing to do until a lane has work again
                    time.sleep(IDLE_S)
                    self._check_liveness()
                if self.on_tick is not None:
                    self.on_tick()
                continue
            refs = list(self._flights)
            ready, rest = ray.wait(refs, num_returns=1, timeout=WAIT_TIMEOUT_S)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                if ref in self._flights:
                    self._collect(ref)
            self._check_deadlines()
            self._check_liveness()
            self._close_finished()
            if self.on_tick is not None:
                self.on_tick()

    def _top_up(self, pinned: Pinned) -> None:
        if pinned.lost_reason is not None:
            return
        for lane in pinned.lanes:
            while self.in_flight(lane) < lane.window:
                call = lane.next_call()
                if call is None:
                    break
                self._submit(pinned, lane, call)
                if pinned.lost_reason is not None:  # a lane's hook may lose its own actor
                    return

    def _submit(self, pinned: Pinned, lane: Lane, call: Call) -> None:
        ref = call.method.options(name=call.name).remote(*call.args)
        call.deadline = time.monotonic() + call.budget_s
        self._flights[ref] = _Flight(pinned, lane, call)
        self._count[id(lane)] = self.in_flight(lane) + 1

    def _pop(self, ref: Any) -> _Flight:
        flight = self._flights.pop(ref)
        self._count[id(flight.lane)] -= 1
        return flight

    def _close_finished(self) -> bool:
        """Run :meth:`Lane.closed` of newly finished lanes; whether every lane is done."""
        done = True
        for pinned in self.pinned:
            for lane in pinned.lanes:
                if id(lane) in self._closed:
                    continue
                if self.in_flight(lane) == 0 and (
                    pinned.lost_reason is not None or lane.finished()
                ):
                    self._closed.add(id(lane))
                    if pinned.lost_reason is None:
                        lane.closed()
                else:
                    done = False
        return done

    def _collect(self, ref: Any) -> None:
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        flight = self._flights[ref]
        try:
            value = ray.get(ref, timeout=GET_TIMEOUT_S)
        except (RayActorError, GetTimeoutError) as exc:
            if flight.call.other_actor:
                self._pop(ref)
                flight.lane.failed(flight.call, _task_error(exc), timed_out=False)
                return
            await_verdict()  # the whole cluster gone ends the command with its own line
            node = flight.pinned.node_id[:8]
            role = flight.pinned.role
            self.lose(flight.pinned, f"{role} on node {node} died: {type(exc).__name__}")
            return
        except Exception as exc:  # a bug in the actor: keep the run going, the lane records it
            self._pop(ref)
            flight.lane.failed(flight.call, _task_error(exc), timed_out=False)
            return
        self._pop(ref)
        flight.lane.landed(flight.call, value)

    def _check_deadlines(self) -> None:
        import ray

        now = time.monotonic()
        for ref, flight in list(self._flights.items()):
            if ref in self._flights and now > flight.call.deadline:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=False)
                self._pop(ref)
                budget = flight.call.budget_s
                text = f"no result within the driver's deadline ({budget:.0f} s)"
                flight.lane.failed(flight.call, text, timed_out=True)

    def _check_liveness(self) -> None:
        import ray

        if time.monotonic() - self._last_liveness < LIVENESS_INTERVAL_S:
            return
        self._last_liveness = time.monotonic()
        try:
            alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        except Exception:
            return
        for pinned in list(self.pinned):
            if pinned.lost_reason is not None or pinned.node_id in alive:
                continue
            if pinned.busy or any(f.pinned is pinned for f in self._flights.values()):
                self.lose(pinned, f"node {pinned.node_id[:8]} of {pinned.name} is dead")

    # --- ending work -------------------------------------------------------------------------
    def cancel(self, lane: Lane) -> list[Call]:
        """Cancel every call of ``lane`` in flight (no lane hook runs); returns them."""
        import ray

        calls: list[Call] = []
        for ref, flight in list(self._flights.items()):
            if flight.lane is lane:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=False)
                calls.append(self._pop(ref).call)
        return calls

    def lose(self, pinned: Pinned, reason: str) -> None:
        """``pinned`` is gone: run its ``on_lost``, then end each lane with its in-flight
        calls (:meth:`Lane.lost`); its lanes get nothing more. Idempotent."""
        if pinned.lost_reason is not None:
            return
        pinned.lost_reason = reason
        if pinned.on_lost is not None:
            pinned.on_lost(reason)
        for lane in pinned.lanes:
            lane.lost(self.cancel(lane), reason)


def _task_error(exc: BaseException) -> str:
    """``task failed: <type>: <message>`` in one line, of the exception the task itself raised
    (Ray wraps it in a ``RayTaskError`` whose text carries the remote traceback)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    return one_line(f"task failed: {type(exc).__name__}: {exc}")
