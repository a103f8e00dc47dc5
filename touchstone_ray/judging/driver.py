"""The judges on the shared dispatcher (:mod:`touchstone_ray.fleet.dispatch`): one pinned actor
per judge, with two lanes: its start and its jobs.

The start lane (:class:`~touchstone_ray.fleet.actors.StartLane`) asks the actor's ``ready``
and prints where the judge runs; a judge whose actor is not up within
:func:`~touchstone_ray.fleet.actors.actor_ready_timeout_s` is aborted with the reason and asked
nothing, while the other judges start as soon as their own actor is ready.

The jobs' lane keeps ``2 × concurrency`` jobs in flight (calibration answers first, then
holistic reports as soon as a row's last verdict is in, then answers) and appends each record
to the judge's store at once. Its policy: ``max_consecutive_failures`` judge errors or failed calls
in a row abort that judge (its in-flight jobs are cancelled, every stored record is kept, a
rerun continues). A job's deadline is :func:`~touchstone_ray.fleet.dispatch.call_deadline_s` of the
judge's engine settings with two requests (the format retry). From the dispatcher, for free:
a judge whose node dies (or whose actor dies) ends every pending job — in flight or queued —
as a ``judge_error`` (``call_failed``, asked again on the next run) with the reason in
``error``, and is aborted, while the other judges finish.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from touchstone_ray.fleet import (
    Call,
    ClientSpec,
    Dispatcher,
    Lane,
    Pinned,
    StartLane,
    actor_ready_timeout_s,
    call_deadline_s,
    close_actors,
    start_clients,
)
from touchstone_ray.judging.client import AnswerJob, ReportJob, failed_outcome
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.worklist import JudgePlan
from touchstone_ray.pack import Pack

__all__ = ["JudgeDriver", "JudgeRun"]

PROGRESS_INTERVAL_S = 5.0
"""How often a progress line per judge is printed (s)."""
REQUESTS_PER_JOB = 2
"""Engine requests one job may send: the question and one format retry."""

JobKind = Literal["answer", "report", "calibration"]


@dataclass
class JudgeRun:
    """One judge being run: its plan, actor and counters."""

    plan: JudgePlan
    actor: Any = None
    failures_in_row: int = 0
    aborted: str | None = None
    """Why the judge was stopped (one line), or ``None``."""
    answers_total: int = 0
    answers_done: int = 0
    calibration_total: int = 0
    """Calibration answers to ask in this run (the stored ones not counted)."""
    calibration_done: int = 0
    reports_done: int = 0
    n_calls: int = 0
    n_errors: int = 0
    schema_noted: bool = False
    started: bool = False
    """The judge's actor answered ``ready`` in time: its jobs may be asked."""

    @property
    def spec(self) -> JudgeSpec:
        return self.plan.spec

    @property
    def deadline_s(self) -> float:
        """Budget of one job (s): two requests with their retries, plus loading."""
        return call_deadline_s(self.spec.engine_settings(None), calls=REQUESTS_PER_JOB)


def progress_line(run: JudgeRun) -> str:
    """``judge J: [calibration C/N, ]A/M answers, R reports, E judge errors`` (the
    calibration part only while this run asks calibration answers)."""
    calibration = (
        f"calibration {run.calibration_done}/{run.calibration_total}, "
        if run.calibration_total
        else ""
    )
    return (
        f"judge {run.spec.id}: {calibration}{run.answers_done}/{run.answers_total} answers, "
        f"{run.reports_done} reports, {run.n_errors} judge errors"
    )


class _JudgeLane(Lane):
    """The dispatcher's view of one judge."""

    def __init__(self, driver: JudgeDriver, run: JudgeRun) -> None:
        self.driver = driver
        self.run = run

    @property
    def window(self) -> int:
        return 2 * self.run.spec.concurrency

    def finished(self) -> bool:
        plan = self.run.plan
        idle = not (plan.calibration_jobs or plan.report_jobs or plan.jobs)
        return self.run.aborted is not None or idle

    def next_call(self) -> Call | None:
        run, plan = self.run, self.run.plan
        if run.aborted is not None or not run.started:
            return None
        kind: JobKind
        job: AnswerJob | ReportJob
        if plan.calibration_jobs:
            kind, job = "calibration", plan.calibration_jobs.popleft()
            method = run.actor.judge_answer
        elif plan.report_jobs:
            kind, job, method = "report", plan.report_jobs.popleft(), run.actor.judge_report
        elif plan.jobs:
            kind, job, method = "answer", plan.jobs.popleft(), run.actor.judge_answer
        else:
            return None
        name = f"judge:{run.spec.id}:{job.task_name}"
        return Call(method, (job,), name, job, kind, run.deadline_s)

    def landed(self, call: Call, value: Any) -> None:
        self.driver.take(self.run, call.kind, value)

    def failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        text = error if timed_out else f"judge {error}"
        self.driver.take(self.run, call.kind, self._failed(call.job, text))

    def _failed(self, job: AnswerJob | ReportJob, error: str) -> dict[str, Any]:
        return failed_outcome(job, self.run.spec, self.driver.pack, error)

    def lost(self, calls: list[Call], reason: str) -> None:
        """Every pending job becomes a failed call with ``reason``; none is asked again now.
        A judge lost before it started is aborted with ``reason`` and asked nothing, as one
        that did not start in time."""
        run, plan = self.run, self.run.plan
        if not run.started:
            self.driver.abort(run, reason)
            return
        queued: list[tuple[str, AnswerJob | ReportJob]] = [(c.kind, c.job) for c in calls]
        queued += [("calibration", j) for j in plan.calibration_jobs]
        queued += [("report", j) for j in plan.report_jobs]
        queued += [("answer", j) for j in plan.jobs]
        plan.calibration_jobs.clear()
        plan.report_jobs.clear()
        plan.jobs.clear()
        for kind, job in queued:
            self.driver.store(run, kind, self._failed(job, reason)["record"])
            run.n_errors += 1
        self.driver.abort(run, reason)


class _JudgeStart(StartLane):
    """A judge actor's start: its ``ready``; the judge's lane waits for it."""

    def __init__(self, driver: JudgeDriver, run: JudgeRun, node_id: str, ready_s: float) -> None:
        super().__init__(run.actor, "judge actor", node_id, ready_s)
        self.driver = driver
        self.run = run

    def ready(self, facts: dict[str, Any]) -> None:
        spec = self.run.spec
        if facts.get("unreachable"):
            self.driver.abort(
                self.run,
                f"endpoint {spec.base_url} unreachable from {facts['hostname']} "
                f"({facts['unreachable']})",
            )
            self.finish(started=False)
            return
        self.driver.say(
            f"judge {spec.id}: {spec.engine} {spec.model} on node "
            f"{str(facts['node_id'])[:8]} ({facts['hostname']})"
        )
        self.run.started = True
        self.finish()

    def not_started(self, reason: str) -> None:
        self.driver.abort(self.run, reason)


class JudgeDriver:
    """Starts one pinned actor per judge and runs their lanes on a :class:`Dispatcher` until
    every job is done or its judge aborted."""

    def __init__(self, runs: list[JudgeRun], pack: Pack, out: TextIO) -> None:
        self.runs = runs
        self.pack = pack
        self.out = out
        self._last_progress = time.monotonic()
        self.dispatcher = Dispatcher(on_tick=self._tick)
        self._lanes: dict[int, _JudgeLane] = {}
        self._stopped = False

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    # --- actors ------------------------------------------------------------------------------
    def start(self, nodes: dict[str, str], run_name: str) -> None:
        """Start each judge's actor on its node (``nodes``: judge id → Ray node id) without
        waiting for it: its ``ready`` is the first lane of the judge (:class:`_JudgeStart`,
        deadline :func:`~touchstone_ray.fleet.actors.actor_ready_timeout_s`), run with the
        others by :meth:`run`; a judge whose actor is not up in time is aborted with the
        reason. ``run_name`` names the actors (the bundle's folder)."""
        from touchstone_ray.judging.client import JudgeClient

        ready_timeout_s = actor_ready_timeout_s()
        specs = {}
        for i, run in enumerate(self.runs):
            spec = run.spec
            key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
            args = (spec.model_dump(mode="json"), key, self.pack, self.pack.sampling.seed)
            name = f"judge:{spec.id}:{run_name}:{uuid.uuid4().hex[:6]}"
            host = spec.host or f"of judge {spec.id}"
            specs[str(i)] = ClientSpec(host, nodes[spec.id], JudgeClient, args, name=name)
        # a standing cluster's host agent where one is free (judging measures no speed)
        clients = start_clients(specs, f"judge:{run_name}", measuring=False)
        for i, run in enumerate(self.runs):
            spec = run.spec
            run.actor = clients[str(i)]
            lane = _JudgeLane(self, run)
            self._lanes[id(run)] = lane
            start = _JudgeStart(self, run, nodes[spec.id], ready_timeout_s)
            pinned = Pinned(
                f"judge {spec.id}",
                nodes[spec.id],
                run.actor,
                role="judge actor",
                lanes=[start, lane],
            )
            self.dispatcher.add(pinned)

    def stop(self) -> None:
        """Close every judge actor, then kill it (:func:`~touchstone_ray.fleet.actors.
        close_actors`); once."""
        if self._stopped:
            return
        self._stopped = True
        close_actors({r.spec.id: r.actor for r in self.runs if r.actor is not None})

    # --- the loop ----------------------------------------------------------------------------
    def run(self) -> None:
        """Run every judge's lane to its end."""
        self.dispatcher.run()

    def _tick(self) -> None:
        for run in self.runs:
            run.plan.store.sync_if_due()
        if time.monotonic() - self._last_progress >= PROGRESS_INTERVAL_S:
            self._last_progress = time.monotonic()
            for run in self.runs:
                if run.aborted is None:
                    self.say(progress_line(run))

    def store(self, run: JudgeRun, kind: str, record: dict[str, Any]) -> None:
        """Append ``record`` of a ``kind`` job to the judge's store and plan; a row whose last
        verdict this is gets its holistic report queued."""
        plan = run.plan
        if kind == "calibration":
            plan.store.write_calibration(record)
            plan.calibration[record["key"]] = record
            run.calibration_done += 1
        elif kind == "answer":
            plan.store.write_verdict(record)
            run.answers_done += 1
            report_job = plan.verdict_done(record)
            if report_job is not None:
                plan.report_jobs.append(report_job)
        else:
            plan.store.write_report(record)
            plan.reports[(record["model"], record["variant"])] = record
            run.reports_done += 1

    def take(self, run: JudgeRun, kind: str, outcome: dict[str, Any]) -> None:
        """Store one job's outcome and apply the abort-after-N-failures policy."""
        record = outcome["record"]
        self.store(run, kind, record)
        run.n_calls += int(outcome["calls"])
        if outcome.get("schema_dropped") and not run.schema_noted:
            run.schema_noted = True
            self.say(f"judge {run.spec.id}: structured output rejected; asking without a schema")
        if outcome["failure"] is None:
            run.failures_in_row = 0
            return
        run.n_errors += 1
        run.failures_in_row += 1
        limit = run.spec.max_consecutive_failures
        if limit and run.failures_in_row >= limit:
            self.abort(
                run,
                f"{run.failures_in_row} failed calls or unreadable replies in a row "
                f"(last: {record.get('error')})",
            )

    def abort(self, run: JudgeRun, reason: str) -> None:
        """Stop asking this judge: cancel its in-flight jobs, drop its queue (stored records
        stay)."""
        if run.aborted is not None:
            return
        run.aborted = reason
        lane = self._lanes.get(id(run))
        if lane is not None:
            self.dispatcher.cancel(lane)
        run.plan.jobs.clear()
        run.plan.report_jobs.clear()
        run.plan.calibration_jobs.clear()
        self.say(f"judge {run.spec.id}: aborted: {reason}; stored verdicts kept, rerun to resume")
