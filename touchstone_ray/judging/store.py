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

from touchstone_ray.bundle import JudgeFiles, Layout
from touchstone_ray.judging.prompts import TEMPLATE_VERSION

__all__ = ["CacheFields", "JudgeStore", "is_current", "record_extras"]


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


class JudgeStore(JudgeFiles):
    """The stored judgements of one judge (:class:`~touchstone_ray.bundle.JudgeFiles` on
    ``judgements/<judge_id>/``); writers open lazily on the first write."""

    def __init__(self, bundle_root: Path, judge_id: str) -> None:
        super().__init__(Layout(bundle_root), judge_id)

    def stored_verdicts(self) -> dict[str, dict[str, Any]]:
        """Cell key → the last stored verdict record."""
        return self.verdicts()

    def stored_calibration(self) -> dict[str, dict[str, Any]]:
        """Calibration key → the last stored calibration verdict record."""
        return self.calibration()

    def stored_reports(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(model, variant) → the last stored holistic report record."""
        return self.reports()

    def write_verdict(self, record: dict[str, Any]) -> None:
        """Append one verdict record (flushed at once)."""
        self.append("verdicts", record)

    def write_calibration(self, record: dict[str, Any]) -> None:
        """Append one calibration verdict record (flushed at once)."""
        self.append("calibration", record)

    def write_report(self, record: dict[str, Any]) -> None:
        """Append one holistic report record (flushed at once)."""
        self.append("reports", record)
