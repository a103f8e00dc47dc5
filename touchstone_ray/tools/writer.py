"""The tools run's writing side: each landed cell's checks (run in worker threads: the code
checks wait on sandboxed subprocesses) and the one writer of the cell shards and the event
log, called from the dispatcher's thread only."""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from touchstone_ray.checks import run_checks, verdict
from touchstone_ray.errors import writes_into
from touchstone_ray.storage import JsonlWriter
from touchstone_ray.tool_records import ToolsRecord
from touchstone_ray.toolpack import ToolsPack
from touchstone_ray.tools.bundle import ToolsBundle

__all__ = ["CheckPool", "ToolsWriter", "cell_record"]


def cell_record(pack: ToolsPack, raw: dict[str, Any]) -> ToolsRecord:
    """The record of one cell from the client's answer (``ToolsClient.run_tools_cell``): its
    checks run here (sandboxed code included) when the loop got through."""
    record = ToolsRecord(pack_id=pack.id, pack_version=pack.version, **raw)
    if record.ok:
        item = pack.item(record.item_id)
        record.checks = run_checks(pack, item, record.turns)
        record.passed, record.not_measured = verdict(record.checks)
    return record


class ToolsWriter:
    """The run's one writer: the cell shards (``cells/<model>.jsonl``, one ``write`` per line,
    synced) and the event log; counts cells written, ok, failed and passed."""

    def __init__(self, bundle: ToolsBundle) -> None:
        self.bundle = bundle
        self.shards: dict[str, Any] = {}
        self.events = JsonlWriter(bundle.layout.events)
        self.n_ok = 0
        self.n_failed = 0
        self.n_passed = 0
        self.failures_by_kind: dict[str, int] = {}

    def cell(self, record: ToolsRecord) -> None:
        """Append ``record`` to its model's shard and sync it."""
        with writes_into(self.bundle.root, "tools"):
            writer = self.shards.get(record.model)
            if writer is None:
                writer = self.shards[record.model] = self.bundle.cells.writer(record.model)
            writer.write(record.model_dump(mode="json"))
            writer.sync()
        if record.ok:
            self.n_ok += 1
            self.n_passed += bool(record.passed)
        else:
            self.n_failed += 1
            kind = record.error_kind or "unknown"
            self.failures_by_kind[kind] = self.failures_by_kind.get(kind, 0) + 1
        self.event("cell_done", key=record.key, ok=record.ok, passed=record.passed)

    def event(self, name: str, **fields: Any) -> None:
        """Append ``{"event": name, "ts": <epoch s>, **fields}`` to ``events.jsonl``."""
        with writes_into(self.bundle.root, "tools"):
            self.events.write({"event": name, "ts": time.time(), **fields})
            self.events.sync_if_due()

    def close(self) -> None:
        """Close every shard and the event log."""
        with writes_into(self.bundle.root, "tools"):
            for writer in self.shards.values():
                writer.close()
            self.events.close()


class CheckPool:
    """Runs each landed cell's checks in worker threads (the code checks wait on sandboxed
    subprocesses) and hands the records to the writer in the dispatcher's thread
    (:meth:`drain`), so one thread writes the bundle."""

    def __init__(self, pack: ToolsPack, writer: ToolsWriter, workers: int = 2) -> None:
        self.pack = pack
        self.writer = writer
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="checks")
        self._pending: deque[Future[ToolsRecord]] = deque()

    def submit(self, raw: dict[str, Any]) -> None:
        """Check ``raw`` (a client's answer) in the background."""
        self._pending.append(self._pool.submit(cell_record, self.pack, raw))

    def write_now(self, record: ToolsRecord) -> None:
        """Write a record that needs no checks (a failed or refused cell), after those before."""
        done: Future[ToolsRecord] = Future()
        done.set_result(record)
        self._pending.append(done)
        self.drain()

    def drain(self) -> None:
        """Write every record whose checks are through, in the order the cells landed."""
        while self._pending and self._pending[0].done():
            self.writer.cell(self._pending.popleft().result())

    def close(self) -> None:
        """Wait for every check and write its record."""
        while self._pending:
            self.writer.cell(self._pending.popleft().result())
        self._pool.shutdown()
