"""Resume's scan beside Ray's start: two start-up steps that share nothing run at once.

A resume must read every shard (which keys are done) and connect to Ray; the scan is file
I/O and byte matching, Ray's start is mostly waiting for its processes, so the scan runs in a
thread while the calling thread starts Ray (``bench/bench_eval_resume.py`` measures the
gain). The caller checks the resume (:meth:`~touchstone_ray.bundle.Bundle.check_resume`)
before, so nothing is written to a bundle that a resume would refuse.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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


def beside(
    background: Callable[[], A], foreground: Callable[[], B], name: str = "beside"
) -> Beside[A, B]:
    """Run ``background`` in a thread while ``foreground`` runs in the calling thread;
    return both results once both have finished.

    The thread is started first, so ``background`` begins no later than ``foreground``.
    Errors: ``foreground``'s exception is raised after the thread has finished (it may be
    repairing a file); otherwise ``background``'s exception is re-raised here.
    """
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
