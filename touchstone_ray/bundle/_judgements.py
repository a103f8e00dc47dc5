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
``n_calls``); the readers give them typed (:class:`StoredVerdict`, :class:`StoredReport`:
the contract record, the cache fields and what else the judge stored, unknown keys kept). A
stored record is reused when :func:`is_current`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from touchstone_ray.bundle._kept import KeptObject, Number
from touchstone_ray.bundle._layout import Layout
from touchstone_ray.errors import field_error
from touchstone_ray.records import HolisticReport, Verdict
from touchstone_ray.storage import JsonlWriter, read_jsonl, repair_torn_tail

__all__ = [
    "TEMPLATE_VERSION",
    "CacheFields",
    "JudgeFiles",
    "StoredReport",
    "StoredVerdict",
    "current_of",
    "history_by_key",
    "history_by_row",
    "is_current",
    "judge_ids",
    "last_by_key",
    "last_by_row",
    "read_stored",
    "record_extras",
]

TEMPLATE_VERSION = "touchstone-judge/3"
"""Version of the judge prompt templates and reply schemas (:mod:`touchstone_ray.judging.prompts`
re-exports it; bump it there with every change of a template): stored with every judgement and
in ``scorecard.json``, so scores stay comparable and the judge cache re-asks after a change."""


class CacheFields(BaseModel):
    """The fields stored beside each contract record of a judge's files. The judge writes
    every one (:func:`record_extras`); a record stored without them (an outside rater's
    ingested report, a bundle from before the cache) reads them as their defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    cache_key: str | None = None
    """sha256 hex of what decides the judge's answer (:mod:`touchstone_ray.judging.cache`);
    a stored record with the same key is reused. ``None``: stored without one (never
    reused)."""
    judge_model: str | None = None
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


_STORED_CONFIG = ConfigDict(extra="allow", frozen=False, use_attribute_docstrings=True)


class StoredVerdict(Verdict, CacheFields, KeptObject):
    """One line of ``verdicts.jsonl`` or ``calibration.jsonl`` as read: the
    :class:`~touchstone_ray.records.Verdict` plus the :class:`CacheFields` and what a repeated
    judgement adds; keys it does not know are kept, and :meth:`to_record` gives the line's
    mapping back, key order included."""

    model_config = _STORED_CONFIG

    repeat_scores: list[int] | None = None
    """``judge --repeats``: every usable score of the repeats, in asking order (1..5)."""
    score_spread: Number | None = None
    """``judge --repeats``: max − min of ``repeat_scores`` (score points); ``None`` without
    one."""

    def contract(self) -> Verdict:
        """The SPEC §7 Verdict alone (every contract field, defaults filled in)."""
        return Verdict.model_validate({n: getattr(self, n) for n in Verdict.model_fields})

    def to_record(self) -> dict[str, Any]:
        """The record as stored (the keys read, in their order)."""
        return self.to_dict()


class StoredReport(HolisticReport, CacheFields, KeptObject):
    """One line of ``reports.jsonl`` as read: the
    :class:`~touchstone_ray.records.HolisticReport` plus the :class:`CacheFields` and the
    judge's ``missing`` and ``raw``, or an ingested outside rater's ``red_flagged`` and
    ``source``; keys it does not know are kept (:meth:`to_record`)."""

    model_config = _STORED_CONFIG

    missing: dict[str, str] | None = None
    """Dimension id → why the judge gave it no score (the report is ``degraded``)."""
    raw: str | None = None
    """The judge's raw reply; ``None`` when the call failed."""
    red_flagged: list[str] | None = None
    """An ingested outside rater: the prompt ids it red-flagged (sorted)."""
    source: str | None = None
    """``ingest`` for an outside rater's report (:mod:`touchstone_ray.scoring.ingest`)."""
    holistic_template: str | None = None
    """The holistic template the judge was asked with (``v1`` | ``v2``, ``judge --template``);
    ``None``: stored before there were two, which is ``v1``."""

    def contract(self) -> HolisticReport:
        """The SPEC §7 HolisticReport alone (every contract field, defaults filled in)."""
        return HolisticReport.model_validate(
            {n: getattr(self, n) for n in HolisticReport.model_fields}
        )

    def to_record(self) -> dict[str, Any]:
        """The record as stored (the keys read, in their order)."""
        return self.to_dict()


StoredT = TypeVar("StoredT", StoredVerdict, StoredReport)
CachedT = TypeVar("CachedT", bound=CacheFields)


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


def is_current(record: CacheFields | None, cache_key: str) -> bool:
    """A stored record that need not be asked again: same cache key, and not a failed call
    (a failed call is asked again on the next run; an unreadable reply is kept)."""
    return record is not None and record.cache_key == cache_key and not record.call_failed


def current_of(history: list[CachedT] | None, cache_key: str) -> CachedT | None:
    """The last record of ``history`` (one key's stored records, in file order) that
    :func:`is_current` for ``cache_key``; ``None`` when none is. A failed call or a run with
    another judge configuration appended after a current record does not hide it."""
    current = [record for record in history or [] if is_current(record, cache_key)]
    return current[-1] if current else None


def history_by_key(records: Iterable[StoredVerdict]) -> dict[str, list[StoredVerdict]]:
    """Cell key → every record with that ``key``, in file order."""
    out: dict[str, list[StoredVerdict]] = {}
    for record in records:
        out.setdefault(record.key, []).append(record)
    return out


def history_by_row(records: Iterable[StoredReport]) -> dict[tuple[str, str], list[StoredReport]]:
    """(model, variant) → every record of that row, in file order."""
    out: dict[tuple[str, str], list[StoredReport]] = {}
    for record in records:
        out.setdefault((record.model, record.variant), []).append(record)
    return out


def last_by_key(records: Iterable[StoredVerdict]) -> dict[str, StoredVerdict]:
    """Cell key → the last record with that ``key`` (file order)."""
    return {key: history[-1] for key, history in history_by_key(records).items()}


def last_by_row(records: Iterable[StoredReport]) -> dict[tuple[str, str], StoredReport]:
    """(model, variant) → the last record of that row (file order)."""
    return {row: history[-1] for row, history in history_by_row(records).items()}


def judge_ids(layout: Layout) -> list[str]:
    """The judge ids with a folder under ``judgements/``, sorted."""
    return [p.name for p in layout.judge_dirs()]


def read_stored(path: Path, model: type[StoredT]) -> list[StoredT]:
    """The records of ``path`` as ``model``, in file order (a missing file reads as empty, a
    torn tail is skipped); a line that is not a valid ``model`` is left out, with one
    ``UserWarning`` per file naming it, the count and the first bad field."""
    out: list[StoredT] = []
    bad: list[str] = []
    for obj in read_jsonl(path).records:
        try:
            out.append(model.model_validate(obj))
        except ValidationError as exc:
            bad.append(field_error(exc))
    if bad:
        warnings.warn(
            f"{path}: skipped {len(bad)} records that are not a {model.__name__} (first: {bad[0]})",
            stacklevel=2,
        )
    return out


class JudgeFiles:
    """Reader and lazy writers of one judge's three files (``judgements/<judge>/``); writers
    open on the first write. Readers give typed records (:class:`StoredVerdict`,
    :class:`StoredReport`; invalid lines left out with a warning, :func:`read_stored`)."""

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

    def verdicts(self) -> dict[str, StoredVerdict]:
        """Cell key → the last stored verdict."""
        return last_by_key(read_stored(self.verdicts_path, StoredVerdict))

    def calibration(self) -> dict[str, StoredVerdict]:
        """Calibration key → the last stored calibration verdict."""
        return last_by_key(read_stored(self.calibration_path, StoredVerdict))

    def reports(self) -> dict[tuple[str, str], StoredReport]:
        """(model, variant) → the last stored holistic report."""
        return last_by_row(read_stored(self.reports_path, StoredReport))

    def stored_verdicts(self) -> dict[str, list[StoredVerdict]]:
        """Cell key → its stored verdicts, in file order."""
        return history_by_key(read_stored(self.verdicts_path, StoredVerdict))

    def stored_calibration(self) -> dict[str, list[StoredVerdict]]:
        """Calibration key → its stored calibration verdicts, in file order."""
        return history_by_key(read_stored(self.calibration_path, StoredVerdict))

    def stored_reports(self) -> dict[tuple[str, str], list[StoredReport]]:
        """(model, variant) → its stored holistic reports, in file order."""
        return history_by_row(read_stored(self.reports_path, StoredReport))

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
