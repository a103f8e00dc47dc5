"""The one finalize-on-abort path of a run (eval, perf, judge): :func:`abort_guard`.

A run that ends early — Ctrl-C, SIGTERM, a disk that fails, a bug — keeps what it wrote: the
guard runs the stage's steps (close the actors, write ``run_aborted``, finalize the records
written so far, mark the manifest ``failed``), each on its own, then says what happened:

- Ctrl-C (``KeyboardInterrupt``) → :class:`~touchstone_ray.errors.RunError`
  ``interrupted; <resume>`` (the CLI prints ``error: …`` and exits 1);
- SIGTERM → ``SystemExit`` with code 15 (``SIGTERM``), as Ray's own driver handler does: the
  process exits 15;
- the Ray cluster gone (:mod:`.lifeline`) → :class:`~touchstone_ray.fleet.lifeline.ClusterGone`
  (exit 1, one line);
- a file system's ``OSError`` → :func:`~touchstone_ray.errors.write_failed` (exit 1);
- anything else goes on as it was raised.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

from touchstone_ray.errors import RunError, is_disk_error, one_line, write_failed
from touchstone_ray.fleet.lifeline import ClusterGone, Steps, finalizing, gone_line

__all__ = ["Terminated", "abort_guard", "abort_reason"]


class Terminated(SystemExit):
    """The run got SIGTERM (inside :func:`abort_guard`); its code is the signal's number."""

    def __init__(self) -> None:
        super().__init__(signal.SIGTERM)


_SIGTERM = threading.Event()
"""Set by the handler: a ``SystemExit`` out of the block is that SIGTERM."""


def _why_terminated() -> BaseException:
    gone = gone_line()
    if gone is not None:  # the lifeline's own SIGTERM: the cluster is gone
        return ClusterGone(gone)
    return Terminated()


def _terminate(signum: int, frame: FrameType | None) -> None:
    _SIGTERM.set()
    raise _why_terminated()


def _as_raised(exc: BaseException) -> BaseException:
    """``exc``, or what the SIGTERM handler raised where Ray turned it into another
    ``SystemExit``: a handler's exception inside ``ray.wait``/``ray.get`` comes out of Ray as
    ``SystemExit(1)`` (its ``check_signals``, measured on Ray 2.60: a stopped job recorded
    the reason ``1``)."""
    if _SIGTERM.is_set() and type(exc) is SystemExit:
        return _why_terminated()
    return exc


def abort_reason(exc: BaseException) -> str:
    """The one line an abort is recorded with (``run_aborted``'s ``reason``): ``interrupted``
    for Ctrl-C, ``terminated (SIGTERM)`` for SIGTERM, else the exception's message (its type's
    name when it has none)."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM)"
    return one_line(str(exc)) or type(exc).__name__


@contextlib.contextmanager
def abort_guard(
    root: Path | str,
    command: str,
    steps: Sequence[Callable[[str], object]],
    resume: str,
) -> Iterator[None]:
    """Run the block; if it raises anything (``BaseException``), call each of ``steps`` in
    order with :func:`abort_reason` — an exception of one step does not skip the next — then
    raise as the module docstring says. ``root`` and ``command`` name the bundle and the
    command in a disk error's line; ``resume`` ends the Ctrl-C line
    (``resume with --resume <bundle>``).

    Inside the block SIGTERM raises :class:`Terminated` in the main thread (outside the main
    thread the handler that is set stays), or :class:`~touchstone_ray.fleet.lifeline.ClusterGone`
    when the lifeline sent it; the previous handler is back afterwards. The steps are the
    lifeline's too (:func:`~touchstone_ray.fleet.lifeline.finalizing`): where the main thread
    is stuck in Ray, the lifeline runs those not started yet before it ends the process."""
    main = threading.current_thread() is threading.main_thread()
    _SIGTERM.clear()
    previous = signal.signal(signal.SIGTERM, _terminate) if main else None
    once = Steps(steps)
    try:
        with finalizing(once):  # also while the steps run: one may get stuck in Ray
            try:
                yield
            except BaseException as raised:
                exc = _as_raised(raised)
                once.run(abort_reason(exc))  # a read-only disk fails them all: each on its own
                if isinstance(exc, KeyboardInterrupt):
                    raise RunError(f"interrupted; {resume}") from None
                if is_disk_error(exc):
                    raise write_failed(root, exc, command) from exc
                if exc is not raised:
                    raise exc from None
                raise
    finally:
        if main:  # None: a handler not set from Python, which Python cannot set back
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
