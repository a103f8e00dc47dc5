"""Resume's shard scan in the background: each model starts as soon as its own shard is read.

A resume must read every shard (which keys are done) and connect to Ray and start each host's
client actor; the scan is file I/O and byte matching, the rest is mostly waiting for other
processes, so the scan runs beside all of it (``bench/bench_eval_resume.py`` measures it).
:class:`ResumeScan` reads the shards one by one (:meth:`~touchstone_ray.bundle.ResponseShards.
scan_each`) in the order the run needs them — each host's first model, then each host's
second, …, then the shards of models this run does not plan — and hands each finished shard to
the driver, which releases that model's cells (:class:`ShardGate`) while the later shards are
still being read. A model's keys are in its own shard (the sink writes every record to the
shard of its model), so its cells are known once that shard is read.

In a process that has no other thread yet (the CLI before Ray starts) the scan runs in a
forked child that sends each shard's result through a pipe: a scanning thread would hold the
GIL most of the time, and every short Python step of Ray's start would wait for it. Elsewhere
(a driver already connected to Ray, whose threads a fork would not copy) it runs in a thread.
The caller checks the resume (:meth:`~touchstone_ray.bundle.Bundle.check_resume`) before, so
nothing is written to a bundle that a resume would refuse; the scan itself only cuts torn
tails (into ``<shard>.torn``), each before that shard is read and before any record of its
model is appended.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, MutableSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from touchstone_ray.bundle import Bundle, ResponseScan
from touchstone_ray.errors import writes_into
from touchstone_ray.eval.driver import HostRun, Phase
from touchstone_ray.eval.matrix import ModelPlan
from touchstone_ray.eval.sink import RecordSink
from touchstone_ray.pack import Pack

__all__ = ["ResumeScan", "ShardGate", "need_order"]

SCAN_NICE = 10
"""Niceness added to the forked scan's process (0 … 19, higher yields more)."""
POLL_S = 0.05
"""How long :meth:`ResumeScan.wait` sleeps between looks at a thread's queue (s)."""


def need_order(plans: dict[str, list[ModelPlan]]) -> list[str]:
    """Model labels in the order a run needs their shards: every host's first model, then
    every host's second, … (hosts in ``plans`` order)."""
    order: list[str] = []
    depth = max((len(models) for models in plans.values()), default=0)
    for i in range(depth):
        order += [models[i].label for models in plans.values() if i < len(models)]
    return list(dict.fromkeys(order))


def _scan(
    root: Path,
    order: list[Path],
    key_set: Callable[[], MutableSet[str]],
    send: Callable[[tuple[Any, ...]], None],
) -> None:
    """Scan ``root``'s shards ``order``, torn tails repaired; send ``("shard", path, scan,
    end epoch s)`` per shard, then ``("done", start, end)``, or ``("error", exception)``."""
    start = time.time()
    try:
        with writes_into(root, "run"):
            for path, found in Bundle(root).shards.scan_each(order, True, key_set):
                send(("shard", str(path), found, time.time()))
    except BaseException as exc:  # re-raised in the driver
        send(("error", exc))
        return
    send(("done", start, time.time()))


def _child(
    conn: Any, root: Path, order: list[Path], key_set: Callable[[], MutableSet[str]]
) -> None:
    """The forked child: Ctrl-C is the driver's to handle (it waits for this scan, so a torn
    tail is never half cut), the results go through ``conn``. It runs at a lower priority
    (:data:`SCAN_NICE`): the processes starting beside it (Ray's, the client actor's) get a
    core first, and the scan takes the time they spend waiting."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(SCAN_NICE)

    def send(message: tuple[Any, ...]) -> None:
        try:
            conn.send(message)
        except Exception as exc:  # an exception that does not pickle
            conn.send(("error", RuntimeError(f"resume scan: {type(exc).__name__}: {exc}")))

    _scan(root, order, key_set, send)
    conn.close()


@dataclass
class ResumeScan:
    """The scan of a bundle's response shards, running in the background from construction.

    ``first``: model labels whose shards are read first, in that order (:func:`need_order`);
    ``key_set`` makes the key sets (a compact :class:`~touchstone_ray.eval.matrix.CellSet`);
    ``fork``: ``None`` forks when this process has a single thread (module docstring).
    :meth:`poll` takes the shards finished so far (never blocks), :meth:`wait` blocks for one
    shard or all. :attr:`total` holds the merged scan of the shards taken.
    """

    root: Path
    first: list[str]
    key_set: Callable[[], MutableSet[str]]
    fork: bool | None = None
    total: ResponseScan = field(init=False)
    scanned: dict[str, float] = field(init=False, default_factory=dict)
    """Shard path → epoch s its scan ended, for every shard taken."""
    shard_lines: dict[str, tuple[int, int]] = field(init=False, default_factory=dict)
    """Shard path → (lines read, ok keys) for every shard taken."""
    start: float = field(init=False, default=0.0)
    """Epoch s the scan started (in the child or thread), once :attr:`complete`."""
    end: float = field(init=False, default=0.0)
    """Epoch s the scan ended, once :attr:`complete`."""
    complete: bool = field(init=False, default=False)
    """Every shard was taken."""

    def __post_init__(self) -> None:
        self.total = ResponseScan(ok_keys=self.key_set(), error_keys=self.key_set())
        shards = Bundle(self.root).shards
        order = shards.scan_order(self.first)  # listed here: the run adds shards later
        self._shard_of = {label: str(shards.layout.shard(label)) for label in self.first}
        self._to_read = {str(path) for path in order}
        self._error: BaseException | None = None
        self._conn: Any = None
        self._queue: queue.SimpleQueue[tuple[Any, ...]] | None = None
        self._worker: Any = None
        fork = threading.active_count() == 1 if self.fork is None else self.fork
        args = (self.root, order, self.key_set)
        if fork:
            ctx = multiprocessing.get_context("fork")
            self._conn, child_end = ctx.Pipe(duplex=False)
            self._worker = ctx.Process(target=_child, args=(child_end, *args), daemon=True)
            self._worker.start()
            child_end.close()
        else:
            self._queue = queue.SimpleQueue()
            put = self._queue.put
            target = lambda: _scan(*args, put)  # noqa: E731
            self._worker = threading.Thread(target=target, name="resume-scan", daemon=True)
            self._worker.start()

    def has(self, label: str) -> bool:
        """Whether model ``label``'s shard has been taken: read, or not there to read (a
        model of ``first`` without records so far), or the scan is complete."""
        shard = self._shard_of.get(label)
        return self.complete or shard not in self._to_read or shard in self.scanned

    def poll(self) -> list[str]:
        """Take the shards finished since the last call (merged into :attr:`total`); their
        paths. Never blocks. Raises the scan's error."""
        return self._take(block=False, timeout_s=0.0)

    def wait(self, label: str | None = None, timeout_s: float | None = None) -> None:
        """Block until model ``label``'s shard is taken, or every shard when ``label`` is
        ``None`` (at most ``timeout_s`` s; ``None``: as long as the scan takes). Raises the
        scan's error."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not (self.complete if label is None else self.has(label)):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            self._take(block=True, timeout_s=left)

    def close(self) -> None:
        """Wait for the scan to end (it may be cutting a torn tail); no error is raised (an
        aborting run calls it before finalize)."""
        with contextlib.suppress(Exception):  # the run ends or aborts already
            self.wait()
        if self._worker is not None:
            self._worker.join()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _take(self, *, block: bool, timeout_s: float | None) -> list[str]:
        if self._error is not None:
            raise self._error
        taken: list[str] = []
        first = True
        while not self.complete:
            message = self._receive(block and first, timeout_s)
            first = False
            if message is None:
                break
            kind = message[0]
            if kind == "shard":
                _, path, found, end = message
                self.total.merge(found)
                self.scanned[path] = end
                self.shard_lines[path] = (found.n_lines, len(found.ok_keys))
                taken.append(path)
            elif kind == "done":
                _, self.start, self.end = message
                self.complete = True
            else:
                self._error = message[1]
                if self._worker is not None:
                    self._worker.join()
                raise message[1]
        return taken

    def _receive(self, block: bool, timeout_s: float | None) -> tuple[Any, ...] | None:
        """The next message, or ``None`` when none came (without ``block``: none is there)."""
        if self._conn is not None:
            wait = (None if timeout_s is None else max(0.0, timeout_s)) if block else 0.0
            try:
                if not self._conn.poll(wait):
                    return None
                message: tuple[Any, ...] = self._conn.recv()
            except EOFError:  # the child died without a word
                return ("error", RuntimeError("the resume scan's process ended early"))
            return message
        assert self._queue is not None
        try:
            if not block:
                return self._queue.get_nowait()
            return self._queue.get(timeout=POLL_S if timeout_s is None else max(0.0, timeout_s))
        except queue.Empty:
            if block and timeout_s is None and not self._worker.is_alive():
                return ("error", RuntimeError("the resume scan's thread ended early"))
            return None


@dataclass
class ShardGate:
    """Holds each model's phase of a resumed run (stage ``scan``) until its shard is read,
    then releases it (stage ``queued``, its cells and count known) and adds its count to the
    progress totals; once every shard is read, prints ``N reused, M to run`` and writes the
    ``resume_scan`` event. Called once per dispatcher turn (:meth:`tick`); a host whose actor
    is lost waits for its shards (:meth:`release_now`) before its cells are recorded lost.

    ``ray_span``: (start, end) epoch s of Ray's start, for the event.
    """

    scan: ResumeScan
    pack: Pack
    runs: list[HostRun]
    sink: RecordSink
    out: TextIO
    ray_span: tuple[float, float]
    todo: int = 0
    """Cells to run of the phases released so far."""
    reported: bool = False

    def tick(self) -> None:
        """Take the shards read since the last turn and release the phases they complete."""
        if self.reported:
            return
        self.scan.poll()
        self._release()

    def release_now(self, phase: Phase) -> None:
        """Block until ``phase``'s shard is read and release it (a lost host's phases)."""
        if phase.stage == "scan":
            self.scan.wait(phase.plan.label)
            self._release()

    def finish(self) -> None:
        """Wait for the whole scan (the run's end, before finalize) and report it."""
        self.scan.wait()
        self._release()
        self.scan.close()

    def _release(self) -> None:
        done = self.scan.total.ok_keys
        for run in self.runs:
            for phase in run.queue:
                if phase.stage != "scan":
                    continue
                if not self.scan.has(phase.plan.label):
                    break  # a host's models start in order
                phase.cells = phase.plan.cells(self.pack, done)
                phase.todo = sum(1 for _ in phase.plan.cells(self.pack, done))
                phase.stage = "queued"
                self.todo += phase.todo
                self.sink.add_todo(run.host, phase.todo)
        if self.scan.complete and not self.reported:
            self._report()

    def _report(self) -> None:
        self.reported = True
        scan, found = self.scan, self.scan.total
        found.warn_malformed()
        print(f"{len(found.ok_keys)} reused, {self.todo} to run", file=self.out, flush=True)
        ray_start, ray_end = self.ray_span
        shards = [
            {"shard": Path(path).name, "lines": lines, "ok": ok, "scan_end": scan.scanned[path]}
            for path, (lines, ok) in scan.shard_lines.items()
        ]
        self.sink.event(
            "resume_scan",
            lines=found.n_lines,
            ok=len(found.ok_keys),
            scan_start=scan.start,
            scan_end=scan.end,
            scan_s=round(scan.end - scan.start, 3),
            ray_start_start=ray_start,
            ray_start_end=ray_end,
            ray_start_s=round(ray_end - ray_start, 3),
            shards=shards,
        )
