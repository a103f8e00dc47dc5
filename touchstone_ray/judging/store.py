"""One judge's files in a bundle: ``judgements/<judge>/verdicts.jsonl``, ``reports.jsonl`` and
``calibration.jsonl`` (its verdicts on the pack's calibration answers, same record shape as
verdicts, keyed ``calibration|<variant>|<prompt id>|<item index>``).

Both follow SPEC §7's JSONL rules through :mod:`touchstone_ray.storage`: one writer per file
(the driver), each record one flushed write. Reading cuts a torn last line into
``<file>.torn`` first (like eval's resume), skips malformed lines with a warning, and keeps
the **last** record per cell key (verdicts) or per (model, variant) (reports): a record asked
again is appended after the one it replaces.

Each record is the contract record (:class:`~touchstone_ray.records.Verdict` /
:class:`~touchstone_ray.records.ModelReport`) plus ``cache_key``, ``judge_model``,
``template_version``, ``error``, ``call_failed`` and ``n_calls`` (readers of the contract
records ignore the extra keys). A stored record is reused when :func:`is_current`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from touchstone_ray.judging.prompts import TEMPLATE_VERSION
from touchstone_ray.storage import JsonlWriter, read_jsonl, repair_torn_tail

__all__ = ["JudgeStore", "is_current", "record_extras"]


def record_extras(
    *, cache_key: str, judge_model: str, error: str | None, call_failed: bool, n_calls: int
) -> dict[str, Any]:
    """The fields stored beside a contract record (see the module docstring)."""
    return {
        "cache_key": cache_key,
        "judge_model": judge_model,
        "template_version": TEMPLATE_VERSION,
        "error": error,
        "call_failed": call_failed,
        "n_calls": n_calls,
    }


def is_current(record: dict[str, Any] | None, cache_key: str) -> bool:
    """A stored record that need not be asked again: same cache key, and not a failed call
    (a failed call is asked again on the next run; an unreadable reply is kept)."""
    return (
        record is not None
        and record.get("cache_key") == cache_key
        and not record.get("call_failed", False)
    )


class JudgeStore:
    """The stored judgements of one judge; writers open lazily on the first write."""

    def __init__(self, bundle_root: Path, judge_id: str) -> None:
        self.folder = bundle_root / "judgements" / judge_id
        self.verdicts_path = self.folder / "verdicts.jsonl"
        self.reports_path = self.folder / "reports.jsonl"
        self.calibration_path = self.folder / "calibration.jsonl"
        self._verdicts: JsonlWriter | None = None
        self._reports: JsonlWriter | None = None
        self._calibration: JsonlWriter | None = None

    def repair(self) -> int:
        """Cut torn last lines of the three files into ``<file>.torn``; bytes cut."""
        return sum(
            repair_torn_tail(p)
            for p in (self.verdicts_path, self.reports_path, self.calibration_path)
        )

    def stored_verdicts(self) -> dict[str, dict[str, Any]]:
        """Cell key → the last stored verdict record."""
        return self._by_key(self.verdicts_path)

    def stored_calibration(self) -> dict[str, dict[str, Any]]:
        """Calibration key → the last stored calibration verdict record."""
        return self._by_key(self.calibration_path)

    @staticmethod
    def _by_key(path: Path) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for record in read_jsonl(path).records:
            key = record.get("key")
            if isinstance(key, str):
                out[key] = record
        return out

    def stored_reports(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(model, variant) → the last stored report record."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for record in read_jsonl(self.reports_path).records:
            model, variant = record.get("model"), record.get("variant")
            if isinstance(model, str) and isinstance(variant, str):
                out[(model, variant)] = record
        return out

    def write_verdict(self, record: dict[str, Any]) -> None:
        """Append one verdict record (flushed at once)."""
        if self._verdicts is None:
            self._verdicts = JsonlWriter(self.verdicts_path)
        self._verdicts.write(record)

    def write_calibration(self, record: dict[str, Any]) -> None:
        """Append one calibration verdict record (flushed at once)."""
        if self._calibration is None:
            self._calibration = JsonlWriter(self.calibration_path)
        self._calibration.write(record)

    def write_report(self, record: dict[str, Any]) -> None:
        """Append one report record (flushed at once)."""
        if self._reports is None:
            self._reports = JsonlWriter(self.reports_path)
        self._reports.write(record)

    def sync_if_due(self) -> None:
        """fsync writers whose unsynced data is older than a second."""
        for writer in (self._verdicts, self._reports, self._calibration):
            if writer is not None:
                writer.sync_if_due()

    def close(self) -> None:
        """fsync and close the writers (idempotent; a later write opens them again)."""
        for writer in (self._verdicts, self._reports, self._calibration):
            if writer is not None:
                writer.close()
        self._verdicts = self._reports = self._calibration = None
