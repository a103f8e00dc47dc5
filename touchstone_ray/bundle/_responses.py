"""Response shards (``responses/<model>.jsonl``, and ``points/`` / ``embed/`` of a perf
bundle): append, scan, read, and the finalize rewrite (SPEC §7 writing and reading rules).

A record is *unfinalized* while its ``n_samples`` is null or absent: finalize has not found
host samples for it (yet). :meth:`ResponseShards.rewrite_unfinalized` is the one place that
rewrites a shard: it streams each shard, gives every unfinalized record (or every record of
``only_keys``) to a callback, and replaces the shard atomically only when a line changed;
lines it does not change, malformed ones and a torn tail included, are copied byte for byte.
So a second finalize over the same samples changes nothing.

:meth:`ResponseShards.scan` (resume) reads ``key`` and ``ok`` without parsing a whole line
where the line has the layout our writer pins (:data:`~touchstone_ray.records.
EVAL_RESPONSE_FIELDS`: ``key`` first, ``ok`` followed by ``error``; compact separators), and
parses the line in full otherwise (:func:`key_and_ok`). The writer guarantees that layout:
:class:`ResponseWriter` and the finalize rewrite put every dict record's keys in on-disk
order (:func:`~touchstone_ray.records.on_disk_order`) before encoding it.
:meth:`ResponseShards.scan_each` yields the scan shard by shard, in an order the caller
chooses (a resume starts a model's cells as soon as its own shard is scanned).
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, MutableSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

from touchstone_ray.bundle._layout import Layout, ShardFolder
from touchstone_ray.records import on_disk_order
from touchstone_ray.storage import (
    JsonlWriter,
    atomic_rewrite,
    dedupe_by_key,
    iter_jsonl,
    repair_torn_tail,
    to_json_line,
)

__all__ = ["ResponseScan", "ResponseShards", "ResponseWriter", "is_unfinalized", "key_and_ok"]

_NULL_SAMPLES = re.compile(rb'"n_samples"\s*:\s*null\b')
_KEY_PLAIN = re.compile(rb'\{"key":"([^"\\]*)","pack_id":')
_KEY_ESCAPED = re.compile(rb'\{"key":("(?:[^"\\]|\\.)*"),"pack_id":')
_OK = b'"ok":'
_OK_TRUE = b'true,"error":'
_OK_FALSE = b'false,"error":'


def _prefix_key_and_ok(raw: bytes) -> tuple[str, bool] | None:
    """``(key, ok)`` of a complete line in the pinned layout, or ``None`` to parse it in full.

    Why this is safe without a parse: inside a JSON string every ``"`` is escaped, so the
    bytes ``"ok":`` can only be an object key, never answer text; a line with exactly one
    such key, followed by ``true,"error":`` or ``false,"error":`` (the field order of
    :data:`~touchstone_ray.records.EVAL_RESPONSE_FIELDS`), has it at the top level. A line
    with a second record start before its ``ok`` (a torn line that lost its newline, then a
    record) goes to the full parse, which quarantines it.
    """
    if not raw.endswith(b"}\n"):
        return None
    m = _KEY_PLAIN.match(raw)
    if m is not None:
        try:
            key = m.group(1).decode("utf-8")
        except UnicodeDecodeError:
            return None
    else:
        m = _KEY_ESCAPED.match(raw)
        if m is None:
            return None
        try:
            key = json.loads(m.group(1))
        except ValueError:
            return None
    at = raw.find(_OK, m.end())  # with the next find: one pass over the line
    if at < 0 or raw.find(_OK, at + len(_OK)) >= 0 or raw.find(b'{"key":"', m.end(), at) >= 0:
        return None
    at += len(_OK)
    if raw.startswith(_OK_TRUE, at):
        return key, True
    if raw.startswith(_OK_FALSE, at):
        return key, False
    return None


def key_and_ok(raw: bytes) -> tuple[str | None, bool] | None:
    """``(key, ok)`` of one complete JSONL line (with its ``\\n``): read from the line's
    prefix where the layout is the pinned one, else by a full JSON parse. ``key`` is
    ``None`` for an object without a string key; ``None`` is returned for a malformed line
    (not a JSON object). Equal to ``(record.get("key"), bool(record.get("ok")))`` of
    ``json.loads(raw)`` for every line our writer wrote (tests/bundle/test_scan_prefix.py).
    Not checked: bytes damaged *inside* a line whose key and ok frame still match (a flipped
    byte in the answer text) — the full parse would quarantine that line, the prefix read
    counts it; our writer appends whole lines, so damage shows as a torn tail instead.
    """
    fast = _prefix_key_and_ok(raw)
    if fast is not None:
        return fast
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    key = obj.get("key")
    return (key if isinstance(key, str) else None), bool(obj.get("ok"))


def is_unfinalized(record: dict[str, Any]) -> bool:
    """True when finalize has not filled ``record``'s resource fields (``n_samples`` null)."""
    return record.get("n_samples") is None


def _may_be_unfinalized(raw: bytes) -> bool:
    """A cheap byte test that every unfinalized JSON line passes (parsed afterwards): the
    ``n_samples`` key is absent or null. Inside a JSON string the key's quotes are escaped, so
    answer text cannot hide or fake it."""
    return b'"n_samples"' not in raw or _NULL_SAMPLES.search(raw) is not None


@dataclass
class ResponseScan:
    """What a scan of the shards found (used by resume and by readers)."""

    ok_keys: MutableSet[str] = field(default_factory=set)
    """Keys with at least one ``ok`` record (a ``set``, or the compact set the scan was
    given)."""
    error_keys: MutableSet[str] = field(default_factory=set)
    """Keys with error records only."""
    n_lines: int = 0
    """JSON object lines read."""
    torn_bytes: int = 0
    """Bytes cut off torn last lines (``repair=True``)."""
    malformed: int = 0
    """Malformed lines quarantined."""
    malformed_at: list[tuple[str, int]] = field(default_factory=list)
    """``(shard path, 1-based line)`` of each quarantined line."""

    def merge(self, other: ResponseScan) -> None:
        """Add ``other`` (the scan of other shards) into this one: an ok key in either is ok
        (it leaves the error keys); counts and quarantined lines add up."""
        self.ok_keys |= other.ok_keys
        self.error_keys |= other.error_keys
        for key in [k for k in self.error_keys if k in self.ok_keys]:
            self.error_keys.discard(key)
        self.n_lines += other.n_lines
        self.torn_bytes += other.torn_bytes
        self.malformed += other.malformed
        self.malformed_at.extend(other.malformed_at)

    def warn_malformed(self) -> None:
        """One ``UserWarning`` per quarantined line, naming file and line (the scan itself
        stays silent, so a scan in a background thread warns in the caller's)."""
        for path, lineno in self.malformed_at:
            warnings.warn(f"{path}:{lineno}: malformed line quarantined", stacklevel=2)


class ResponseWriter(JsonlWriter):
    """The append writer of one response shard: a dict record is written with its keys in
    on-disk order (:func:`~touchstone_ray.records.on_disk_order`: ``key`` first, ``ok``
    before ``error``), the layout the resume scan reads from the line prefix; a pydantic
    :class:`~touchstone_ray.records.EvalResponse` dumps in that order by itself."""

    def write(self, record: BaseModel | dict[str, Any]) -> None:
        """Append ``record`` as one line (:meth:`JsonlWriter.write`), keys in on-disk order."""
        super().write(on_disk_order(record) if isinstance(record, dict) else record)


class ResponseShards:
    """The JSONL shards of one :class:`ShardFolder` of a bundle (``responses/`` by default)."""

    def __init__(self, layout: Layout, folder: ShardFolder = ShardFolder.RESPONSES) -> None:
        self.layout = layout
        self.folder = folder

    def writer(self, model: str) -> ResponseWriter:
        """An append writer for ``model``'s shard (one writer per file; close it)."""
        return ResponseWriter(self.layout.shard(model, self.folder))

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every JSON object line of every shard, in shard then file order (not
        de-duplicated); torn tails skipped, malformed lines skipped with a warning."""
        for shard in self.layout.shards(self.folder):
            yield from iter_jsonl(shard)

    def records(self) -> list[dict[str, Any]]:
        """Every record, de-duplicated by key (an ok record wins, the first ok wins)."""
        return list(dedupe_by_key(self.iter_records()).values())

    def repair(self) -> int:
        """Cut each shard's torn last line into ``<shard>.torn``; bytes cut."""
        return sum(repair_torn_tail(p) for p in self.layout.shards(self.folder))

    def scan(
        self,
        repair: bool = False,
        key_set: Callable[[], MutableSet[str]] = set,
        warn: bool = True,
    ) -> ResponseScan:
        """Ok keys and error-only keys of every shard; with ``repair``, each torn last line
        is first cut into ``<shard>.torn``.

        ``key`` and ``ok`` come from :func:`key_and_ok` (the line prefix, else a full parse).
        ``key_set`` makes the two key sets (e.g. a compact
        :class:`~touchstone_ray.eval.matrix.CellSet`). ``warn=False`` leaves the malformed
        line warnings to :meth:`ResponseScan.warn_malformed`. A torn last line (no ``\\n``)
        is skipped, as :func:`~touchstone_ray.storage.iter_jsonl` does.
        """
        scan = ResponseScan(ok_keys=key_set(), error_keys=key_set())
        for _, found in self.scan_each(repair=repair, key_set=key_set):
            scan.merge(found)
        if warn:
            scan.warn_malformed()
        return scan

    def scan_order(self, first: Iterable[str] = ()) -> list[Path]:
        """The existing shards, those of the models ``first`` (labels, in that order; one
        without a shard is left out) ahead of the others (by name)."""
        existing = self.layout.shards(self.folder)
        ahead = [self.layout.shard(m, self.folder) for m in first]
        return list(dict.fromkeys([p for p in ahead if p in existing] + existing))

    def scan_each(
        self,
        shards: Iterable[Path] | None = None,
        repair: bool = False,
        key_set: Callable[[], MutableSet[str]] = set,
    ) -> Iterator[tuple[Path, ResponseScan]]:
        """:meth:`scan` one shard at a time: ``(shard path, its scan)`` as each shard is done,
        no warnings (:meth:`ResponseScan.warn_malformed`). ``shards``: which, in what order
        (:meth:`scan_order`, the default). Each shard's scan has its own key sets;
        :meth:`ResponseScan.merge` adds them up (an ok in one shard beats an error in
        another, as in :meth:`scan`).
        """
        for shard in self.scan_order() if shards is None else shards:
            yield shard, self._scan_shard(shard, repair, key_set)

    def _scan_shard(
        self, shard: Path, repair: bool, key_set: Callable[[], MutableSet[str]]
    ) -> ResponseScan:
        """The scan of one shard (see :meth:`scan`)."""
        scan = ResponseScan(ok_keys=key_set(), error_keys=key_set())
        ok_keys, error_keys = scan.ok_keys, scan.error_keys
        if repair:
            scan.torn_bytes += repair_torn_tail(shard)
        with open(shard, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.endswith(b"\n"):
                    break
                found = key_and_ok(raw)
                if found is None:
                    if raw.strip():
                        scan.malformed_at.append((str(shard), lineno))
                    continue
                scan.n_lines += 1
                key, ok = found
                if key is None:
                    continue
                if ok:
                    ok_keys.add(key)
                    error_keys.discard(key)
                elif key not in ok_keys:
                    error_keys.add(key)
        scan.malformed = len(scan.malformed_at)
        return scan

    def unfinalized_keys(self) -> set[str]:
        """Keys whose record (after de-duplication) has no resource fields yet."""
        return {k for k, r in dedupe_by_key(self.iter_records()).items() if is_unfinalized(r)}

    def rewrite_unfinalized(
        self,
        fields_for: Callable[[dict[str, Any]], dict[str, Any]],
        only_keys: set[str] | None = None,
    ) -> int:
        """Merge ``fields_for(record)`` into every unfinalized record (with ``only_keys``:
        into every record of those keys instead); returns how many records were given to it.

        A shard is replaced atomically (:func:`~touchstone_ray.storage.atomic_rewrite`), and
        only when a line's content changed; changed lines are re-encoded compactly, all
        others are kept byte for byte. One pass: from the first changed line on, lines stream
        into the replacement (the bytes before it are copied), so memory stays one line
        whatever the shard's size. A changed line is written with its keys in on-disk order
        (:func:`~touchstone_ray.records.on_disk_order`), as :class:`ResponseWriter` writes it.
        Call it after the shard writers are closed.
        """
        seen = 0
        for shard in self.layout.shards(self.folder):
            with open(shard, "rb") as src, contextlib.ExitStack() as stack:
                dst: BinaryIO | None = None
                offset = 0
                for raw in src:
                    line, offset = raw, offset + len(raw)
                    rec = _candidate(raw, only_keys)
                    if rec is not None:
                        seen += 1
                        found = fields_for(rec)
                        if any(k not in rec or rec[k] != v for k, v in found.items()):
                            rec.update(found)
                            line = to_json_line(on_disk_order(rec)).encode("utf-8")
                    if dst is None and line is not raw:
                        dst = stack.enter_context(atomic_rewrite(shard))
                        with open(shard, "rb") as head:  # the unchanged lines before
                            _copy_bytes(head, dst, offset - len(raw))
                    if dst is not None:
                        dst.write(line)
        return seen


def _copy_bytes(src: BinaryIO, dst: BinaryIO, n: int) -> None:
    """Copy the first ``n`` bytes of ``src`` to ``dst`` in 1 MiB blocks."""
    while n > 0:
        block = src.read(min(n, 1 << 20))
        if not block:
            raise OSError(f"{src.name}: shorter than {n} more bytes while rewriting")
        dst.write(block)
        n -= len(block)


def _candidate(raw: bytes, only_keys: set[str] | None) -> dict[str, Any] | None:
    """The parsed record of a complete line to give to finalize, or ``None`` to keep it."""
    if not raw.endswith(b"\n") or not raw.strip():
        return None
    if only_keys is None and not _may_be_unfinalized(raw):
        return None
    try:
        rec = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
        return None
    if only_keys is not None:
        return rec if rec["key"] in only_keys else None
    return rec if is_unfinalized(rec) else None
