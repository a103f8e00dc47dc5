"""Where eval results go: shard writers, the event log and the progress display.

One writer per file (SPEC §7); each record is written the moment it arrives. The progress
display shows, per host, done/total, failures, ETA, the current model and its median decode
tok/s; it writes to stderr so the bundle path stays the last line of stdout.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from touchstone_ray.bundle import Bundle
from touchstone_ray.fleet import Cell
from touchstone_ray.records import EvalResponse
from touchstone_ray.storage import JsonlWriter

PLAIN_PROGRESS_INTERVAL_S = 30.0
"""Interval of the plain progress line when stderr is not a terminal (s)."""


class RecordSink:
    """Writes records and events of one run into ``bundle``; counts ok and failed cells."""

    def __init__(
        self,
        bundle: Bundle,
        pack_id: str,
        pack_version: int,
        totals: dict[str, int],
        console: Console | None = None,
    ) -> None:
        self.bundle = bundle
        self.pack_id = pack_id
        self.pack_version = pack_version
        self._writers: dict[str, JsonlWriter] = {}
        self._events = JsonlWriter(bundle.layout.events)
        self.n_ok = 0
        self.n_failed = 0
        self.failures_by_kind: dict[str, int] = {}
        console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.fields[host]:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("fail {task.fields[failed]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[model]} {task.fields[tps]}"),
            console=console,
            transient=False,
            disable=not console.is_terminal,
        )
        self._tasks = {
            host: self._progress.add_task(host, total=total, host=host, failed=0, model="", tps="")
            for host, total in totals.items()
        }
        self._tps: dict[str, deque[float]] = {host: deque(maxlen=20) for host in totals}
        self._failed_by_host = dict.fromkeys(totals, 0)
        self._done_by_host = dict.fromkeys(totals, 0)
        self._totals = totals
        self._console = console
        self._last_line = time.monotonic()
        self._down: set[tuple[str, str]] = set()
        """(host, model) whose endpoint outage was reported and has not seen a clean cell."""
        self._progress.start()

    def record(self, record: dict[str, Any]) -> None:
        """Append one EvalResponse (dict) to its model's shard and update the counters."""
        label = str(record["model"])
        writer = self._writers.get(label)
        if writer is None:
            writer = self._writers[label] = self.bundle.shards.writer(label)
        writer.write(record)
        host = str(record["host"])
        self._note_outage(host, label, record)
        if record.get("ok"):
            self.n_ok += 1
            if record.get("decode_tps") and host in self._tps:
                self._tps[host].append(float(record["decode_tps"]))
        else:
            self.n_failed += 1
            kind = str(record.get("error_kind"))
            self.failures_by_kind[kind] = self.failures_by_kind.get(kind, 0) + 1
            self._failed_by_host[host] = self._failed_by_host.get(host, 0) + 1
        self._done_by_host[host] = self._done_by_host.get(host, 0) + 1
        if host in self._tasks:
            tps = self._tps[host]
            self._progress.update(
                self._tasks[host],
                advance=1,
                failed=self._failed_by_host[host],
                model=label,
                tps=f"{statistics.median(tps):.1f} tok/s" if tps else "",
            )

    def add_todo(self, host: str, cells: int) -> None:
        """Add ``cells`` to ``host``'s total (a resumed run learns each model's count once its
        shard is read)."""
        self._totals[host] = self._totals.get(host, 0) + cells
        if host in self._tasks:
            self._progress.update(self._tasks[host], total=self._totals[host])

    def _note_outage(self, host: str, model: str, record: dict[str, Any]) -> None:
        """One line and one ``engine_down`` event per outage of a model's endpoint: the first
        record that waited for it (``engine_down_s``) reports it, back or given up."""
        down_s = record.get("engine_down_s")
        if down_s is None:
            if record.get("ok"):
                self._down.discard((host, model))
            return
        if (host, model) in self._down:
            return
        self._down.add((host, model))
        back = bool(record.get("ok"))
        self.event("engine_down", host=host, model=model, waited_s=down_s, back=back)
        outcome = "it is back" if back else f"gave up: {record.get('error')}"
        self._console.print(
            f"{host} {model}: the endpoint refused connections (engine restarting?); "
            f"a cell waited {down_s:.1f} s, attempts not spent; {outcome}",
            highlight=False,
            soft_wrap=True,
        )

    def failed_record(
        self, cell: Cell, host: str, node_id: str, engine: str, kind: str, error: str
    ) -> dict[str, Any]:
        """An ``ok=false`` EvalResponse (dict) for a cell that never produced a result."""
        return EvalResponse.model_validate(
            {
                "key": cell.key,
                "pack_id": self.pack_id,
                "pack_version": self.pack_version,
                "model": cell.model,
                "engine": engine,
                "host": host,
                "node_id": node_id,
                "variant": cell.variant,
                "category": cell.category,
                "prompt_id": cell.prompt_id,
                "repeat": cell.repeat,
                "ok": False,
                "error": error,
                "error_kind": kind,
                "t_end": time.time(),
            }
        ).model_dump(mode="json")

    def event(self, name: str, **fields: Any) -> None:
        """Append ``{"event": name, "ts": epoch s, **fields}`` to ``events.jsonl``."""
        self._events.write({"event": name, "ts": time.time(), **fields})

    def tick(self) -> None:
        """fsync whatever has waited a second; without a terminal, print a progress line
        every :data:`PLAIN_PROGRESS_INTERVAL_S`."""
        for writer in self._writers.values():
            writer.sync_if_due()
        self._events.sync_if_due()
        now = time.monotonic()
        if not self._console.is_terminal and now - self._last_line >= PLAIN_PROGRESS_INTERVAL_S:
            self._last_line = now
            self._console.print(self.progress_line(), highlight=False)

    def progress_line(self) -> str:
        """``progress: gpu-a 12/64 (1 failed), gpu-b 30/64 (0 failed)``."""
        parts = [
            f"{host} {self._done_by_host.get(host, 0)}/{total} "
            f"({self._failed_by_host.get(host, 0)} failed)"
            for host, total in self._totals.items()
        ]
        return "progress: " + ", ".join(parts)

    def close(self) -> None:
        """Stop the display, fsync and close every file."""
        self._progress.stop()
        for writer in self._writers.values():
            writer.close()
        self._events.close()
