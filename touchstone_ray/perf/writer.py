"""The perf run's one writer: the request shards, the embeddings shards and the event log."""

from __future__ import annotations

import time
from typing import Any

from touchstone_ray.bundle import Bundle, ShardFolder
from touchstone_ray.errors import writes_into
from touchstone_ray.storage import JsonlWriter


class PerfWriter:
    """Writes each point's requests the moment the point returns (one ``write`` per line,
    synced), each model's embeddings batches, and the events; counts the requests written
    (:attr:`n_ok`, :attr:`n_failed`, and :attr:`n_dropped`: open-loop requests not sent
    because too many were out, data about the server's load rather than failures). A disk
    that fails raises :class:`~touchstone_ray.errors.BundleWriteError`."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.shards: dict[str, JsonlWriter] = {}
        self.events = JsonlWriter(bundle.layout.events)
        self.n_ok = 0
        self.n_failed = 0
        self.n_dropped = 0

    def records(self, label: str, records: list[dict[str, Any]]) -> None:
        """Append one point's request ``records`` to model ``label``'s shard and sync it."""
        with writes_into(self.bundle.root, "run"):
            writer = self.shards.get(label)
            if writer is None:
                writer = self.shards[label] = JsonlWriter(
                    self.bundle.layout.shard(label, ShardFolder.POINTS)
                )
            for rec in records:
                writer.write(rec)
                if rec.get("ok"):
                    self.n_ok += 1
                elif rec.get("dropped"):
                    self.n_dropped += 1
                else:
                    self.n_failed += 1
            writer.sync()

    def embeds(self, label: str, records: list[dict[str, Any]]) -> None:
        """Write model ``label``'s embeddings batches (``embed/<model>.jsonl``)."""
        with writes_into(self.bundle.root, "run"):
            path = self.bundle.layout.shard(label, ShardFolder.EMBED)
            path.parent.mkdir(exist_ok=True)
            with JsonlWriter(path) as writer:
                for rec in records:
                    writer.write(rec)

    def event(self, name: str, **fields: Any) -> None:
        """Append ``{"event": name, "ts": <epoch s>, **fields}`` to ``events.jsonl``."""
        with writes_into(self.bundle.root, "run"):
            self.events.write({"event": name, "ts": time.time(), **fields})
            self.events.sync_if_due()

    def close(self) -> None:
        """Close every shard and the event log."""
        with writes_into(self.bundle.root, "run"):
            for writer in self.shards.values():
                writer.close()
            self.events.close()
