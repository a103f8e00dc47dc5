"""Host samples (``hosts/<host>.jsonl``, SPEC §7 HostSample lines) and the event log
(``events.jsonl``): the one reader of each; the writers are the monitor set's and the
sink's :class:`~touchstone_ray.storage.JsonlWriter` on :class:`Layout` paths."""

from __future__ import annotations

import warnings
from collections import defaultdict
from typing import Any

from pydantic import ValidationError

from touchstone_ray.bundle._layout import Layout
from touchstone_ray.records import HostSample
from touchstone_ray.storage import read_jsonl

__all__ = ["read_events", "read_host_samples"]


def read_host_samples(layout: Layout) -> dict[str, list[HostSample]]:
    """Host → its samples sorted by ``ts`` (epoch s of that host), hosts sorted by name.

    Reads every ``hosts/*.jsonl`` tolerantly (torn tail skipped, malformed lines warned);
    a line that is not a valid HostSample is skipped with a ``UserWarning`` naming the file.
    """
    by_host: dict[str, list[HostSample]] = defaultdict(list)
    for path in layout.host_files():
        for obj in read_jsonl(path).records:
            try:
                sample = HostSample.model_validate(obj)
            except ValidationError as exc:
                warnings.warn(
                    f"{path}: skipped a bad HostSample ({exc.error_count()} errors)", stacklevel=2
                )
                continue
            by_host[sample.host].append(sample)
    return {h: sorted(s, key=lambda x: x.ts) for h, s in sorted(by_host.items())}


def read_events(layout: Layout) -> list[dict[str, Any]]:
    """The records of ``events.jsonl`` in file order (``{"event": name, "ts": epoch s, …}``);
    a missing file reads as empty, a torn tail is skipped."""
    return read_jsonl(layout.events).records
