"""A warm stage process: a ``touchstone-ray`` child started before a stage needs it.

A stage started cold spends seconds before its first request: a new interpreter, the imports
of the stages (``touchstone_ray.eval.run`` alone is 1–3 s here), joining the cluster. The
queue keeps one :class:`Spare` ready instead: ``python -m touchstone_ray.queue.spare
[--address A]`` imports what the stages import, joins the queue's cluster (``ray.init``, reused
by the stage: :func:`~touchstone_ray.fleet.ensure_ray` keeps an initialised Ray) and waits for
one JSON line on its stdin, ``{"argv": [...], "out": path, "err": path}``; it then points its
stdout and stderr at those files and runs ``touchstone-ray <argv>`` as ``python -m
touchstone_ray.cli`` would (:func:`runpy.run_module`), exiting with its code. To the queue it is
the stage's process like a cold one (signals, exit code, output files).

The spare's own start (about 1–3 s of one core on the queue driver's node) runs while the stage
before it starts, at nice 19 so that it takes no CPU that stage wants; it then sleeps on its
stdin. When it gets its stage, the queue sets it back to the queue's priority (so a spare still
warming up, after a stage too short to leave it the time, finishes at that priority), and so
does the spare itself (where raising a priority is allowed: root or ``CAP_SYS_NICE``; elsewhere
the stage's driver stays at nice 19, the actors that measure are Ray's workers and keep
theirs). Closing the stdin ends an unused spare.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import IO

from touchstone_ray.fleet.local_head import die_with_parent

__all__ = ["WARM", "Spare", "main"]

WARM_NICE = 19
"""The nice value a spare warms up at: its imports take CPU only where nothing else wants it."""
WARM = ("typer", "touchstone_ray.eval.run", "touchstone_ray.judging", "touchstone_ray.perf")
"""What the spare imports while it waits: the CLI's framework and the stages."""


class Spare:
    """One warm stage process of the queue driver (see the module text)."""

    def __init__(self, address: str | None, env: dict[str, str]) -> None:
        self.priority = os.getpriority(os.PRIO_PROCESS, 0)
        """The queue's priority, which the spare goes back to when it gets its stage."""
        at = ["--address", address] if address else []
        at += ["--priority", str(self.priority)]
        self.proc: subprocess.Popen[bytes] = subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.queue.spare", *at],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_spare_start,
        )

    def run(self, argv: list[str], out: Path, err: Path) -> subprocess.Popen[bytes] | None:
        """Hand ``touchstone-ray argv`` (its output to ``out`` and ``err``) to the spare; its
        process, or ``None`` when the spare is gone (start the stage cold then)."""
        stdin = self.proc.stdin
        if self.proc.poll() is not None or stdin is None:
            return None
        job = {"argv": argv, "out": str(out), "err": str(err)}
        try:
            stdin.write(json.dumps(job).encode() + b"\n")
            stdin.close()
        except OSError:
            return None
        # a spare still warming up finishes at the queue's priority, not at nice 19 (a short
        # stage before it, e.g. one whose host agent was up, left it no time)
        _reprioritize(self.priority, self.proc.pid)
        return self.proc

    def close(self) -> None:
        """End an unused spare (it reads the end of its stdin and exits)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _spare_start() -> None:
    """``preexec_fn`` of a spare: it dies with the queue (a SIGKILLed queue leaves no spare or
    stage running) and warms up at the lowest CPU priority, beside the stage just started."""
    die_with_parent()
    os.nice(WARM_NICE)


def _reprioritize(priority: int, pid: int | None = None) -> None:
    """Every thread of process ``pid`` (default this one) back to ``priority`` (Linux: a nice
    value is per thread; raising a priority needs ``CAP_SYS_NICE``: without it the stage stays
    low). Never raises (a process that is gone, no procfs)."""
    try:
        tids = os.listdir(f"/proc/{pid or 'self'}/task")
    except OSError:
        return
    for tid in tids:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, int(tid), priority)


def _point(fd: int, path: str, stream: IO[str]) -> None:
    stream.flush()
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(target, fd)
    os.close(target)


def main() -> None:
    """The spare process: warm up, wait for the stage, become it."""
    parser = argparse.ArgumentParser(prog="touchstone_ray.queue.spare")
    parser.add_argument("--address")
    parser.add_argument("--priority", type=int, default=0)
    args = parser.parse_args()
    address = args.address
    for name in WARM:
        importlib.import_module(name)

    if address:
        from touchstone_ray.config import RaySettings
        from touchstone_ray.fleet import ensure_ray

        ensure_ray(address, RaySettings())
    line = sys.stdin.readline()
    if not line:
        return
    job = json.loads(line)
    _reprioritize(args.priority)
    _point(1, job["out"], sys.stdout)
    _point(2, job["err"], sys.stderr)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.argv = ["touchstone-ray", *job["argv"]]
    runpy.run_module("touchstone_ray.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
