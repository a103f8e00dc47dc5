"""The holistic templates in a judged report (``judge --template v1|v2``): which template
each judge's current reports were asked with, and, for a judge whose stored reports hold both
templates of a row, the A/B of their holistic scores.

The A/B takes, per judge, row and template, the latest stored report of that template that
has scores (a failed call or an unreadable reply is skipped), from the judge's whole
``reports.jsonl`` history (the file keeps every report; "last record wins" only decides the
current one). Per dimension it shows both scores and Δ = v2 − v1 (score points), and the two
quality % (SPEC §10: ``Σ(score_d × weight_d) / (5 × Σ weight_d) × 100``) with their Δ.
A report stored before there were two templates reads as ``v1``.
"""

from __future__ import annotations

from touchstone_ray.bundle import JudgeFiles, Layout, StoredReport
from touchstone_ray.doc import Block, Code, Heading, Para, Table, cell, num_cell
from touchstone_ray.doc.fmt import NONE
from touchstone_ray.report._data import ReportData, RowKey
from touchstone_ray.scoring.formulas import MissingDimensionsError, quality_pct

__all__ = ["template_of", "template_table", "templates_used"]


def template_of(report: StoredReport) -> str:
    """The holistic template ``report`` was asked with (``v1`` when it does not say)."""
    return report.holistic_template or "v1"


def templates_used(data: ReportData) -> dict[str, list[str]]:
    """Judge id → the holistic templates of its current reports (sorted), for the judges
    of the report."""
    out: dict[str, list[str]] = {}
    for judge in data.judges:
        reports = JudgeFiles(Layout(data.root), judge).reports().values()
        out[judge] = sorted({template_of(r) for r in reports if r.source != "ingest"})
    return out


def _latest_by_template(judge_files: JudgeFiles) -> dict[RowKey, dict[str, StoredReport]]:
    out: dict[RowKey, dict[str, StoredReport]] = {}
    for row, history in judge_files.stored_reports().items():
        for report in history:
            if report.dim_scores and not report.call_failed and report.source != "ingest":
                out.setdefault(row, {})[template_of(report)] = report
    return out


def _quality(data: ReportData, report: StoredReport) -> float | None:
    try:
        return quality_pct({k: float(v) for k, v in report.dim_scores.items()}, data.pack)
    except MissingDimensionsError:
        return None


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return NONE
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def template_table(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The A/B of the holistic templates (heading, intro, one table); empty when no judge
    of the report has a row scored under both."""
    body = []
    for judge in data.judges:
        latest = _latest_by_template(JudgeFiles(Layout(data.root), judge))
        for row in data.rows:
            both = latest.get(row, {})
            a, b = both.get("v1"), both.get("v2")
            if a is None or b is None:
                continue
            for dim in data.pack.dimensions:
                sa, sb = a.dim_scores.get(dim.id), b.dim_scores.get(dim.id)
                delta = sb - sa if sa is not None and sb is not None else None
                body.append(
                    (
                        cell(Code(judge)),
                        cell(row[0]),
                        cell(row[1]),
                        cell(Code(dim.id), f" {dim.name}"),
                        num_cell(NONE if sa is None else str(sa), sa),
                        num_cell(NONE if sb is None else str(sb), sb),
                        num_cell(NONE if delta is None else f"{delta:+d}", delta),
                    )
                )
            qa, qb = _quality(data, a), _quality(data, b)
            dq = qb - qa if qa is not None and qb is not None else None
            body.append(
                (
                    cell(Code(judge)),
                    cell(row[0]),
                    cell(row[1]),
                    cell(t["quality"]),
                    num_cell(_num(qa), qa),
                    num_cell(_num(qb), qb),
                    num_cell(_num(dq, signed=True), dq),
                )
            )
    if not body:
        return []
    head = (
        t["judge"],
        t["model"],
        t["variant"],
        t["dimension"],
        t["tpl_a"],
        t["tpl_b"],
        t["tpl_delta"],
    )
    return [Heading(3, t["template_ab"]), Para((t["template_ab_intro"],)), Table(head, tuple(body))]
