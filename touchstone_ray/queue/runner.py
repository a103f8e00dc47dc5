"""``touchstone-ray queue run``: the entries of a queue file on one Ray cluster, unattended.

Each entry leases the hosts its fleet config uses (its models' ``host``; ``local`` for models
without one). An entry starts once none of its hosts is held by a running entry *and* no
earlier waiting entry shares one of them, so entries on disjoint hosts run at once and entries
sharing a host run in file order. Per entry: each host's reset and settle
(:mod:`.hosts`), then its stages one after another, each a child ``touchstone-ray`` process
joined to the queue's cluster (``--address``; without one the queue starts a local head for its
whole run, :class:`~touchstone_ray.fleet.local_head.LocalCluster`): ``eval`` (or ``perf``),
``judge`` when the entry has a ``judge_config``, ``report`` (``--unjudged``, the rating task,
for an eval without a judge). A child gets SIGTERM (it finalizes what it wrote; SIGKILL 30 s
later) when its bundle has had no new record for ``stall_timeout_s`` (``stalled``) or the
entry ran past its ``timeout_s`` (``failed``, the reason says so).

Every step goes to ``queue-state.jsonl`` (:mod:`.state`) before the next begins, so running
the queue again after the driver died skips the finished entries (unless their pack, config or
settings changed: the fingerprint), skips the stages an interrupted entry finished, and resumes
its bundle (``--resume``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from touchstone_ray.config import load_config
from touchstone_ray.errors import ConfigError, one_line
from touchstone_ray.fleet.local_head import die_with_parent
from touchstone_ray.queue.commands import (
    eval_command,
    judge_command,
    perf_command,
    report_command,
    tools_command,
)
from touchstone_ray.queue.hosts import HostOps
from touchstone_ray.queue.spare import Spare
from touchstone_ray.queue.spec import (
    EntrySpec,
    HostReset,
    QueueSpec,
    entry_fingerprint,
    load_queue,
)
from touchstone_ray.queue.state import (
    EntryState,
    QueueLog,
    entries_text,
    read_states,
    stop_file,
)
from touchstone_ray.queue.summary import write_summary

RUN_STAGES = ("eval", "perf", "tools")
"""The stages that make an entry's bundle (the others work on it)."""

__all__ = ["KILL_AFTER_S", "POLL_S", "entry_hosts", "run_queue"]

POLL_S = 0.5
"""Interval of the driver's checks: children, watchdog, waiting entries (s)."""
KILL_AFTER_S = 30.0
"""Grace between a stopped child's SIGTERM and its SIGKILL (s)."""
RECORD_FOLDERS = ("responses", "points", "embed", "judgements")
"""The bundle folders whose writes are records (the watchdog's clock; host samples and events
keep coming from a stuck run)."""


def entry_hosts(entry: EntrySpec) -> frozenset[str]:
    """The hosts an entry holds: its models' hosts in its fleet config."""
    config = load_config(entry.config)
    chosen = set(entry.models or ())
    return frozenset(
        m.host_name
        for m in config.models
        if not chosen or m.id in chosen or config.model_label(m) in chosen
    )


def find_bundle(folder: Path) -> Path | None:
    """The newest bundle (a folder with ``bundle.json``) directly under ``folder``."""
    found = [p.parent for p in folder.glob("*/bundle.json")]
    return max(found, key=lambda p: p.stat().st_mtime_ns) if found else None


def newest_record(bundle: Path) -> float | None:
    """Newest mtime (epoch s) of a file in the bundle's :data:`RECORD_FOLDERS`; ``None`` when
    there is none."""
    newest: float | None = None
    for folder, _, files in (w for name in RECORD_FOLDERS for w in os.walk(bundle / name)):
        for name in files:
            try:
                mtime = os.stat(os.path.join(folder, name)).st_mtime
            except OSError:
                continue
            newest = mtime if newest is None else max(newest, mtime)
    return newest


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


@dataclass
class EntryRun:
    """One entry's try: its stages, run by :meth:`run` in a thread of the driver."""

    entry: EntrySpec
    folder: Path
    fingerprint: str
    hosts: frozenset[str]
    before: EntryState | None
    """What the log said before this try (its finished stages are skipped)."""
    queue: QueueRunner
    bundle: Path | None = None
    state: str = "running"
    reason: str | None = None
    stage: str = ""
    """The stage running or last run."""
    stopped: bool = False
    """The watchdog stopped the entry (stalled, or past its ``timeout_s``)."""
    started: float = field(default_factory=time.monotonic)
    thread: threading.Thread | None = None

    def stages(self) -> list[str]:
        """The entry's stages in order: ``eval``/``perf``, ``judge``, ``report``."""
        stages: list[str] = [self.entry.kind]
        if self.entry.judge_config is not None:
            stages.append("judge")
        if self.entry.report:
            stages.append("report")
        return stages

    def command(self, stage: str) -> list[str]:
        """The ``touchstone-ray`` arguments of ``stage`` (built by :mod:`.commands`)."""
        e, address = self.entry, self.queue.address
        out, resume = (None, self.bundle) if self.bundle else (self.folder, None)
        if stage == "eval":
            assert e.pack is not None
            return eval_command(e.pack, e.config, out=out, resume=resume, address=address,
                                models=e.models, variants=e.variants, limit=e.limit)  # fmt: skip
        if stage == "perf":
            return perf_command(e.config, out=out, resume=resume, address=address, models=e.models)
        if stage == "tools":
            assert e.pack is not None
            return tools_command(e.pack, e.config, out=out, resume=resume, address=address,
                                 models=e.models, limit=e.limit)  # fmt: skip
        assert self.bundle is not None
        if stage == "judge":
            assert e.judge_config is not None
            return judge_command(self.bundle, e.judge_config, address=address)
        return report_command(self.bundle, unjudged=e.kind == "eval" and e.judge_config is None)

    def run(self) -> None:
        """Reset and settle the hosts, then each stage not finished before; the entry's end
        goes to the log whatever happens."""
        try:
            self._run()
        except Exception as exc:  # a bug must not stop the queue: the entry fails with it
            self.state = "failed"
            self.reason = one_line(f"internal error {type(exc).__name__}: {exc}")
        duration = time.monotonic() - self.started
        self.queue.log.write(
            "entry_ended",
            self.entry.name,
            stage=self.stage or self.entry.kind,
            state=self.state,
            reason=self.reason,
            bundle=self._bundle_text(),
            duration_s=round(duration, 3),
            fingerprint=self.fingerprint,
        )
        tail = f": {self.reason}" if self.reason else ""
        self.queue.say(f"entry {self.entry.name}: {self.state} in {duration:.1f} s{tail}")
        self.queue.wake.set()  # the driver starts what waited for this entry's hosts now

    def _run(self) -> None:
        q = self.queue
        finished = list(self.before.stages) if self.before else []
        if self.before is not None and self.before.bundle:
            self.bundle = Path(self.before.bundle)
        elif self.bundle is None and self.before is not None:
            self.bundle = find_bundle(self.folder)
        q.log.write(
            "entry_started",
            self.entry.name,
            stage=self.entry.kind,
            state="running",
            bundle=self._bundle_text(),
            fingerprint=self.fingerprint,
            hosts=sorted(self.hosts),
        )
        for host in sorted(self.hosts):
            problem = q.prepare_host(host)
            if problem is not None:
                self.state, self.reason = "failed", problem
                return
        failure: str | None = None
        for stage in self.stages():
            if stage in finished:
                q.say(f"entry {self.entry.name}: {stage} finished before, skipped")
                q.log.write(
                    "stage_skipped",
                    self.entry.name,
                    stage=stage,
                    state="skipped",
                    bundle=self._bundle_text(),
                    reason="finished in an earlier try",
                )
                continue
            if stage != self.entry.kind and self.bundle is None:
                break
            self.stage = stage
            code = self._stage(stage)
            if self.stopped:
                return
            if code == 0:
                q.log.write("stage_done", self.entry.name, stage=stage, state="done",
                            bundle=self._bundle_text())  # fmt: skip
                continue
            failure = failure or f"{stage} exited {code}: {self._stage_line(stage)}"
            if code != 1 or self.bundle is None:  # bad input, or no bundle to go on with
                break
        if failure is not None:
            self.state, self.reason = "failed", failure
        else:
            self.state = "done"

    def _bundle_text(self) -> str | None:
        return str(self.bundle) if self.bundle else None

    def _stage_line(self, stage: str) -> str:
        return _last_line(self.folder / f"{stage}.err") or _last_line(self.folder / f"{stage}.out")

    def _stage(self, stage: str) -> int:
        """Run one stage's child, watching it; its exit code (or -signal when stopped)."""
        q = self.queue
        self.folder.mkdir(parents=True, exist_ok=True)
        q.say(f"entry {self.entry.name}: {stage} started")
        child = q.start_stage(self.command(stage), self.folder / stage)
        began = time.time()
        while child.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=POLL_S)  # returns as soon as the stage exits
            if self.bundle is None and stage in RUN_STAGES:
                self.bundle = find_bundle(self.folder)
            why = self._watchdog(began) if child.poll() is None else None
            if why is not None:
                (self.state, self.reason), self.stopped = why, True
                q.say(f"entry {self.entry.name}: {self.reason}; stopping its {stage}")
                _stop(child)
                break
        code = child.wait()
        if stage in RUN_STAGES:
            printed = _last_line(self.folder / f"{stage}.out")
            if printed and Path(printed, "bundle.json").is_file():
                self.bundle = Path(printed)
            elif self.bundle is None:
                self.bundle = find_bundle(self.folder)
        return code

    def _watchdog(self, began: float) -> tuple[str, str] | None:
        """``(state, reason)`` when the entry must stop now, else ``None``."""
        if stop_file(self.queue.folder, self.entry.name).exists():
            return "skipped", "stopped on request"
        timeout = self.entry.timeout_s
        if timeout is not None and time.monotonic() - self.started > timeout:
            return "failed", f"timeout: ran past its timeout_s ({timeout:g} s)"
        stall = self.queue.spec.stall_timeout_s
        last = newest_record(self.bundle) if self.bundle is not None else None
        if time.time() - max(last or began, began) > stall:
            return "stalled", f"no new record in its bundle for {stall:g} s (stall_timeout_s)"
        return None


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child (it finalizes), SIGKILL its process group after :data:`KILL_AFTER_S`."""
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=KILL_AFTER_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)


class QueueRunner:
    """The driver of one queue: leases hosts, starts entries, writes the log and summary."""

    def __init__(
        self,
        spec: QueueSpec,
        address: str | None,
        out: TextIO,
        child_env: dict[str, str],
        source: Path | None = None,
    ) -> None:
        assert spec.out is not None
        self.spec = spec
        self.folder = spec.out
        self.address = address
        self.out = out
        self.child_env = child_env
        self.source = source
        """The queue file, followed while the queue runs (entries added, removed, reordered);
        ``None``: the entries of ``spec`` only."""
        self._source_stamp = _stamp(source)
        self.log = QueueLog(self.folder)
        self._say_lock = threading.Lock()
        self._host_ops: HostOps | None = None
        self._baseline_mb: dict[str, float | None] = {}
        self._reset_seen: set[str] = set()
        self._skipped: dict[str, str] = {}
        """Entry name → fingerprint of the entries this run decided not to run."""
        self.wake = threading.Event()
        """Set when an entry ended: the driver's loop looks at once instead of after
        :data:`POLL_S`."""
        self._spare: Spare | None = None
        self._spare_lock = threading.Lock()

    def start_stage(self, args: list[str], files: Path) -> subprocess.Popen[bytes]:
        """Start ``touchstone-ray args`` (output to ``files`` + ``.out`` / ``.err``): in the
        warm spare when one is ready (:mod:`.spare`), else a new process."""
        out, err = files.with_suffix(".out"), files.with_suffix(".err")
        with self._spare_lock:
            spare, self._spare = self._spare, None
        self.wake.set()  # the driver's thread starts the next spare
        child = spare.run(args, out, err) if spare is not None else None
        if child is not None:
            return child
        with open(out, "w") as out_file, open(err, "w") as err_file:
            return subprocess.Popen(
                [sys.executable, "-m", "touchstone_ray.cli", *args],
                stdout=out_file,
                stderr=err_file,
                stdin=subprocess.DEVNULL,
                env=self.child_env,
                start_new_session=True,
                preexec_fn=die_with_parent,  # a SIGKILLed queue leaves no stage running
            )

    def _keep_spare(self, needed: bool) -> None:
        """Start a spare when ``needed`` and none is ready; end the ready one when not. On the
        driver's own thread: a child's ``die_with_parent`` is tied to the thread that started
        it."""
        with self._spare_lock:
            if needed and self._spare is None:
                self._spare = Spare(self.address, self.child_env)
            elif not needed and self._spare is not None:
                self._spare.close()
                self._spare = None

    def say(self, line: str) -> None:
        """Print one progress line (threads share the output)."""
        with self._say_lock:
            print(line, file=self.out, flush=True)

    def host_ops(self) -> HostOps:
        """The pinned-task runner for reset and settle, joining Ray on first use."""
        if self._host_ops is None:
            import ray

            from touchstone_ray.fleet import current_nodes, ensure_ray, resolve_hosts

            if not ray.is_initialized():
                os.environ.update(self.child_env)
                ensure_ray(self.address, load_config(self.spec.entries[0].config).ray)
            head = ray.get_runtime_context().get_node_id()
            nodes: dict[str, str] = {}
            for entry in self.spec.entries:
                found = resolve_hosts(load_config(entry.config), current_nodes(), head)
                nodes.update({host: node.node_id for host, node in found.items()})
            self._host_ops = HostOps(nodes, self.say)
        return self._host_ops

    def prepare_host(self, host: str) -> str | None:
        """Reset and settle ``host`` before an entry; the reason when its reset failed."""
        settings = self.spec.hosts.get(host, HostReset())
        needs_ray = settings.reset_command is not None or settings.settle_memory_mb is not None
        if not needs_ray:
            time.sleep(settings.settle_s)
            return None
        ops = self.host_ops()
        if host not in ops.nodes:
            return f"host {host} has no Ray node for its reset (is its worker up?)"
        problem = ops.reset(host, settings)
        if problem is not None:
            return problem
        ops.settle(host, settings, self._baseline_mb.get(host))
        self._baseline_mb[host] = ops.used_mb(host)
        return None

    def _plan(self, entry: EntrySpec, states: dict[str, EntryState]) -> EntryRun | None:
        """The entry's run (logged ``pending``), or ``None`` when it ended ``done`` (or was
        stopped on request, its stop file still there) with the same fingerprint; says why in
        one line."""
        fingerprint = entry_fingerprint(entry)
        before = states.get(entry.name)
        if before is not None and before.fingerprint != fingerprint:
            if before.state == "done":
                self.say(
                    f"entry {entry.name}: its pack, config or settings changed since it "
                    "finished; running it again"
                )
            before = None
        elif before is not None and before.state == "done":
            self.say(f"entry {entry.name}: done before, skipped")
            self._skipped[entry.name] = fingerprint
            return None
        elif before is not None and stop_file(self.folder, entry.name).exists():
            self.say(f"entry {entry.name}: stopped on request before, skipped")
            self._skipped[entry.name] = fingerprint
            return None
        self.log.write("entry_pending", entry.name, stage=entry.kind, state="pending")
        folder = self.folder / entry.name
        return EntryRun(entry, folder, fingerprint, entry_hosts(entry), before, self)

    def _follow(self, waiting: list[EntryRun], taken: set[str]) -> list[EntryRun]:
        """The waiting entries after a change of the queue file: entries added there are
        planned, removed ones dropped, the rest in the file's order (``taken``: names started
        in this run). A file that does not load keeps the entries read before, with a line."""
        stamp = _stamp(self.source)
        if self.source is None or stamp == self._source_stamp:
            return waiting
        self._source_stamp = stamp
        if stamp is None:  # the file is gone: nothing more to start
            return []
        try:
            spec = load_queue(self.source)
        except ConfigError as exc:
            self.say(f"queue: {exc}; going on with the entries read before")
            return waiting
        self.spec = spec.model_copy(update={"out": self.folder})
        known = {run.entry.name: run for run in waiting}
        states = read_states(self.folder)
        planned: list[EntryRun] = []
        for entry in spec.entries:
            if entry.name in taken:
                continue
            fingerprint = entry_fingerprint(entry)
            run = known.get(entry.name)
            if run is not None and run.fingerprint == fingerprint:
                planned.append(run)
            elif self._skipped.get(entry.name) != fingerprint:
                self._skipped.pop(entry.name, None)
                if (new := self._plan(entry, states)) is not None:
                    planned.append(new)
        return planned

    def run(self) -> int:
        """Run every entry not finished before (and, following :attr:`source`, those added
        while it runs); 0 when all ended ``done``, else 1."""
        states = read_states(self.folder)
        waiting = [r for e in self.spec.entries if (r := self._plan(e, states)) is not None]
        running: list[EntryRun] = []
        held: set[str] = set()
        ended: list[EntryRun] = []
        taken: set[str] = set()
        write_summary(self.spec, read_states(self.folder))
        summaries = _Summaries(self.folder)
        while True:
            finished = False
            for run in list(running):
                if run.thread is not None and not run.thread.is_alive():
                    running.remove(run)
                    held -= run.hosts
                    ended.append(run)
                    finished = True
            self.wake.clear()
            waiting = self._follow(waiting, taken)
            self._keep_spare(bool(waiting or running))
            if not (waiting or running):
                break
            ahead: set[str] = set()
            for run in list(waiting):
                if not (run.hosts & held or run.hosts & ahead):
                    waiting.remove(run)
                    taken.add(run.entry.name)
                    held |= run.hosts
                    run.started = time.monotonic()
                    run.thread = threading.Thread(
                        target=run.run, name=f"queue:{run.entry.name}", daemon=True
                    )
                    self.say(f"entry {run.entry.name}: on {', '.join(sorted(run.hosts))}")
                    run.thread.start()
                    running.append(run)
                ahead |= run.hosts
            if finished:
                summaries.ask(self.spec)
            self.wake.wait(POLL_S)
        summaries.close()
        summary = write_summary(self.spec, read_states(self.folder))
        self.log.close()
        self.say(f"queue: {entries_text(len(ended))} run; summary {summary}")
        if self.spec.notify_command:
            _notify(self.spec.notify_command, summary, self.say)
        states = read_states(self.folder)
        ends = [states.get(e.name, EntryState(e.name)).state for e in self.spec.entries]
        return 0 if all(state == "done" for state in ends) else 1


class _Summaries:
    """Rewrites the summary after an entry ended, on a thread of its own at nice 19: it reads
    every bundle (a second or more of CPU), and the next entries' start-up on the same machine
    comes first."""

    NICE = 19

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._asked: QueueSpec | None = None
        self._done = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="queue:summary", daemon=True)
        self._thread.start()

    def ask(self, spec: QueueSpec) -> None:
        """Rewrite the summary of ``spec`` soon (once, however often asked meanwhile)."""
        with self._cond:
            self._asked = spec
            self._cond.notify()

    def close(self) -> None:
        """Finish the rewrite asked for last, then end the thread."""
        with self._cond:
            self._done = True
            self._cond.notify()
        self._thread.join()

    def _loop(self) -> None:
        with contextlib.suppress(OSError):  # Linux: a nice value is per thread
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.NICE)
        while True:
            with self._cond:
                while self._asked is None and not self._done:
                    self._cond.wait()
                spec, self._asked = self._asked, None
                if spec is None:
                    return
            write_summary(spec, read_states(self.folder))


def _stamp(path: Path | None) -> int | None:
    """``path``'s mtime (ns), ``None`` when it is missing or not given."""
    try:
        return None if path is None else path.stat().st_mtime_ns
    except OSError:
        return None


def _notify(command: str, summary: Path, say: Callable[[str], None]) -> None:
    try:
        subprocess.run(["/bin/sh", "-c", f'{command} "$0"', str(summary)], timeout=60, check=True)
    except (subprocess.SubprocessError, OSError) as exc:
        say(f"warning: notify_command failed: {one_line(str(exc))}")


def run_queue(path: Path, address: str | None, out: TextIO = sys.stdout) -> int:
    """Run the queue file at ``path``; exit code 0 when every entry is ``done``, else 1.
    Raises :class:`~touchstone_ray.errors.ConfigError` for a bad queue file (before anything
    runs)."""
    from touchstone_ray.fleet.local_head import LocalCluster

    spec = load_queue(path)
    for entry in spec.entries:  # every config readable before the night starts
        entry_hosts(entry)
    local: LocalCluster | None = None
    env = dict(os.environ)
    if address is None:
        local = LocalCluster(tied=True)
        address, env = local.address, local.client_env()
        print(f"queue: started a local Ray head at {address} for the queue", file=out)
    try:
        return QueueRunner(spec, address, out, env, source=path).run()
    finally:
        if local is not None:
            import ray

            if ray.is_initialized():
                ray.shutdown()
            local.stop()
