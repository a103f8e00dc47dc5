"""One judge's files in a bundle: ``judgements/<judge>/verdicts.jsonl``, ``reports.jsonl`` and
``calibration.jsonl`` (its verdicts on the pack's calibration answers, same record shape as
verdicts, keyed ``calibration|<variant>|<prompt id>|<item index>``).

The files and their reading rule (the **last** record per cell key or per (model, variant)
wins) are :class:`~touchstone_ray.bundle.JudgeFiles`'; this module adds the cache fields and
the judge's names for the reads and writes.

Each record is the contract record (:class:`~touchstone_ray.records.Verdict` /
:class:`~touchstone_ray.records.HolisticReport`) plus ``cache_key``, ``judge_model``,
``template_version``, ``error``, ``call_failed`` and ``n_calls`` (readers of the contract
records ignore the extra keys). A stored record is reused when :func:`is_current`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from touchstone_ray.bundle import JudgeFiles, Layout, history_by_key, history_by_row
from touchstone_ray.judging.prompts import TEMPLATE_VERSION
from touchstone_ray.storage import read_jsonl

__all__ = ["CacheFields", "JudgeStore", "current_of", "is_current", "record_extras"]


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


class JudgeStore(JudgeFiles):
    """The stored judgements of one judge (:class:`~touchstone_ray.bundle.JudgeFiles` on
    ``judgements/<judge_id>/``); writers open lazily on the first write."""

    def __init__(self, bundle_root: Path, judge_id: str) -> None:
        super().__init__(Layout(bundle_root), judge_id)

    def stored_verdicts(self) -> dict[str, list[dict[str, Any]]]:
        """Cell key → its stored verdict records, in file order."""
        return history_by_key(read_jsonl(self.verdicts_path).records)

    def stored_calibration(self) -> dict[str, list[dict[str, Any]]]:
        """Calibration key → its stored calibration verdict records, in file order."""
        return history_by_key(read_jsonl(self.calibration_path).records)

    def stored_reports(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """(model, variant) → its stored holistic report records, in file order."""
        return history_by_row(read_jsonl(self.reports_path).records)

    def write_verdict(self, record: dict[str, Any]) -> None:
        """Append one verdict record (flushed at once)."""
        self.append("verdicts", record)

    def write_calibration(self, record: dict[str, Any]) -> None:
        """Append one calibration verdict record (flushed at once)."""
        self.append("calibration", record)

    def write_report(self, record: dict[str, Any]) -> None:
        """Append one holistic report record (flushed at once)."""
        self.append("reports", record)
