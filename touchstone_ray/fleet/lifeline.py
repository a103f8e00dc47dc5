"""How a touchstone command ends when it must: on SIGTERM, and when its Ray cluster is gone.

A driver blocked in a call into Ray (``ray.nodes()``, ``ray.wait``) whose GCS is gone stays
in Ray's C++ code until Ray gives up reconnecting (``gcs_rpc_server_reconnect_timeout_s``,
60 s, then Ray aborts the process and nothing is finalized); Python runs a signal handler only
between bytecodes, so SIGTERM waited as long (measured: an eval whose head was SIGKILLed
ignored SIGTERM for 20 s and more). The lifeline does not depend on the main thread:

- :func:`install` (the CLI, on its main thread) points Python's signal wakeup file descriptor
  (:func:`signal.set_wakeup_fd`) at a socket a daemon thread reads, so SIGTERM is seen at
  once even while the main thread is blocked. The main thread gets :data:`GRACE_S` s to end
  on its own (the SIGTERM handler of :func:`~touchstone_ray.fleet.abort.abort_guard`
  finalizes); after that the thread runs the finalize steps the guard registered
  (:func:`finalizing`) that the main thread has not started, each at most :data:`STEP_S` s,
  and ends the process (``os._exit``, 15 for SIGTERM) :data:`END_S` s after the signal at the
  latest.
- :func:`watch_cluster` (called where a command has connected to Ray) probes the cluster's
  GCS port every :data:`PROBE_S` s; once it has not answered for :data:`GONE_AFTER_S` s, the
  command is ended as on SIGTERM, but with one line (:func:`gone_line`,
  ``error: Ray cluster at ADDR is gone (no answer for 10 s)``) and exit code 1: within
  ``GONE_AFTER_S + PROBE_S + END_S`` (24 s) of the loss.

Nothing happens without :func:`install`: tests that call a stage in-process keep their own
signal handling, and a watched Ray that this process shut down on purpose
(``ray.is_initialized()`` false) is no loss.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from touchstone_ray.errors import RunError

__all__ = [
    "END_S",
    "GONE_AFTER_S",
    "GRACE_S",
    "PROBE_S",
    "STEP_S",
    "ClusterGone",
    "Steps",
    "await_verdict",
    "finalizing",
    "gone_line",
    "install",
    "leave",
    "watch_cluster",
]

GRACE_S = 4.0
"""Seconds the main thread has after SIGTERM (or the loss of the cluster) to end on its own."""
END_S = 8.0
"""Seconds after SIGTERM (or the loss of the cluster) by which the process has ended."""
STEP_S = 1.0
"""Seconds the lifeline waits for one finalize step before it goes on to the next (a step
blocked in a call into a Ray that is gone is left behind)."""
PROBE_S = 2.0
"""Seconds between two probes of the cluster's GCS port (each waits at most this long)."""
GONE_AFTER_S = 10.0
"""Seconds the GCS port must stay unanswered before the cluster counts as gone."""


class ClusterGone(RunError):
    """The Ray cluster this command joined stopped answering (exit 1)."""


class Steps:
    """Finalize steps of one run (each called with the abort reason), run at most once each,
    by whichever thread gets to them first: the main thread's abort path or the lifeline's.
    A step that raises does not keep the next one from running."""

    def __init__(self, steps: Sequence[Callable[[str], object]]) -> None:
        self._steps = list(steps)
        self._next = 0
        self._busy = 0
        self._idle = threading.Condition()

    def take(self) -> Callable[[str], None] | None:
        """The next step not started yet (counted as running until it returns), or None."""
        with self._idle:
            if self._next >= len(self._steps):
                return None
            step = self._steps[self._next]
            self._next += 1
            self._busy += 1

        def run(reason: str) -> None:
            try:
                step(reason)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

        return run

    def run(self, reason: str) -> None:
        """Run every step not started yet, in order (exceptions of a step suppressed), then
        wait up to :data:`END_S` for the steps another thread started (the lifeline's, while
        this thread was stuck in one): the caller ends the process next. A ``SystemExit`` or
        ``KeyboardInterrupt`` raised inside a step (Ray's own SIGTERM handler, when the
        cluster dies under a step blocked in a call into it) does not skip the steps after
        it: they run, then the first such exception is raised again."""
        interrupted: BaseException | None = None
        while (step := self.take()) is not None:
            try:
                step(reason)
            except Exception:  # a failed step must not keep the next from running
                pass
            except BaseException as exc:
                interrupted = interrupted or exc
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0, timeout=END_S)
        if interrupted is not None:
            raise interrupted


class _State:
    """This process's lifeline (one per process, :data:`_STATE`)."""

    def __init__(self) -> None:
        self.installed = False
        self.gone: str | None = None
        self.watched: tuple[str, int] | None = None
        """The GCS ``(host, port)`` :func:`watch_cluster` probes, once it does."""
        self.fired_at: float | None = None
        self.steps: list[Steps] = []
        self.fired = threading.Event()
        self.ending = threading.Lock()
        """Held by whichever thread ends the process (the main thread or the lifeline's)."""


_STATE = _State()


def gone_line() -> str | None:
    """``Ray cluster at ADDR is gone (no answer for N s)`` once :func:`watch_cluster` found the
    cluster gone, else None."""
    return _STATE.gone


def install() -> None:
    """Arm the lifeline for this process (once; call on the main thread): SIGTERM handled as
    the module docstring says, from a daemon thread that reads the signal wakeup fd. A no-op
    off the main thread."""
    if _STATE.installed or threading.current_thread() is not threading.main_thread():
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _sigterm)  # the wakeup fd is written for Python handlers
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    _STATE.installed = True
    threading.Thread(
        target=_listen, args=(reader, writer), name="touchstone-lifeline", daemon=True
    ).start()


def _sigterm(signum: int, frame: object) -> None:
    raise SystemExit(signal.SIGTERM)


def _listen(reader: socket.socket, writer: socket.socket) -> None:
    while data := reader.recv(64):  # b"": the socket closed, nothing more can come
        if signal.SIGTERM in data:
            _fire()


def _fire() -> None:
    if _STATE.fired.is_set():
        return
    _STATE.fired_at = time.monotonic()
    _STATE.fired.set()
    threading.Thread(target=_end_in_time, name="touchstone-lifeline-end", daemon=True).start()


def _end_in_time() -> None:
    """After :data:`GRACE_S`, run what is left of the registered steps (each in a thread of
    its own, joined at most until :data:`END_S`), say why, and end the process."""
    assert _STATE.fired_at is not None
    end = _STATE.fired_at + END_S
    time.sleep(max(0.0, _STATE.fired_at + GRACE_S - time.monotonic()))
    reason = _STATE.gone or "terminated (SIGTERM)"
    for steps in list(reversed(_STATE.steps)):
        while (step := steps.take()) is not None:
            worker = threading.Thread(target=_quietly, args=(step, reason), daemon=True)
            worker.start()
            worker.join(max(0.0, min(STEP_S, end - 0.5 - time.monotonic())))
    _STATE.ending.acquire()  # the main thread, ending now, has said it already
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    if _STATE.gone is not None:
        with contextlib.suppress(Exception):
            print(f"error: {_STATE.gone}", file=sys.stderr, flush=True)
        os._exit(1)
    os._exit(signal.SIGTERM)


def _quietly(step: Callable[[str], object], reason: str) -> None:
    with contextlib.suppress(Exception):
        step(reason)


@contextlib.contextmanager
def finalizing(steps: Steps) -> Iterator[None]:
    """Inside the block, ``steps`` are what the lifeline runs when the main thread does not
    end in time (innermost block first)."""
    _STATE.steps.append(steps)
    try:
        yield
    finally:
        _STATE.steps.remove(steps)


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=PROBE_S):
            return True
    except OSError:
        return False


def watch_cluster(gcs_address: str) -> None:
    """Probe ``gcs_address`` (``host:port``) from a daemon thread; when it has not answered
    for :data:`GONE_AFTER_S` s while Ray is still initialised here, record :func:`gone_line`
    and end the command as on SIGTERM (see the module docstring). A no-op without
    :func:`install` or for an address without a port."""
    host, _, port = gcs_address.rpartition(":")
    if not _STATE.installed or not port.isdigit():
        return
    _STATE.watched = (host.strip("[]"), int(port))
    threading.Thread(
        target=_watch,
        args=(*_STATE.watched, gcs_address),
        daemon=True,
        name="touchstone-cluster-watch",
    ).start()


def _watch(host: str, port: int, address: str) -> None:
    import ray

    silent_since: float | None = None
    while not _STATE.fired.is_set():
        if _answers(host, port):
            silent_since = None
        elif silent_since is None:
            silent_since = time.monotonic()
        elif time.monotonic() - silent_since >= GONE_AFTER_S and ray.is_initialized():
            _STATE.gone = f"Ray cluster at {address} is gone (no answer for {GONE_AFTER_S:g} s)"
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
            return
        time.sleep(PROBE_S)


def await_verdict() -> None:
    """Call before taking an actor's failure for the loss of its node: when the watched
    cluster's GCS does not answer now, the whole cluster may be gone (its raylets die with it,
    so every actor fails first), and the command must end with the cluster's line, not a
    node's. Waits, in short sleeps that SIGTERM interrupts, until the GCS answers again
    (returns) or the lifeline ends the command (the SIGTERM it sends raises in the main
    thread), at most ``GONE_AFTER_S + 2 * PROBE_S`` s. Returns at once where nothing is
    watched (no :func:`install`, or not joined to a cluster)."""
    if _STATE.watched is None:
        return
    deadline = time.monotonic() + GONE_AFTER_S + 2 * PROBE_S
    while time.monotonic() < deadline and not _answers(*_STATE.watched):
        time.sleep(PROBE_S / 4)


def leave(code: int) -> int:
    """``code``, or, once SIGTERM came or the cluster is gone, end the process with it now
    (``os._exit`` after flushing, before the lifeline's thread can): ``ray.shutdown`` at
    exit would wait for a GCS that is gone, and the caller has printed its line already."""
    if not _STATE.fired.is_set():
        return code
    _STATE.ending.acquire()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
