"""The shared dispatcher on one real local Ray: the window bound, deadlines derived from the
engine settings, cancel, and the loss of an actor mid-run."""

from __future__ import annotations

import time
from typing import Any

import pytest
import ray
from ray_env import LocalRay

from touchstone_ray.config import ModelSpec
from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.fleet.dispatch import (
    DEADLINE_SLACK_S,
    Call,
    Dispatcher,
    Lane,
    Pinned,
    call_deadline_s,
    spawn_pinned,
)
from touchstone_ray.judging.config import JudgeSpec


@pytest.fixture(scope="module")
def local_ray(ray_local: LocalRay) -> str:
    """The module's local Ray (``ray_local``, tests/conftest.py): the driver's node id."""
    return ray_local.node_id


def _worker_class() -> type:
    """An async actor that sleeps per call and counts what it saw (defined in a function so
    Ray ships it by value)."""
    import asyncio

    class Worker:
        def __init__(self) -> None:
            self.now = 0
            self.peak = 0
            self.cancelled = 0
            self.started: list[int] = []

        async def work(self, i: int, sleep_s: float) -> int:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.started.append(i)
            try:
                await asyncio.sleep(sleep_s)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            finally:
                self.now -= 1
            return i * 10

        async def boom(self) -> None:
            raise ValueError("bad input 7")

        async def stats(self) -> dict[str, Any]:
            return {"peak": self.peak, "cancelled": self.cancelled, "started": self.started}

    return Worker


class ListLane(Lane):
    """Calls ``work(i, sleep_s)`` for each ``i``; records what the dispatcher says."""

    def __init__(
        self, actor: Any, items: list[int], sleep_s: float, window: int, budget_s: float = 60.0
    ) -> None:
        self.actor = actor
        self.todo = list(items)
        self.sleep_s = sleep_s
        self._window = window
        self.budget_s = budget_s
        self.results: list[int] = []
        self.failures: list[tuple[int, str, bool]] = []
        self.lost_calls: list[int] = []
        self.lost_reason: str | None = None
        self.closed_n = 0
        self.stopped = False
        self.dispatcher: Dispatcher | None = None
        self.max_seen = 0

    @property
    def window(self) -> int:
        return self._window

    def next_call(self) -> Call | None:
        if self.stopped or not self.todo:
            return None
        assert self.dispatcher is not None
        self.max_seen = max(self.max_seen, self.dispatcher.in_flight(self) + 1)
        i = self.todo.pop(0)
        return Call(self.actor.work, (i, self.sleep_s), f"work:{i}", i, "work", self.budget_s)

    def finished(self) -> bool:
        return self.stopped or not self.todo

    def landed(self, call: Call, value: Any) -> None:
        self.results.append(value)

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        self.failures.append((call.job, error, timed_out))

    def lost(self, calls: list[Call], reason: str) -> None:
        self.lost_calls = sorted(c.job for c in calls) + list(self.todo)
        self.todo.clear()
        self.lost_reason = reason

    def closed(self) -> None:
        self.closed_n += 1


def _run(node: str, lane_of: Any, **lane_args: Any) -> tuple[ListLane, Any, Dispatcher]:
    actor = spawn_pinned(_worker_class(), node, max_concurrency=100)
    lane = lane_of(actor, **lane_args)
    dispatcher = Dispatcher()
    lane.dispatcher = dispatcher
    dispatcher.add(Pinned("test box", node, actor, role="test actor", lanes=[lane]))
    dispatcher.run()
    return lane, actor, dispatcher


def test_window_bound_is_respected(local_ray: str) -> None:
    lane, actor, _ = _run(local_ray, ListLane, items=list(range(10)), sleep_s=0.1, window=3)
    stats = ray.get(actor.stats.remote())
    assert sorted(lane.results) == [i * 10 for i in range(10)]
    assert lane.failures == [] and lane.lost_reason is None
    assert lane.max_seen == 3  # the dispatcher never asked beyond the window …
    assert stats["peak"] == 3  # … and the actor never ran more than 3 at once
    assert sorted(stats["started"]) == list(range(10))
    assert lane.closed_n == 1


def test_a_call_past_its_deadline_is_cancelled_and_reported(local_ray: str) -> None:
    class SlowLane(ListLane):
        def next_call(self) -> Call | None:
            call = super().next_call()
            if call is not None and call.job == 1:
                call.args = (1, 30.0)  # hangs far past its budget
            return call

    started = time.monotonic()
    lane, actor, _ = _run(
        local_ray, SlowLane, items=[0, 1, 2], sleep_s=0.05, window=3, budget_s=1.0
    )
    took = time.monotonic() - started
    assert sorted(lane.results) == [0, 20]
    assert lane.failures == [(1, "no result within the driver's deadline (1 s)", True)]
    assert took < 10
    deadline = time.monotonic() + 10
    while ray.get(actor.stats.remote())["cancelled"] != 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.get(actor.stats.remote())["cancelled"] == 1  # the task itself was cancelled


def test_a_raising_task_is_a_failure_of_that_call_only(local_ray: str) -> None:
    class BoomLane(ListLane):
        def next_call(self) -> Call | None:
            call = super().next_call()
            if call is not None and call.job == 2:
                call.method, call.args = self.actor.boom, ()
            return call

    lane, _, _ = _run(local_ray, BoomLane, items=[1, 2, 3], sleep_s=0.01, window=1)
    assert lane.results == [10, 30]
    assert len(lane.failures) == 1
    job, error, timed_out = lane.failures[0]
    assert (job, timed_out) == (2, False)
    assert error.startswith("task failed: ValueError: ") and "bad input 7" in error


def test_cancel_ends_the_lanes_calls_without_hooks(local_ray: str) -> None:
    class StopLane(ListLane):
        def landed(self, call: Call, value: Any) -> None:
            super().landed(call, value)
            assert self.dispatcher is not None
            self.stopped = True
            self.cancelled = sorted(c.job for c in self.dispatcher.cancel(self))

    class Lane2(StopLane):
        def next_call(self) -> Call | None:
            call = super().next_call()
            if call is not None and call.job != 0:
                call.args = (call.job, 30.0)
            return call

    started = time.monotonic()
    lane, actor, dispatcher = _run(local_ray, Lane2, items=list(range(6)), sleep_s=0.05, window=4)
    assert time.monotonic() - started < 10
    assert lane.results == [0]
    assert lane.cancelled == [1, 2, 3]  # in flight when it stopped; 4 and 5 never sent
    assert lane.failures == [] and lane.lost_reason is None
    assert dispatcher.in_flight(lane) == 0
    deadline = time.monotonic() + 10
    while ray.get(actor.stats.remote())["cancelled"] != 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    stats = ray.get(actor.stats.remote())
    assert stats["cancelled"] == 3 and sorted(stats["started"]) == [0, 1, 2, 3]


def test_an_actor_killed_mid_run_loses_its_lanes_only(local_ray: str) -> None:
    class KillLane(ListLane):
        def landed(self, call: Call, value: Any) -> None:
            super().landed(call, value)
            if len(self.results) == 1:  # the first result is in: the actor's process dies
                ray.kill(self.actor, no_restart=True)

    actor = spawn_pinned(_worker_class(), local_ray, max_concurrency=100)
    other = spawn_pinned(_worker_class(), local_ray, max_concurrency=100)
    victim = KillLane(actor, items=list(range(6)), sleep_s=0.05, window=3)
    survivor = ListLane(other, items=list(range(5)), sleep_s=0.2, window=1)
    dispatcher = Dispatcher()
    victim.dispatcher = survivor.dispatcher = dispatcher
    lost_hook: list[str] = []
    dispatcher.add(
        Pinned(
            "test box",
            local_ray,
            actor,
            role="test actor",
            lanes=[victim],
            on_lost=lost_hook.append,
        )
    )
    dispatcher.add(Pinned("other box", local_ray, other, role="test actor", lanes=[survivor]))

    dispatcher.run()
    reason = f"test actor on node {local_ray[:8]} died: ActorDiedError"
    assert lost_hook == [reason] and victim.lost_reason == reason
    assert 1 <= len(victim.results) < 6
    # every call of the victim either landed before the kill or reached lost(), once
    assert sorted(victim.results + [10 * j for j in victim.lost_calls]) == [
        10 * i for i in range(6)
    ]
    assert victim.closed_n == 0  # a lost lane is not "closed" (no model_done)
    assert sorted(survivor.results) == [0, 10, 20, 30, 40] and survivor.closed_n == 1


def test_deadline_derives_from_the_engine_settings() -> None:
    settings = EngineSettings(base_url="http://x:1", timeout_s=10.0, max_attempts=3)
    assert call_deadline_s(settings) == 10.0 * 3 + settings.load_timeout_s + DEADLINE_SLACK_S
    assert call_deadline_s(settings) == 960.0  # load_timeout_s 900 by default
    quick = settings.model_copy(update={"load_timeout_s": 5.0, "max_attempts": 1})
    assert call_deadline_s(quick, calls=2) == 2 * 10.0 + 5.0 + 30.0
    model = ModelSpec(id="m", engine="openai", base_url="http://x:1/v1", timeout_s=20.0)
    eval_settings = model.engine_settings(None, max_attempts=2)
    assert (eval_settings.timeout_s, eval_settings.max_attempts) == (20.0, 2)
    assert call_deadline_s(eval_settings) == 20.0 * 2 + 900.0 + 30.0
    judge = JudgeSpec(id="j", engine="simulated", model="jm")
    assert call_deadline_s(judge.engine_settings(None), calls=2) == 2 * 300.0 * 3 + 900 + 30


def test_an_actor_added_while_running_is_run_too(local_ray: str) -> None:
    """A host may join the loop while it runs (as soon as its own actor is ready)."""
    late_actor = spawn_pinned(_worker_class(), local_ray, max_concurrency=100)
    late = ListLane(late_actor, items=[7, 8], sleep_s=0.01, window=2)

    class JoinLane(ListLane):
        def landed(self, call: Call, value: Any) -> None:
            super().landed(call, value)
            if len(self.results) == 1:
                assert self.dispatcher is not None
                late.dispatcher = self.dispatcher
                self.dispatcher.add(Pinned("late box", local_ray, late_actor, lanes=[late]))

    first, _, dispatcher = _run(local_ray, JoinLane, items=[1, 2, 3], sleep_s=0.2, window=1)
    assert first.results == [10, 20, 30] and first.closed_n == 1
    assert sorted(late.results) == [70, 80] and late.closed_n == 1
    assert [p.name for p in dispatcher.pinned] == ["test box", "late box"]
