"""Helpers for the reliability tests: CLI drivers as subprocesses that can be SIGKILLed at a
chosen record count, simulator idling, and a scan for secrets.

Processes are started in their own session and ended by their pid only (never ``ray stop``,
never a broad name). The eval and judging helpers (``eval_helpers``) do the rest.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_helpers import REPO, sim_stats
from procs import sigint_default


def start_cli(args: list[str], log: Path) -> subprocess.Popen[str]:
    """``python -m touchstone_ray.cli ARGS`` in its own session; stdout/stderr go to
    ``<log>.out`` / ``<log>.err``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.cli", *args],
            stdout=out,
            stderr=err,
            text=True,
            env=dict(os.environ),
            cwd=REPO,
            start_new_session=True,
            preexec_fn=sigint_default,  # Ctrl-C reaches it in a background run too
        )


def read_log(log: Path) -> tuple[str, str]:
    """(stdout, stderr) written by a :func:`start_cli` process."""
    return Path(f"{log}.out").read_text(), Path(f"{log}.err").read_text()


def wait_for(
    predicate: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.02
) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def fault_when(
    proc: subprocess.Popen[str],
    ready: Callable[[], bool],
    what: str,
    log: Path,
    fault: Callable[[], object],
    *,
    timeout_s: float,
    exit_timeout_s: float = 60,
) -> float:
    """Once ``ready()`` holds (within ``timeout_s``; fails if ``proc`` ended first), run
    ``fault()`` and wait up to ``exit_timeout_s`` for ``proc`` to end on its own; a ``proc``
    still running after that (or after a failure here) is killed. Returns the epoch s right
    before ``fault()``."""
    try:
        wait_for(lambda: ready() or proc.poll() is not None, timeout_s, what)
        assert proc.poll() is None, read_log(log)
        t_fault = time.time()
        fault()
        proc.wait(timeout=exit_timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return t_fault


def kill_when(
    proc: subprocess.Popen[str], count: Callable[[], int], target: int, log: Path, timeout_s: float
) -> int:
    """SIGKILL ``proc`` as soon as ``count() >= target``; returns the count seen at the kill.
    Fails if the process ends first or the target is not reached in time."""
    try:
        wait_for(
            lambda: count() >= target or proc.poll() is not None,
            timeout_s,
            f"{target} records (log {log})",
        )
        seen = count()
        if proc.poll() is not None:
            out, err = read_log(log)
            raise AssertionError(f"exited {proc.returncode} before {target} records:\n{out}{err}")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return seen


def wait_sim_idle(base_url: str, timeout_s: float = 60, quiet_s: float = 0.5) -> dict[str, Any]:
    """Wait until the simulator has had no request in flight and no new request for
    ``quiet_s`` (a killed driver's orphaned actor finishes, starts what it had queued, or
    dies), then return its ``/sim/stats``."""
    last: dict[str, Any] = {}
    quiet_since = time.monotonic()

    def quiet() -> bool:
        nonlocal last, quiet_since
        stats = sim_stats(base_url)
        if any(stats["in_flight"].values()) or stats["requests"] != last.get("requests"):
            last, quiet_since = stats, time.monotonic()
            return False
        return time.monotonic() - quiet_since >= quiet_s

    wait_for(quiet, timeout_s, "the simulator to go quiet", poll_s=0.1)
    return last


def line_count(paths: Iterable[Path]) -> int:
    """Complete lines over ``paths`` (missing files count 0)."""
    total = 0
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            total += path.read_bytes().count(b"\n")
    return total


@dataclass
class Hit:
    """Where a secret was found."""

    path: Path
    line: int


def find_secret(roots: list[Path], secret: str) -> list[Hit]:
    """Every file below ``roots`` (recursively, binary-safe) whose bytes contain ``secret``."""
    needle = secret.encode()
    hits: list[Hit] = []
    for root in roots:
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        for path in files:
            try:
                data = path.read_bytes()
            except OSError:
                continue  # sockets, vanished temp files
            if needle in data:
                hits.append(Hit(path, data[: data.index(needle)].count(b"\n") + 1))
    return hits
