"""The processes a test run starts: found, reported and stopped (``tests/conftest.py``).

A run is tagged: :func:`tag_run` puts ``TOUCHSTONE_TEST_RUN=<uuid>`` in this process's
environment before collection, so every process started from it inherits the tag, whoever its
parent is by the end: a child of a subprocess that died, a Ray worker, a Ray job's entrypoint
on a head a test started, a node of ``ray start``. A process started with an environment of
its own (no tag) is still found while it is a descendant of the pytest process
(:meth:`RunProcesses.note_descendants`, after every test). Zombies are not processes left
running; the processes alive before the run never count.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psutil

RUN_TAG = "TOUCHSTONE_TEST_RUN"
"""Environment variable naming the test run a process belongs to."""
GRACE = "TOUCHSTONE_TEST_GRACE_S"
"""Environment variable: how long processes get to end on their own after the last test (s),
default 15: Ray's workers and the daemons of a cluster that was shut down exit within a few
seconds."""


def tag_run() -> str:
    """Give this process (and so everything it starts) a run tag, a fresh one unless a test
    run that started this one gave it its own; returns it."""
    return os.environ.setdefault(RUN_TAG, uuid.uuid4().hex)


def _key(proc: psutil.Process) -> tuple[int, float]:
    return proc.pid, proc.create_time()


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _tagged(tag: str) -> Iterator[psutil.Process]:
    for proc in psutil.process_iter():
        with suppress(psutil.Error):
            if proc.environ().get(RUN_TAG) == tag:
                yield proc


class RunProcesses:
    """The processes of one test run: the ones alive at its start (never counted), the
    descendants of this process seen so far, and the ones carrying the run's tag."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.me = psutil.Process()
        self.before: set[tuple[int, float]] = set()
        for proc in psutil.process_iter():
            with suppress(psutil.Error):
                self.before.add(_key(proc))
        self.seen: dict[tuple[int, float], psutil.Process] = {}

    def note_descendants(self) -> None:
        """Remember this process's descendants now alive (one may be orphaned later)."""
        with suppress(psutil.Error):
            for proc in self.me.children(recursive=True):
                with suppress(psutil.Error):
                    self.seen.setdefault(_key(proc), proc)

    def alive(self) -> list[psutil.Process]:
        """The run's processes still running, by pid (this process excluded)."""
        self.note_descendants()
        found = dict(self.seen)
        for proc in _tagged(self.tag):
            with suppress(psutil.Error):
                found.setdefault(_key(proc), proc)
        return sorted(
            (
                p
                for k, p in found.items()
                if k not in self.before and p.pid != self.me.pid and _running(p)
            ),
            key=lambda p: p.pid,
        )

    def left_behind(self) -> list[psutil.Process]:
        """:meth:`alive`, after waiting up to :data:`GRACE` s for them to end."""
        deadline = time.monotonic() + float(os.environ.get(GRACE, "15"))
        while (procs := self.alive()) and time.monotonic() < deadline:
            time.sleep(0.25)
        return procs


def describe(procs: Iterable[psutil.Process]) -> list[str]:
    """``pid <pid>: <command line>`` for each process (its name when the line is empty)."""
    lines = []
    for proc in procs:
        try:
            cmd = " ".join(proc.cmdline()) or proc.name()
        except psutil.Error:
            cmd = "(gone)"
        lines.append(f"pid {proc.pid}: {cmd}")
    return lines


def kill_all(procs: Iterable[psutil.Process], timeout_s: float = 10.0) -> None:
    """SIGKILL each process and wait up to ``timeout_s`` for them to be gone."""
    procs = list(procs)
    for proc in procs:
        with suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(procs, timeout=timeout_s)


def sigint_default() -> None:
    """``preexec_fn`` for a child that a test stops with SIGINT: a shell that runs the suite
    in the background ignores SIGINT, its children inherit that, and Python then installs no
    ``KeyboardInterrupt`` handler. The child gets the default back before it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signal(proc: subprocess.Popen[Any], sig: int) -> None:
    """``sig`` to the process group ``proc`` leads, else (no leader) to ``proc`` alone; nothing
    once ``proc`` was reaped (its pid may belong to another process by then)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:  # no group of that id: proc leads none
        with suppress(ProcessLookupError):
            proc.send_signal(sig)


def _exited(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def stop_group(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """End ``proc`` and, where it leads one (``start_new_session=True``), its process group:
    SIGTERM, up to ``timeout_s`` for ``proc`` to exit, then SIGKILL to whatever of the group
    is left; reaps ``proc``. One already reaped is left alone."""
    if proc.returncode is not None:
        return
    _signal(proc, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while not _exited(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal(proc, signal.SIGKILL)  # unreaped, so its pid still names the group
    proc.wait()


@contextmanager
def stopped(
    proc: subprocess.Popen[Any], timeout_s: float = 10.0
) -> Iterator[subprocess.Popen[Any]]:
    """Yield ``proc``; at exit, however the block ends, :func:`stop_group` it."""
    try:
        yield proc
    finally:
        stop_group(proc, timeout_s)
