"""What one judge still has to do on a bundle (pure: no Ray, no requests).

Per answer, in SPEC §10's order: the last stored verdict that
:func:`~touchstone_ray.bundle.is_current` is reused (:func:`~touchstone_ray.bundle.current_of`:
one that a later failed call or another configuration's record follows is appended again,
:attr:`JudgePlan.restored`, so "last record wins" names it); else
:func:`~touchstone_ray.scoring.pre_judge_verdict` decides without a judge (prompt cut by the
server, reasoning-only, empty answer, failed generation) and the rule's verdict is written; else
the answer becomes an :class:`~.client.AnswerJob`. Per (model, variant), once all its verdicts
are in, a stored report whose cache key matches the evidence is reused, else a
:class:`~.client.ReportJob` asks for it."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.bundle import (
    JudgeFiles,
    StoredReport,
    StoredVerdict,
    current_of,
    record_extras,
)
from touchstone_ray.judging.cache import answer_cache_key, report_cache_key
from touchstone_ray.judging.checks import calibration_jobs
from touchstone_ray.judging.client import AnswerJob, ReportJob
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.prompts import DEFAULT_HOLISTIC_TEMPLATE, HolisticTemplate
from touchstone_ray.pack import Pack
from touchstone_ray.records import EvalResponse
from touchstone_ray.scoring.formulas import pre_judge_verdict

__all__ = ["JudgePlan", "Row", "plan_judge"]

Row = tuple[str, str]
"""(model, variant)."""


@dataclass
class JudgePlan:
    """One judge's state: current records, and the jobs still to ask."""

    spec: JudgeSpec
    store: JudgeFiles
    pack_sha256: str
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Cell key → current verdict record (stored, rule-based, or just received)."""
    rule_records: list[dict[str, Any]] = field(default_factory=list)
    """Rule-based verdicts (no judge call) not yet written."""
    jobs: deque[AnswerJob] = field(default_factory=deque)
    """Answers to ask the judge, in bundle order."""
    report_jobs: deque[ReportJob] = field(default_factory=deque)
    """Holistic reports to ask for."""
    reports: dict[Row, dict[str, Any]] = field(default_factory=dict)
    """(model, variant) → current report record."""
    row_keys: dict[Row, list[str]] = field(default_factory=dict)
    """(model, variant) → its cell keys."""
    remaining: Counter[Row] = field(default_factory=Counter)
    """(model, variant) → answers still without a current verdict."""
    stored_reports: dict[Row, list[StoredReport]] = field(default_factory=dict)
    """(model, variant) → its stored reports in file order (current or not)."""
    restored: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``(family, record)`` of reused records that are not their key's last stored one, to be
    appended again (``family``: ``verdicts``, ``calibration``, ``reports``)."""
    n_reused: int = 0
    n_reports_reused: int = 0
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Calibration key → current calibration verdict record."""
    calibration_jobs: deque[AnswerJob] = field(default_factory=deque)
    """Calibration answers to ask (before any other job)."""
    n_calibration: int = 0
    """Calibration items of the pack."""
    repeats: int = 1
    """Verdicts asked per answer (``judge --repeats``)."""
    template: HolisticTemplate = DEFAULT_HOLISTIC_TEMPLATE
    """The holistic template of this run (``judge --template``; part of every report key)."""

    @property
    def complete(self) -> bool:
        """Every answer has a current verdict and every row a current report."""
        return (
            not self.jobs
            and not self.calibration_jobs
            and len(self.calibration) == self.n_calibration
            and not self.rule_records
            and not self.report_jobs
            and not any(self.remaining.values())
            and all(row in self.reports for row in self.row_keys)
        )

    def row_verdicts(self, row: Row) -> list[dict[str, Any]]:
        """This judge's current verdict records of ``row``."""
        return [self.verdicts[k] for k in self.row_keys[row] if k in self.verdicts]

    def reuse(
        self,
        family: str,
        history: Sequence[StoredVerdict] | Sequence[StoredReport] | None,
        cache_key: str,
    ) -> dict[str, Any] | None:
        """The stored record of ``history`` (one key's records of ``family``, in file order)
        that is current for ``cache_key`` (:func:`~touchstone_ray.bundle.current_of`), as the
        mapping it was stored as, noted in :attr:`restored` when a later record follows it;
        ``None`` when none is current."""
        stored: list[StoredVerdict | StoredReport] = list(history or [])
        found = current_of(stored, cache_key)
        if found is None:
            return None
        record = found.to_record()
        if history and found is not history[-1]:
            self.restored.append((family, record))
        return record

    def report_job(self, row: Row) -> ReportJob | None:
        """The report job of a row whose verdicts are all in, or ``None`` when a stored report
        is still current (then it becomes the row's report)."""
        evidence = self.row_verdicts(row)
        key = report_cache_key(
            self.spec, self.pack_sha256, row[0], row[1], evidence, self.repeats, self.template
        )
        stored = self.reuse("reports", self.stored_reports.get(row), key)
        if stored is not None:
            self.reports[row] = stored
            self.n_reports_reused += 1
            return None
        return ReportJob(
            model=row[0], variant=row[1], verdicts=evidence, cache_key=key, template=self.template
        )

    def verdict_done(self, record: dict[str, Any]) -> ReportJob | None:
        """Take a new verdict record; returns the row's report job once its last verdict is in."""
        self.verdicts[record["key"]] = record
        row = (record["model"], record["variant"])
        self.remaining[row] -= 1
        if self.remaining[row] == 0:
            return self.report_job(row)
        return None


def plan_judge(
    spec: JudgeSpec,
    store: JudgeFiles,
    pack: Pack,
    pack_sha256: str,
    responses: Sequence[EvalResponse],
    repeats: int = 1,
    template: HolisticTemplate = DEFAULT_HOLISTIC_TEMPLATE,
) -> JudgePlan:
    """The plan of ``spec`` over ``responses`` (in bundle order), given what ``store`` holds;
    ``repeats`` verdicts per answer (part of every cache key); ``template`` the holistic
    template (part of every report key, of no verdict's).

    Reads the stored records (cut any torn tail with ``store.repair()`` first); writes nothing.
    The pack's calibration items come first (:func:`~.checks.calibration_jobs`).
    """
    plan = JudgePlan(
        spec=spec, store=store, pack_sha256=pack_sha256, repeats=repeats, template=template
    )
    stored_cal = store.stored_calibration()
    for cal_job in calibration_jobs(spec, pack, repeats):
        plan.n_calibration += 1
        old_cal = plan.reuse("calibration", stored_cal.get(cal_job.key), cal_job.cache_key)
        if old_cal is not None:
            plan.calibration[cal_job.key] = old_cal
        else:
            plan.calibration_jobs.append(cal_job)
    stored = store.stored_verdicts()
    for response in responses:
        row = (response.model, response.variant)
        plan.row_keys.setdefault(row, []).append(response.key)
        prompt = pack.prompt(response.prompt_id)
        flags = tuple(response.answer_flags)
        variant = pack.variant(response.variant)
        key = answer_cache_key(spec, pack, prompt, variant, response.response_text, repeats, flags)
        old = plan.reuse("verdicts", stored.get(response.key), key)
        if old is not None:
            plan.verdicts[response.key] = old
            plan.n_reused += 1
            continue
        rule = pre_judge_verdict(response, prompt, judge=spec.id)
        if rule is not None:
            record = {
                **rule.model_dump(mode="json"),
                **record_extras(
                    cache_key=key, judge_model=spec.model, error=None, call_failed=False, n_calls=0
                ),
            }
            plan.rule_records.append(record)
            plan.verdicts[response.key] = record
            continue
        plan.remaining[row] += 1
        plan.jobs.append(
            AnswerJob(
                key=response.key,
                model=response.model,
                variant=response.variant,
                prompt_id=response.prompt_id,
                repeat=response.repeat,
                category=response.category,
                answer=response.response_text,
                cache_key=key,
                repeats=repeats,
                answer_flags=flags,
            )
        )
    plan.stored_reports = store.stored_reports()
    for row in plan.row_keys:
        if plan.remaining[row] == 0:
            job = plan.report_job(row)
            if job is not None:
                plan.report_jobs.append(job)
    return plan
