"""A judge's files in a bundle (``judgements/<judge>/``): verdicts, holistic reports and
calibration verdicts, and the one "last record wins" reading rule.

Each file is append-only (SPEC §7 writing rules); a record asked again is appended after the
one it replaces, so readers keep the **last** record per cell key (verdicts, calibration) or
per (model, variant) (reports). A judge run that reuses an older record than the last one
(a failed or differently configured run came between) appends it again, so the rule stays
true for every reader. Reading cuts nothing; :meth:`JudgeFiles.repair` cuts torn
tails into ``<file>.torn`` first (like eval's resume).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from touchstone_ray.bundle._layout import Layout
from touchstone_ray.storage import JsonlWriter, read_jsonl, repair_torn_tail

__all__ = [
    "JudgeFiles",
    "history_by_key",
    "history_by_row",
    "judge_ids",
    "last_by_key",
    "last_by_row",
]


def history_by_key(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Cell key → every record with that string ``key``, in file order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        key = record.get("key")
        if isinstance(key, str):
            out.setdefault(key, []).append(record)
    return out


def history_by_row(
    records: Iterable[dict[str, Any]],
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(model, variant) → every record with string ``model`` and ``variant``, in file order."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        model, variant = record.get("model"), record.get("variant")
        if isinstance(model, str) and isinstance(variant, str):
            out.setdefault((model, variant), []).append(record)
    return out


def last_by_key(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Cell key → the last record with that string ``key`` (file order)."""
    return {key: history[-1] for key, history in history_by_key(records).items()}


def last_by_row(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(model, variant) → the last record with string ``model`` and ``variant``."""
    return {row: history[-1] for row, history in history_by_row(records).items()}


def judge_ids(layout: Layout) -> list[str]:
    """The judge ids with a folder under ``judgements/``, sorted."""
    return [p.name for p in layout.judge_dirs()]


class JudgeFiles:
    """Reader and lazy writers of one judge's three files."""

    def __init__(self, layout: Layout, judge: str) -> None:
        self.folder = layout.judge_dir(judge)
        self.verdicts_path = layout.verdicts(judge)
        self.reports_path = layout.reports(judge)
        self.calibration_path = layout.calibration(judge)
        self._writers: dict[str, JsonlWriter] = {}

    def repair(self) -> int:
        """Cut torn last lines of the three files into ``<file>.torn``; bytes cut."""
        return sum(
            repair_torn_tail(p)
            for p in (self.verdicts_path, self.reports_path, self.calibration_path)
        )

    def verdicts(self) -> dict[str, dict[str, Any]]:
        """Cell key → the last stored verdict record."""
        return last_by_key(read_jsonl(self.verdicts_path).records)

    def calibration(self) -> dict[str, dict[str, Any]]:
        """Calibration key → the last stored calibration verdict record."""
        return last_by_key(read_jsonl(self.calibration_path).records)

    def reports(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(model, variant) → the last stored holistic report record."""
        return last_by_row(read_jsonl(self.reports_path).records)

    def append(self, family: str, record: dict[str, Any]) -> None:
        """Append one record to ``verdicts``, ``reports`` or ``calibration`` (flushed at once;
        the writer opens on the first write)."""
        writer = self._writers.get(family)
        if writer is None:
            path = {
                "verdicts": self.verdicts_path,
                "reports": self.reports_path,
                "calibration": self.calibration_path,
            }[family]
            writer = self._writers[family] = JsonlWriter(path)
        writer.write(record)

    def sync_if_due(self) -> None:
        """fsync writers whose unsynced data is older than a second."""
        for writer in self._writers.values():
            writer.sync_if_due()

    def close(self) -> None:
        """fsync and close the writers (idempotent; a later write opens them again)."""
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
