"""Response shards (``responses/<model>.jsonl``, and ``points/`` / ``embed/`` of a perf
bundle): append, scan, read, and the finalize rewrite (SPEC §7 writing and reading rules).

A record is *unfinalized* while its ``n_samples`` is null or absent: finalize has not found
host samples for it (yet). :meth:`ResponseShards.rewrite_unfinalized` is the one place that
rewrites a shard: it streams each shard, gives every unfinalized record (or every record of
``only_keys``) to a callback, and replaces the shard atomically only when a line changed;
lines it does not change, malformed ones and a torn tail included, are copied byte for byte.
So a second finalize over the same samples changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.bundle._layout import Layout
from touchstone_ray.storage import (
    JsonlWriter,
    ShardScan,
    atomic_rewrite,
    dedupe_by_key,
    iter_jsonl,
    repair_torn_tail,
    to_json_line,
)

__all__ = ["ResponseScan", "ResponseShards", "is_unfinalized"]

_NULL_SAMPLES = re.compile(rb'"n_samples"\s*:\s*null\b')


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

    ok_keys: set[str] = field(default_factory=set)
    """Keys with at least one ``ok`` record."""
    error_keys: set[str] = field(default_factory=set)
    """Keys with error records only."""
    n_lines: int = 0
    """JSON object lines read."""
    torn_bytes: int = 0
    """Bytes cut off torn last lines (``repair=True``)."""
    malformed: int = 0
    """Malformed lines quarantined."""


class ResponseShards:
    """The JSONL shards of one folder of a bundle (``responses`` by default)."""

    def __init__(self, layout: Layout, folder: str = "responses") -> None:
        self.layout = layout
        self.folder = folder

    def writer(self, model: str) -> JsonlWriter:
        """An append writer for ``model``'s shard (one writer per file; close it)."""
        return JsonlWriter(self.layout.shard(model, self.folder))

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

    def scan(self, repair: bool = False) -> ResponseScan:
        """Ok keys and error-only keys of every shard; with ``repair``, each torn last line
        is first cut into ``<shard>.torn``."""
        scan = ResponseScan()
        for shard in self.layout.shards(self.folder):
            if repair:
                scan.torn_bytes += repair_torn_tail(shard)
            shard_scan = ShardScan()
            for record in iter_jsonl(shard, shard_scan):
                scan.n_lines += 1
                key = record.get("key")
                if not isinstance(key, str):
                    continue
                if record.get("ok"):
                    scan.ok_keys.add(key)
                    scan.error_keys.discard(key)
                elif key not in scan.ok_keys:
                    scan.error_keys.add(key)
            scan.malformed += len(shard_scan.malformed)
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
        others are kept byte for byte. Memory grows with the changed lines, not the shard.
        Call it after the shard writers are closed.
        """
        seen = 0
        for shard in self.layout.shards(self.folder):
            changed: dict[int, bytes] = {}
            with open(shard, "rb") as src:
                for lineno, raw in enumerate(src):
                    rec = _candidate(raw, only_keys)
                    if rec is None:
                        continue
                    seen += 1
                    found = fields_for(rec)
                    if any(k not in rec or rec[k] != v for k, v in found.items()):
                        rec.update(found)
                        changed[lineno] = to_json_line(rec).encode("utf-8")
            if not changed:
                continue
            with open(shard, "rb") as src, atomic_rewrite(shard) as dst:
                for lineno, raw in enumerate(src):
                    dst.write(changed.get(lineno, raw))
        return seen


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
