"""The shared dispatcher on one real local Ray: the window bound, deadlines derived from the
engine settings, cancel, and the loss of an actor mid-run."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import ray
from ray_env import LocalRay

from touchstone_ray.config import ModelSpec
from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.errors import ConfigError
from touchstone_ray.fleet.actors import (
    DEFAULT_READY_TIMEOUT_S,
    READY_TIMEOUT_ENV,
    StartLane,
    actor_ready_timeout_s,
    close_actors,
)
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
        def __init__(self, marker: str | None = None, refuse: bool = False) -> None:
            self.marker = marker
            self.refuse = refuse
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

        async def ready(self) -> dict[str, Any]:
            if self.refuse:
                raise ValueError("not today")
            import os

            return {"pid": os.getpid()}

        async def close(self) -> None:
            if self.marker is not None:
                with open(self.marker, "w") as fh:
                    fh.write("closed")

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
    waits = settings.load_timeout_s + settings.engine_down_timeout_s
    assert call_deadline_s(settings) == 10.0 * 3 + waits + DEADLINE_SLACK_S
    assert call_deadline_s(settings) == 1260.0  # 900 s loading + 300 s refused by default
    quick = settings.model_copy(
        update={"load_timeout_s": 5.0, "max_attempts": 1, "engine_down_timeout_s": 7.0}
    )
    assert call_deadline_s(quick, calls=2) == 2 * 10.0 + 5.0 + 7.0 + 30.0
    model = ModelSpec(id="m", engine="openai", base_url="http://x:1/v1", timeout_s=20.0)
    eval_settings = model.engine_settings(None, max_attempts=2, engine_down_timeout_s=60.0)
    assert (eval_settings.timeout_s, eval_settings.max_attempts) == (20.0, 2)
    assert call_deadline_s(eval_settings) == 20.0 * 2 + 900.0 + 60.0 + 30.0
    judge = JudgeSpec(id="j", engine="simulated", model="jm")
    judge_deadline = 2 * 300.0 * 3 + 900 + 300 + 30
    assert call_deadline_s(judge.engine_settings(None), calls=2) == judge_deadline


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


class ReadyFirst(StartLane):
    """A start lane that records what it was told; not started loses its actor."""

    def __init__(self, actor: Any, node: str, ready_s: float) -> None:
        super().__init__(actor, "test actor", node, ready_s)
        self.facts: Any = None
        self.reason: str | None = None
        self.dispatcher: Dispatcher | None = None
        self.pinned: Pinned | None = None
        self.at: float | None = None

    def ready(self, facts: Any) -> None:
        self.facts, self.at = facts, time.monotonic()
        self.finish()

    def not_started(self, reason: str) -> None:
        self.reason = reason
        assert self.dispatcher is not None and self.pinned is not None
        self.dispatcher.lose(self.pinned, reason)


class AfterStart(ListLane):
    """A :class:`ListLane` that waits for its actor's start lane; notes when it began."""

    def __init__(self, start: ReadyFirst, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start = start
        self.first_at: float | None = None

    def next_call(self) -> Call | None:
        if not self.start.started:
            return None
        self.first_at = self.first_at or time.monotonic()
        return super().next_call()


def _started(node: str, ready_s: float, **worker: Any) -> tuple[ReadyFirst, AfterStart]:
    actor = spawn_pinned(_worker_class(), node, max_concurrency=100, **worker)
    start = ReadyFirst(actor, node, ready_s)
    work = AfterStart(start, actor, items=[1, 2], sleep_s=0.01, window=2)
    dispatcher = Dispatcher()
    pinned = Pinned("test box", node, actor, role="test actor", lanes=[start, work])
    start.dispatcher, start.pinned, work.dispatcher = dispatcher, pinned, dispatcher
    dispatcher.add(pinned)
    dispatcher.run()
    ray.kill(actor, no_restart=True)
    return start, work


def test_a_start_lane_holds_the_other_lanes_until_ready(local_ray: str) -> None:
    start, work = _started(local_ray, 30.0)
    assert isinstance(start.facts["pid"], int) and start.reason is None
    assert start.started and start.finished()
    assert sorted(work.results) == [10, 20] and work.closed_n == 1
    assert start.at is not None and work.first_at is not None and work.first_at >= start.at


def test_an_actor_not_ready_in_time_is_not_started(local_ray: str) -> None:
    began = time.monotonic()
    start, work = _started(local_ray, 0.0)
    assert time.monotonic() - began < 10
    reason = f"test actor could not be scheduled on node {local_ray[:8]} within 0 s"
    assert (start.reason, start.started, start.facts) == (reason, False, None)
    assert work.results == [] and work.lost_reason == reason and work.lost_calls == [1, 2]


def test_an_actor_whose_ready_raises_is_not_started(local_ray: str) -> None:
    start, work = _started(local_ray, 30.0, refuse=True)
    assert start.reason == "test actor failed to start: task failed: ValueError: not today"
    assert not start.started and work.results == [] and work.lost_reason == start.reason


def test_close_actors_asks_the_live_ones_then_kills_all(local_ray: str, tmp_path: Path) -> None:
    from ray.exceptions import RayActorError

    markers = {name: tmp_path / name for name in ("up", "gone")}
    actors = {
        name: spawn_pinned(_worker_class(), local_ray, str(path), max_concurrency=10)
        for name, path in markers.items()
    }
    assert ray.get([a.ready.remote() for a in actors.values()], timeout=60)
    close_actors(actors, lost={"gone"})
    assert markers["up"].read_text() == "closed"  # asked to close …
    assert not markers["gone"].exists()  # … except the one said to be gone
    for actor in actors.values():  # and both killed: ray.kill is asynchronous, so a call
        deadline = time.monotonic() + 30  # sent at once may still be answered; poll
        with pytest.raises(RayActorError):
            while time.monotonic() < deadline:
                ray.get(actor.stats.remote(), timeout=30)
                time.sleep(0.1)
    close_actors({})  # nothing to do, no Ray call


def test_the_ready_timeout_honours_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(READY_TIMEOUT_ENV, raising=False)
    assert actor_ready_timeout_s() == DEFAULT_READY_TIMEOUT_S == 60.0
    for text, value in (("2.5", 2.5), ("0", 0.0), (" 90 ", 90.0), ("", 60.0)):
        monkeypatch.setenv(READY_TIMEOUT_ENV, text)
        assert actor_ready_timeout_s() == value
    for text in ("soon", "-1", "nan"):
        monkeypatch.setenv(READY_TIMEOUT_ENV, text)
        with pytest.raises(ConfigError) as caught:
            actor_ready_timeout_s()
        assert str(caught.value) == (
            f"TOUCHSTONE_ACTOR_READY_TIMEOUT_S: {text!r} is not a number of seconds ≥ 0"
        )
    assert os.environ[READY_TIMEOUT_ENV] == "nan"
