"""A pinned actor's start and end: how long it may take to start, its start as the first
lane of its :class:`~touchstone_ray.fleet.dispatch.Pinned`, and closing it.

- :func:`actor_ready_timeout_s`: how long any client or judge actor may take to be scheduled
  and answer ``ready`` (s): :data:`DEFAULT_READY_TIMEOUT_S`, or the environment variable
  :data:`READY_TIMEOUT_ENV`, read when a run starts its actors.
- :class:`StartLane`: the actor's ``ready`` call inside the dispatcher, beside every other
  actor's (no barrier over the fleet). The actor's other lanes wait for :attr:`StartLane.started`.
  An actor that is not ready within its deadline, or whose ``ready`` raises, is not started
  (:meth:`StartLane.not_started` with one line saying which); an answer that lands after the
  deadline counts as not in time.
- :func:`close_actors`: ask each actor to ``close`` (at most :data:`CLOSE_TIMEOUT_S` for all),
  then kill every one of them.
"""

from __future__ import annotations

import contextlib
import os
import time
from abc import abstractmethod
from collections import deque
from collections.abc import Container, Mapping
from typing import Any

from touchstone_ray.errors import ConfigError
from touchstone_ray.fleet.dispatch import Call, Lane

__all__ = [
    "CLOSE_TIMEOUT_S",
    "DEFAULT_READY_TIMEOUT_S",
    "READY_TIMEOUT_ENV",
    "StartLane",
    "actor_ready_timeout_s",
    "close_actors",
]

READY_TIMEOUT_ENV = "TOUCHSTONE_ACTOR_READY_TIMEOUT_S"
"""Environment variable that overrides :data:`DEFAULT_READY_TIMEOUT_S` (s, a number ≥ 0)."""
DEFAULT_READY_TIMEOUT_S = 60.0
"""How long an actor may take to be scheduled and start (s), unless the environment says."""
CLOSE_TIMEOUT_S = 10.0
"""How long :func:`close_actors` waits for the actors' ``close`` calls, all together (s)."""


def actor_ready_timeout_s() -> float:
    """How long a client or judge actor may take to be scheduled and answer ``ready`` (s):
    :data:`READY_TIMEOUT_ENV` when set (a number ≥ 0), else :data:`DEFAULT_READY_TIMEOUT_S`.
    Raises :class:`~touchstone_ray.errors.ConfigError` for a value that is not one."""
    text = os.environ.get(READY_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_READY_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise ConfigError(f"{READY_TIMEOUT_ENV}: {text!r} is not a number of seconds ≥ 0")
    return value


class StartLane(Lane):
    """The first lane of a pinned actor: its ``ready`` call, then whatever a subclass queues
    (:meth:`queue`); see the module docstring.

    ``role`` and ``node_id`` name the actor in the reason it did not start
    (``client actor could not be scheduled on node 1a2b3c4d within 60 s``, ``judge actor
    failed to start: task failed: …``). Subclasses implement :meth:`ready` and
    :meth:`not_started`, and for their own calls :meth:`answered` and :meth:`call_failed`;
    they call :meth:`finish` when the start-up is through.
    """

    def __init__(self, actor: Any, role: str, node_id: str, ready_timeout_s: float) -> None:
        self.actor = actor
        self.role = role
        self.node_id = node_id
        self.ready_timeout_s = ready_timeout_s
        self.started = False
        """The start-up is through: the actor's other lanes may begin."""
        self._calls: deque[Call] = deque(
            [Call(actor.ready, (), "ready", None, "ready", ready_timeout_s)]
        )
        self._done = False

    @property
    def window(self) -> int:
        return 2

    def queue(self, call: Call) -> None:
        """Submit ``call`` after the ones already queued."""
        self._calls.append(call)

    def next_call(self) -> Call | None:
        return self._calls.popleft() if self._calls else None

    def finished(self) -> bool:
        return self._done

    def finish(self, *, started: bool = True) -> None:
        """End the start-up; ``started`` false: the actor's other lanes never begin."""
        self.started = started
        self._done = True
        self._calls.clear()

    def landed(self, call: Call, value: Any) -> None:
        if call.kind != "ready":
            self.answered(call, value)
        elif time.monotonic() > call.deadline:  # it landed, but after its deadline
            self.failed(call, "late", timed_out=True)
        else:
            self.ready(value)

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        if call.kind != "ready":
            self.call_failed(call, error, timed_out=timed_out)
            return
        if timed_out:
            reason = (
                f"{self.role} could not be scheduled on node {self.node_id[:8]} "
                f"within {call.budget_s:.0f} s"
            )
        else:
            reason = f"{self.role} failed to start: {error}"
        self.finish(started=False)
        self.not_started(reason)

    def lost(self, calls: list[Call], reason: str) -> None:
        self.finish(started=False)

    # --- the plug-in's part ------------------------------------------------------------------
    @abstractmethod
    def ready(self, facts: Any) -> None:
        """The actor answered ``ready`` with ``facts`` in time; call :meth:`finish` here when
        nothing else is queued."""

    @abstractmethod
    def not_started(self, reason: str) -> None:
        """The actor did not start in time, or its ``ready`` raised (``reason``, one line);
        the lane is finished, :attr:`started` stays false."""

    def answered(self, call: Call, value: Any) -> None:
        """A call that :meth:`queue` queued returned ``value``."""
        raise NotImplementedError(call.kind)

    def call_failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        """A call that :meth:`queue` queued ended without a value (see :meth:`Lane.failed`)."""
        raise NotImplementedError(call.kind)


def close_actors(
    actors: Mapping[str, Any],
    lost: Container[str] = (),
    timeout_s: float = CLOSE_TIMEOUT_S,
) -> None:
    """End the actors of one run (``actors``: name → handle): ask each one not in ``lost``
    (names whose node or actor is gone) to ``close`` and wait for those calls at most
    ``timeout_s`` (s) together, then kill every actor (never restarted). A leased host agent
    (:class:`~touchstone_ray.fleet.agents.AgentClient`) is released instead (its run's client
    closed there) and stays up for the next run. Never raises for an actor that is already
    gone."""
    if not actors:
        return
    import ray

    from touchstone_ray.fleet.agents import AgentClient

    closing = []
    for name, actor in actors.items():
        if name not in lost:
            with contextlib.suppress(Exception):
                closing.append(
                    actor.release() if isinstance(actor, AgentClient) else actor.close.remote()
                )
    if closing:
        with contextlib.suppress(Exception):
            ray.wait(closing, num_returns=len(closing), timeout=timeout_s)
    for actor in actors.values():
        if not isinstance(actor, AgentClient):
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
