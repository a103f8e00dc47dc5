"""JSONL shards and atomic files: SPEC §7's writing and reading rules in one place.

Writing: one writer per file; a record is one ``write()`` of its JSON line and ``\\n``, flushed
at once and fsync'd at least every second (:meth:`JsonlWriter.sync_if_due`) and on close.
Reading: a torn last line is tolerated (and, on repair, moved to ``<shard>.torn``), malformed
lines in the middle are quarantined with a warning, records de-duplicate by ``key`` (an ok
record wins over an error; the first ok wins).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

FSYNC_INTERVAL_S = 1.0
"""Longest time a flushed record may wait for its fsync (s)."""


def slug(name: str) -> str:
    """File-safe form of a model or host name: ``qwen3:8b`` → ``qwen3_8b``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "_"


def to_json_line(record: BaseModel | dict[str, Any]) -> str:
    """One compact JSON line with its ``\\n``."""
    if isinstance(record, BaseModel):
        return record.model_dump_json() + "\n"
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class JsonlWriter:
    """Append-only JSONL writer for one file (SPEC §7 writing rules).

    Raises ``OSError`` from the file system unchanged (a read-only disk aborts the run).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - long-lived handle
        self._dirty = False
        self._last_sync = time.monotonic()

    def write(self, record: BaseModel | dict[str, Any]) -> None:
        """Append one record as a single write, flush it, fsync if a second has passed."""
        self._fh.write(to_json_line(record))
        self._fh.flush()
        self._dirty = True
        self.sync_if_due()

    def sync_if_due(self) -> None:
        """fsync when unsynced data is older than :data:`FSYNC_INTERVAL_S`."""
        if self._dirty and time.monotonic() - self._last_sync >= FSYNC_INTERVAL_S:
            self.sync()

    def sync(self) -> None:
        """fsync now."""
        os.fsync(self._fh.fileno())
        self._dirty = False
        self._last_sync = time.monotonic()

    def close(self) -> None:
        """fsync and close (idempotent)."""
        if not self._fh.closed:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            finally:
                self._fh.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class ShardScan:
    """What reading one JSONL file found."""

    records: list[dict[str, Any]] = field(default_factory=list)
    malformed: list[int] = field(default_factory=list)
    """1-based line numbers of quarantined lines."""
    torn_tail: str | None = None
    """An unterminated last line, if any."""


def iter_jsonl(path: Path, scan: ShardScan | None = None) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of ``path`` one by one (memory independent of file size).

    A torn last line is skipped (kept in ``scan.torn_tail``); a malformed line elsewhere is
    skipped with a ``UserWarning`` naming file and line (kept in ``scan.malformed``).
    """
    scan = scan if scan is not None else ShardScan()
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                scan.torn_tail = raw.decode("utf-8", errors="replace")
                break
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            if not isinstance(obj, dict):
                scan.malformed.append(lineno)
                warnings.warn(f"{path}:{lineno}: malformed line quarantined", stacklevel=2)
                continue
            yield obj


def read_jsonl(path: Path) -> ShardScan:
    """Read a whole JSONL file tolerantly; a missing file reads as empty."""
    scan = ShardScan()
    if path.exists():
        scan.records = list(iter_jsonl(path, scan))
    return scan


def repair_torn_tail(path: Path) -> int:
    """Cut ``path`` back to its last ``\\n``, appending the cut bytes to ``<path>.torn``.

    Returns the number of bytes cut (0 when the file ends cleanly or does not exist).
    """
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        chunk = 1 << 16
        pos = size
        keep = 0
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            data = fh.read(pos - start)
            idx = data.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                break
            pos = start
        if keep == size:
            return 0
        fh.seek(keep)
        fragment = fh.read()
        with open(path.with_name(path.name + ".torn"), "ab") as torn:
            torn.write(fragment + b"\n")
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return size - keep


def dedupe_by_key(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Map ``key`` → record: an ok record wins over an error, the first ok wins.

    Among error-only keys the last error is kept (the most recent attempt).
    """
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        key = record.get("key")
        if not isinstance(key, str):
            continue
        prev = out.get(key)
        if prev is None or not prev.get("ok"):
            out[key] = record
    return out


@contextlib.contextmanager
def atomic_rewrite(path: Path) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` atomically when the block ends without an error:
    temp file, fsync, rename, fsync the folder. On an error the temp file is removed and
    ``path`` stays as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_rewrite`)."""
    with atomic_rewrite(path) as fh:
        fh.write(text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    """:func:`atomic_write_text` of indented JSON."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
