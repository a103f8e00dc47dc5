"""A judge's files in a bundle (``judgements/<judge>/``): verdicts, holistic reports and
calibration verdicts, and the one "last record wins" reading rule.

Each file is append-only (SPEC §7 writing rules); a record asked again is appended after the
one it replaces, so readers keep the **last** record per cell key (verdicts, calibration) or
per (model, variant) (reports). A judge run that reuses an older record than the last one
(a failed or differently configured run came between) appends it again, so the rule stays
true for every reader. Reading cuts nothing; :meth:`JudgeFiles.repair` cuts torn
tails into ``<file>.torn`` first (like eval's resume).

Each record is the contract record (:class:`~touchstone_ray.records.Verdict` /
:class:`~touchstone_ray.records.HolisticReport`) plus the :class:`CacheFields`
(``cache_key``, ``judge_model``, ``template_version``, ``error``, ``call_failed``,
``n_calls``; readers of the contract records ignore the extra keys). A stored record is reused
when :func:`is_current`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from touchstone_ray.bundle._layout import Layout
from touchstone_ray.storage import JsonlWriter, read_jsonl, repair_torn_tail

__all__ = [
    "TEMPLATE_VERSION",
    "CacheFields",
    "JudgeFiles",
    "current_of",
    "history_by_key",
    "history_by_row",
    "judge_ids",
    "last_by_key",
    "last_by_row",
    "record_extras",
]

TEMPLATE_VERSION = "touchstone-judge/3"
"""Version of the judge prompt templates and reply schemas (:mod:`touchstone_ray.judging.prompts`
re-exports it; bump it there with every change of a template): stored with every judgement and
in ``scorecard.json``, so scores stay comparable and the judge cache re-asks after a change."""


class CacheFields(BaseModel):
    """The fields stored beside each contract record of a judge's files."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    cache_key: str
    """sha256 hex of what decides the judge's answer (:mod:`touchstone_ray.judging.cache`);
    a stored record with the same key is reused."""
    judge_model: str
    """The model name the judge endpoint was asked with."""
    template_version: str = TEMPLATE_VERSION
    """Version of the judge prompt templates (``touchstone-judge/<n>``)."""
    error: str | None = None
    """Why the call or the reply failed; null when it did not."""
    call_failed: bool = False
    """The call itself failed (connection, timeout, HTTP): asked again on the next run. An
    unreadable reply is not a failed call and is kept."""
    n_calls: int = 1
    """Judge calls made for this record; 0 when none was made (a call that could not be
    sent, or a verdict decided without the judge, such as a reasoning-only answer)."""


def record_extras(
    *, cache_key: str, judge_model: str, error: str | None, call_failed: bool, n_calls: int
) -> dict[str, Any]:
    """The :class:`CacheFields` stored beside a contract record, as a mapping."""
    return CacheFields(
        cache_key=cache_key,
        judge_model=judge_model,
        error=error,
        call_failed=call_failed,
        n_calls=n_calls,
    ).model_dump(mode="json")


def is_current(record: dict[str, Any] | None, cache_key: str) -> bool:
    """A stored record that need not be asked again: same cache key, and not a failed call
    (a failed call is asked again on the next run; an unreadable reply is kept)."""
    return (
        record is not None
        and record.get("cache_key") == cache_key
        and not record.get("call_failed", False)
    )


def current_of(history: list[dict[str, Any]] | None, cache_key: str) -> dict[str, Any] | None:
    """The last record of ``history`` (one key's stored records, in file order) that
    :func:`is_current` for ``cache_key``; ``None`` when none is. A failed call or a run with
    another judge configuration appended after a current record does not hide it."""
    current = [record for record in history or [] if is_current(record, cache_key)]
    return current[-1] if current else None


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
    """Reader and lazy writers of one judge's three files (``judgements/<judge>/``); writers
    open on the first write."""

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

    def stored_verdicts(self) -> dict[str, list[dict[str, Any]]]:
        """Cell key → its stored verdict records, in file order."""
        return history_by_key(read_jsonl(self.verdicts_path).records)

    def stored_calibration(self) -> dict[str, list[dict[str, Any]]]:
        """Calibration key → its stored calibration verdict records, in file order."""
        return history_by_key(read_jsonl(self.calibration_path).records)

    def stored_reports(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """(model, variant) → its stored holistic report records, in file order."""
        return history_by_row(read_jsonl(self.reports_path).records)

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

    def write_verdict(self, record: dict[str, Any]) -> None:
        """Append one verdict record (flushed at once)."""
        self.append("verdicts", record)

    def write_calibration(self, record: dict[str, Any]) -> None:
        """Append one calibration verdict record (flushed at once)."""
        self.append("calibration", record)

    def write_report(self, record: dict[str, Any]) -> None:
        """Append one holistic report record (flushed at once)."""
        self.append("reports", record)

    def sync_if_due(self) -> None:
        """fsync writers whose unsynced data is older than a second."""
        for writer in self._writers.values():
            writer.sync_if_due()

    def close(self) -> None:
        """fsync and close the writers (idempotent; a later write opens them again)."""
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
