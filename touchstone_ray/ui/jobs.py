"""Start and stop runs as Ray jobs (issue item 7).

Runs are submitted with :class:`ray.job_submission.JobSubmissionClient` to the cluster of
``--address`` (its dashboard address: ``http://head:8265``, or ``auto``); without one, the
UI starts a local Ray head as a child process (``ray start --head --block`` on free ports,
dashboard on 127.0.0.1) the first time a job is needed, and stops it, with every job on it,
when the UI exits (:meth:`Jobs.close`); a UI that is killed takes it along too (the head is
tied to the UI's worker thread that started it, which lives as long as the UI's loop). The
UI never runs a measurement itself: the job's entrypoint is the CLI (``touchstone-ray eval
--pack P --config C --out RUNS``, ``touchstone-ray perf --config C --out RUNS``,
``touchstone-ray judge --bundle B --judge-config J``), so
a run on a cluster of ``--address`` survives the UI being closed, and stop = ``stop_job``
(the bundle stays resumable). Every path a job names lies under ``--runs`` or the packs
folder.

Token authentication (Ray 2.60): with ``RAY_AUTH_MODE`` unset, the local head runs with a
token of its own (a file in its temporary folder, mode 0600) and the UI's client sends it, as a
local ``ray.init`` turns token auth on by default; where the head followed Ray's own rule
instead (token auth once any ``~/.ray/auth_token`` exists), the UI's client, which has no such
rule, sent none and every submission failed. With ``RAY_AUTH_MODE`` set, head and client follow
Ray's settings (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``). A cluster
that refuses the UI's request (HTTP 401/403) is a :class:`RunError` naming what to set.

One eval per host at a time: a job carries ``touchstone_kind`` and ``touchstone_hosts`` (the
fleet config's pinned hosts, ``(unpinned)`` for models without one) in its metadata, and an
eval or perf run whose hosts meet those of a PENDING or RUNNING eval or perf job is refused
with the reason (both measure; a judge run holds no host).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from touchstone_ray.errors import RunError, TouchstoneError, UsageError
from touchstone_ray.fleet.local_head import JOB_STOP_WAIT_S, LocalCluster
from touchstone_ray.queue.commands import PROGRAM, judge_command, perf_command
from touchstone_ray.ui.security import confined
from touchstone_ray.ui.start import THEN_JUDGE, UNPINNED, StartPlan, fleet_hosts, plan_eval

__all__ = [
    "ACTIVE",
    "MEASURING",
    "UNPINNED",
    "JobInfo",
    "Jobs",
    "LocalCluster",
    "StartPlan",
    "fleet_hosts",
]

ACTIVE = ("PENDING", "RUNNING")
"""Job states that hold their hosts."""
MEASURING = ("eval", "perf")
"""Job kinds that measure on their hosts; two of them never share a host."""
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""Terminal escape sequences (colours) in job logs."""
READY_TIMEOUT_S = 180.0
"""Longest wait for a started local head to accept a job (s)."""
CLOSE_WAIT_S = JOB_STOP_WAIT_S + 2.0
"""Longest wait, when the UI closes, for its stopped jobs to end (s): Ray's own SIGTERM-to-SIGKILL
wait and a little more."""
CHAINED_FROM = "touchstone_chained_from"
"""Metadata key of a judge job started by :meth:`Jobs.chain`: the eval job it follows."""
EXEC = "exec "
"""Entrypoint prefix: Ray runs an entrypoint with ``/bin/sh -c``; ``exec`` makes the process Ray
signals on stop (and kills with its supervisor) the CLI itself, not a shell that would die and
leave the CLI running."""


@dataclass(frozen=True)
class JobInfo:
    """One touchstone job as the jobs page lists it (times epoch s)."""

    job_id: str
    kind: str
    status: str
    hosts: tuple[str, ...]
    entrypoint: str
    start_time: float | None
    message: str | None
    then_judge: str | None = None
    """The judge config chained to this eval job (its metadata ``touchstone_then_judge``)."""
    chained_from: str | None = None
    """The eval job this judge job was chained to (``touchstone_chained_from``)."""


TOKEN_SOURCES = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
"""Where Ray looks for the token it sends (in this order)."""


@contextlib.contextmanager
def refusals(url: str) -> Iterator[None]:
    """Turn a cluster's refusal of the UI's request (Ray's ``AuthenticationError``: HTTP 401
    without a token, 403 with a wrong one) into a one-line :class:`RunError` naming what to
    set."""
    from ray.exceptions import AuthenticationError

    try:
        yield
    except AuthenticationError as exc:
        if str(exc).startswith("Authentication failed"):  # 403
            fix = f"refused the UI's token: put the cluster's token in {TOKEN_SOURCES}"
        else:  # 401
            fix = (
                "requires a token the UI did not send: start the UI with RAY_AUTH_MODE=token "
                f"and the cluster's token in {TOKEN_SOURCES}"
            )
        raise RunError(f"Ray cluster at {url} {fix}") from None


class Jobs:
    """Ray jobs of one UI: submit (with the host rule), list, stop, logs. Thread-safe; call
    its methods from worker threads (every call blocks on HTTP to the dashboard)."""

    def __init__(self, address: str | None, runs: Path, packs: Path) -> None:
        self.address = address
        self.runs = runs
        self.packs = packs
        self._lock = threading.Lock()
        self._client: Any = None
        self.local: LocalCluster | None = None

    @property
    def dashboard(self) -> str | None:
        """The cluster's dashboard address, once known."""
        if self.local is not None:
            return self.local.url
        return self.address

    @property
    def token_file(self) -> Path | None:
        """The token file of the local head this UI started (:class:`LocalCluster`), if any."""
        return self.local.token_file if self.local is not None else None

    def _refusals(self) -> contextlib.AbstractContextManager[None]:
        """:func:`refusals` for this UI's cluster."""
        return refusals(self.dashboard or "auto")

    def client(self) -> Any:
        """The :class:`JobSubmissionClient`, connecting (and starting the local head) on
        first use. Raises :class:`RunError` when the cluster does not answer."""
        with self._lock:
            if self._client is not None:
                return self._client
            from ray.job_submission import JobSubmissionClient

            if self.address is None and self.local is None:
                # tied to this worker thread: a pool thread that lives as long as the UI's loop
                self.local = LocalCluster(tied=True)
            url = self.address or (self.local.url if self.local else "auto")
            deadline = time.monotonic() + READY_TIMEOUT_S
            while True:
                try:
                    headers = self.local.headers if self.local else None
                    with refusals(url):
                        self._client = JobSubmissionClient(url, headers=headers)
                    return self._client
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    gone = self.local is not None and self.local.proc.poll() is not None
                    if gone or time.monotonic() > deadline:
                        raise RunError(f"Ray cluster at {url} does not answer ({exc})") from None
                    time.sleep(1.0)

    def close(self) -> None:
        """Stop the local head, if this UI started one, and every job on it first: each
        active job is stopped through the Jobs API (its driver gets SIGTERM and finalizes
        its bundle) and waited for up to :data:`CLOSE_WAIT_S` s; what is left of the head's
        processes after that is ended by :meth:`LocalCluster.stop`. No job driver outlives
        the UI's head."""
        if self.local is None:
            return
        with contextlib.suppress(TouchstoneError, RuntimeError, ConnectionError):
            active = [j.job_id for j in self.jobs() if j.status in ACTIVE]
            for job_id in active:
                self.stop(job_id)
            deadline = time.monotonic() + CLOSE_WAIT_S
            while active and time.monotonic() < deadline:
                time.sleep(0.2)
                active = [
                    j.job_id for j in self.jobs() if j.job_id in active and j.status in ACTIVE
                ]
        self.local.stop()

    def path_of(self, value: str, what: str) -> Path:
        """The existing file or folder ``value`` names (absolute, or relative to ``--runs`` or
        the packs folder). Raises :class:`UsageError` naming ``what`` when it lies outside
        both or does not exist."""
        for base in (self.runs, self.packs):
            path = confined(base, value) if value else None  # absolute or relative to base
            if path is not None and path.exists():
                return path
        raise UsageError(f"{what} {value}: not a file under --runs or the packs folder")

    def jobs(self) -> list[JobInfo]:
        """Every touchstone job on the cluster, newest first; none before the local head is
        started (listing does not start it, the first submission does)."""
        if self.address is None and self.local is None:
            return []
        client = self.client()
        with self._refusals():
            listed = client.list_jobs()
        out = []
        for job in listed:
            meta = job.metadata or {}
            if "touchstone_kind" not in meta:
                continue
            hosts = tuple(h for h in meta.get("touchstone_hosts", "").split(",") if h)
            start = job.start_time / 1000.0 if job.start_time else None
            out.append(
                JobInfo(
                    str(job.submission_id),
                    meta["touchstone_kind"],
                    str(job.status.value if hasattr(job.status, "value") else job.status),
                    hosts,
                    job.entrypoint.removeprefix(EXEC),
                    start,
                    job.message,
                    meta.get(THEN_JUDGE) or None,
                    meta.get(CHAINED_FROM) or None,
                )
            )
        return sorted(out, key=lambda j: j.start_time or 0.0, reverse=True)

    def plan(self, kind: str, form: dict[str, str]) -> StartPlan:
        """What a job of ``kind`` (``eval``, ``perf``, ``judge``) from the form fields runs:
        ``pack``, ``config``, ``bundle``, ``judge_config``; for an eval also ``models`` and
        ``variants`` (comma-separated; with ``picked`` set, as the start form sends once it
        offered them, none ticked is refused), ``limit`` and a chained ``judge_config``
        (:func:`~touchstone_ray.ui.start.plan_eval`). Raises :class:`UsageError` with one line
        for an unknown kind, a path outside ``--runs`` and the packs folder, a bad fleet or
        judge config, or bad choices."""
        if kind == "eval":
            return plan_eval(self.path_of, self.runs, form)
        if kind == "perf":
            config = self.path_of(form.get("config", ""), "config")
            args = perf_command(config, out=self.runs)
            return StartPlan("perf", args, fleet_hosts(config))
        if kind == "judge":
            bundle = self.path_of(form.get("bundle", ""), "bundle")
            judge = self.path_of(form.get("judge_config", ""), "judge config")
            return StartPlan("judge", judge_command(bundle, judge), ())
        raise UsageError(f"kind {kind!r}: expected eval, perf or judge")

    def entry(self, kind: str, form: dict[str, str]) -> tuple[list[str], tuple[str, ...]]:
        """``(argv, hosts held)`` of :meth:`plan`."""
        plan = self.plan(kind, form)
        return plan.argv, plan.hosts

    def holders(self, hosts: tuple[str, ...]) -> list[tuple[str, JobInfo]]:
        """``(host, job)`` for each of ``hosts`` that a PENDING or RUNNING eval or perf job
        holds."""
        return [
            (host, job)
            for job in self.jobs()
            if job.kind in MEASURING and job.status in ACTIVE
            for host in sorted(set(hosts) & set(job.hosts))
        ]

    def submit(self, kind: str, form: dict[str, str]) -> str:
        """Submit a job; returns its id. Raises :class:`UsageError` naming the path that is
        not allowed, the bad choice, or the host an active eval already holds (with that
        job's id)."""
        return self.submit_plan(self.plan(kind, form))

    def submit_plan(self, plan: StartPlan) -> str:
        """Submit ``plan`` under the host rule (an eval or perf whose hosts an active eval or
        perf holds is refused, with that job's id); returns the job's id."""
        if plan.kind in MEASURING:
            busy = self.holders(plan.hosts)
            if busy:
                shared = sorted({host for host, _ in busy})
                job = busy[0][1]
                raise UsageError(
                    f"refused: host {', '.join(shared)} already runs {job.kind} job "
                    f"{job.job_id}; one eval per host at a time"
                )
        meta = {THEN_JUDGE: str(plan.then_judge)} if plan.then_judge else None
        return self.launch(plan.kind, plan.argv, plan.hosts, meta)

    def launch(
        self,
        kind: str,
        argv: list[str],
        hosts: tuple[str, ...],
        meta: dict[str, str] | None = None,
        job_id: str | None = None,
    ) -> str:
        """Submit ``argv`` (a ``touchstone-ray`` command) as a job of ``kind`` holding
        ``hosts``, without the host rule, with ``meta`` added to its metadata (under the
        id ``job_id``, default a new one); returns its id. Raises :class:`RunError` when the
        cluster refuses or fails the submission."""
        job_id = (
            job_id or f"touchstone-{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(2).hex()}"
        )
        metadata = {"touchstone_kind": kind, "touchstone_hosts": ",".join(hosts), **(meta or {})}
        client = self.client()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                with self._refusals():
                    job = client.submit_job(
                        entrypoint=EXEC + shlex.join(argv),
                        submission_id=job_id,
                        metadata=metadata,
                    )
                return str(job)
            except RuntimeError as exc:
                # a fresh head answers before its job agent is up
                if "No available agent" not in str(exc) or time.monotonic() > deadline:
                    raise RunError(f"job submission failed: {exc}") from None
                time.sleep(1.0)

    def last_line(self, job_id: str) -> str:
        """The last non-empty line of the job's log (an eval prints its bundle's path last)."""
        _, text = self.logs(job_id)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def chain(self) -> list[str]:
        """Start the judge job of every eval job that SUCCEEDED with a chained judge config
        (:data:`THEN_JUDGE` in its metadata) and has none yet; returns the ids started. The
        chain lives in the jobs' metadata (the judge job's id is the eval's plus ``-judge``,
        its :data:`CHAINED_FROM` the eval's), so a reloaded UI neither loses nor repeats it."""
        if self.address is None and self.local is None:
            return []
        listed = self.jobs()
        chained = {j.chained_from for j in listed if j.chained_from}
        started = []
        for job in listed:
            if job.kind != "eval" or not job.then_judge or job.status != "SUCCEEDED":
                continue
            if job.job_id in chained:
                continue
            bundle = Path(self.last_line(job.job_id)).resolve()
            if not bundle.is_relative_to(self.runs) or not (bundle / "bundle.json").is_file():
                continue
            argv = [PROGRAM, *judge_command(bundle, Path(job.then_judge))]
            meta = {CHAINED_FROM: job.job_id}
            with contextlib.suppress(RunError):  # a second UI was quicker: the id is taken
                started.append(self.launch("judge", argv, (), meta, f"{job.job_id}-judge"))
        return started

    def judged_bundle(self, job_id: str) -> Path | None:
        """The bundle a judge job judges (its entrypoint's ``--bundle``, under ``--runs``), or
        None: another kind of job, an unknown job, or no cluster started yet."""
        if self.address is None and self.local is None:
            return None
        try:
            listed = self.jobs()
        except (TouchstoneError, RuntimeError):
            return None
        for job in listed:
            if job.job_id == job_id and job.kind == "judge":
                argv = shlex.split(job.entrypoint)
                if "--bundle" in argv[:-1]:
                    bundle = Path(argv[argv.index("--bundle") + 1]).resolve()
                    return bundle if bundle.is_relative_to(self.runs) else None
        return None

    def stop(self, job_id: str) -> bool:
        """Ask the cluster to stop the job; ``False`` when it had already ended."""
        client = self.client()
        with self._refusals():
            return bool(client.stop_job(job_id))

    def logs(self, job_id: str) -> tuple[str, str]:
        """``(status, logs so far)`` of the job, terminal colour codes removed."""
        client = self.client()
        text = ""
        with self._refusals():
            status = client.get_job_status(job_id)
            with contextlib.suppress(RuntimeError):
                text = ANSI.sub("", client.get_job_logs(job_id))
        return str(status.value if hasattr(status, "value") else status), text
