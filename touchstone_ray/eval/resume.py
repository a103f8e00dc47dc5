"""Resume's scan beside Ray's start: two start-up steps that share nothing run at once.

A resume must read every shard (which keys are done) and connect to Ray; the scan is file
I/O and byte matching, Ray's start is mostly waiting for its processes, so the scan runs
beside it while the calling thread starts Ray (``bench/bench_eval_resume.py`` measures it).
In a process that has no other thread yet (the CLI before Ray starts) the scan runs in a
forked child: a scanning thread would hold the GIL most of the time, and every short Python
step of Ray's start would wait for it. Elsewhere (a driver already connected to Ray, whose
threads a fork would not copy) it runs in a thread. The caller checks the resume
(:meth:`~touchstone_ray.bundle.Bundle.check_resume`) before, so nothing is written to a
bundle that a resume would refuse.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Beside", "beside"]

A = TypeVar("A")
B = TypeVar("B")


@dataclass(frozen=True)
class Beside(Generic[A, B]):
    """The results of :func:`beside` and when each step ran (epoch s)."""

    background: A
    foreground: B
    background_start: float
    background_end: float
    foreground_start: float
    foreground_end: float

    def timings(self, background: str, foreground: str) -> dict[str, float]:
        """``{<name>_start, <name>_end, <name>_s}`` for both steps (epoch s, durations s),
        e.g. for an ``events.jsonl`` entry."""
        return {
            f"{background}_start": self.background_start,
            f"{background}_end": self.background_end,
            f"{background}_s": round(self.background_end - self.background_start, 3),
            f"{foreground}_start": self.foreground_start,
            f"{foreground}_end": self.foreground_end,
            f"{foreground}_s": round(self.foreground_end - self.foreground_start, 3),
        }


def _timed(fn: Callable[[], A]) -> tuple[A, float, float]:
    start = time.time()
    value = fn()
    return value, start, time.time()


def beside(
    background: Callable[[], A],
    foreground: Callable[[], B],
    name: str = "beside",
    fork: bool | None = None,
) -> Beside[A, B]:
    """Run ``background`` in a forked child process or a thread while ``foreground`` runs
    in the calling thread; return both results once both have finished.

    ``fork``: ``None`` forks when this process has a single thread (see the module
    docstring); a forked ``background`` must be picklable (a module-level function or a
    ``functools.partial`` of one) and so must its result. The child or thread is started
    first. Errors: ``foreground``'s exception is raised after ``background`` has finished (it
    may be repairing a file); otherwise ``background``'s exception is re-raised here.
    """
    if fork is None:
        fork = threading.active_count() == 1
    if fork:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            future = pool.submit(_timed, background)
            fg_start = time.time()
            try:
                value = foreground()
            finally:
                found = future.exception()  # waits for the child
            fg_end = time.time()
            if found is not None:
                raise found
            bg_value, bg_start, bg_end = future.result()
        return Beside(bg_value, value, bg_start, bg_end, fg_start, fg_end)
    values: list[A] = []
    errors: list[BaseException] = []
    span: list[float] = []

    def work() -> None:
        span.append(time.time())
        try:
            values.append(background())
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
        finally:
            span.append(time.time())

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    fg_start = time.time()
    try:
        value = foreground()
    finally:
        thread.join()
    fg_end = time.time()
    if errors:
        raise errors[0]
    return Beside(values[0], value, span[0], span[1], fg_start, fg_end)
