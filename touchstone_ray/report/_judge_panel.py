"""The judges section: first the judge checks (qualification on the pack's calibration answers
and warnings, the scorecard's ``judge_checks``), then who judged, their counts, each judge's own
view of every row, and their agreement (Krippendorff's α per dimension, κ on red flags,
Kendall's τ-b between rankings), read from the scorecard's ``agreement`` and ``details``
sections when present. :func:`judge_warnings` is the short list shown beside the ranking."""

from __future__ import annotations

from touchstone_ray.doc import (
    Block,
    Bullets,
    Code,
    Heading,
    Inline,
    Para,
    Strong,
    Table,
    cell,
    num_cell,
)
from touchstone_ray.doc.fmt import NONE, joined, pct
from touchstone_ray.report._data import ReportData
from touchstone_ray.report._templates import template_table, templates_used
from touchstone_ray.scoring.agreement import AgreementStat
from touchstone_ray.scoring.scorecard_model import Agreement, JudgeCheck, JudgeView, Scorecard

__all__ = ["judge_checks", "judge_warnings", "judges"]


def _stat(stat: AgreementStat, t: dict[str, str]) -> str:
    if stat.value is None:
        return f"{t['undefined']} ({stat.reason or NONE})"
    return f"{stat.value:.3f} (n = {stat.n_items})"


def _ratio(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else NONE


def _checks(data: ReportData) -> dict[str, JudgeCheck]:
    return data.card.judge_checks if data.card else {}


def judge_checks(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The judge-checks table (every judge with a check, counted or not); empty without one.
    A scorecard from before ``n_unknown_flags`` shows ``–`` there."""
    checks = _checks(data)
    if not checks:
        return []
    body = []
    for judge_id, check in checks.items():
        counted = judge_id in data.judges
        unknown = check.n_unknown_flags if "n_unknown_flags" in check.model_fields_set else None
        body.append(
            (
                cell(Code(judge_id)),
                cell(t["yes"] if check.qualified else Strong(t["no"])),
                cell(t["yes"] if counted else t["no"]),
                num_cell(_ratio(check.band_accuracy), check.band_accuracy),
                num_cell(_ratio(check.red_flag_recall), check.red_flag_recall),
                num_cell(_ratio(check.score_gap), check.score_gap),
                num_cell(str(check.n_calibration), check.n_calibration),
                num_cell(NONE if unknown is None else str(unknown), unknown),
                cell("; ".join(check.warnings) or NONE),
            )
        )
    head = (
        t["judge"],
        t["qualified"],
        t["counted"],
        t["band_accuracy"],
        t["red_flag_recall"],
        t["score_gap"],
        t["n_calibration"],
        t["unknown_flags"],
        t["warnings"],
    )
    intro = Para((t["judge_checks_intro"],))
    return [Heading(3, t["judge_checks"]), intro, Table(head, tuple(body))]


def outside_raters(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Agreement of every ingested outside rater with each local judge
    (:func:`touchstone_ray.scoring.ingest.rater_agreement`); empty without one."""
    from touchstone_ray.scoring.ingest import outside_raters as stored_raters
    from touchstone_ray.scoring.ingest import rater_agreement

    raters = stored_raters(data.root)
    if not raters or data.card is None:
        return []
    body = []
    for name, records in raters.items():
        for judge_id, stat in rater_agreement(data.pack, records, data.card).items():
            deltas = stat["mean_abs_delta"]
            diff = stat["quality_pct_diff"]
            body.append(
                (
                    cell(Code(name)),
                    cell(Code(judge_id)),
                    num_cell(str(stat["n_rows"]), stat["n_rows"]),
                    cell(", ".join(f"{d} {_ratio(v)}" for d, v in deltas.items())),
                    num_cell(_ratio(stat["ko_concordance"]), stat["ko_concordance"]),
                    num_cell(NONE if diff is None else f"{diff:+.1f}", diff),
                )
            )
    head = (
        t["rater"],
        t["judge"],
        t["n_rows"],
        t["mean_abs_delta"],
        t["ko_concordance"],
        t["quality_diff"],
    )
    return [Heading(3, t["outside_raters"]), Para((t["outside_intro"],)), Table(head, tuple(body))]


def judge_warnings(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Right after the ranking: each judge's warnings and whether it was counted; empty when
    none."""
    items: list[tuple[Inline, ...]] = []
    for judge_id, check in _checks(data).items():
        warnings = list(check.warnings)
        if not check.qualified:
            state = t["counted"] if judge_id in data.judges else t["not_counted"]
            warnings.insert(0, f"{t['not_qualified']} ({state})")
        if warnings:
            items.append((Code(judge_id), ": " + "; ".join(warnings)))
    return [Para((Strong(t["judge_warnings"]),)), Bullets(tuple(items))] if items else []


def _spread_table(data: ReportData, t: dict[str, str], card: Scorecard) -> list[Block]:
    """Per row: the judges' score spread over repeated verdicts (``judge --repeats``)."""
    spreads = {
        (d.model, d.variant): d.judge_spread for d in card.details if d.judge_spread is not None
    }
    if not spreads:
        return []
    body = []
    for key in data.rows:
        s = spreads.get(key)
        if s is None:
            continue
        body.append(
            (
                cell(key[0]),
                cell(key[1]),
                num_cell(str(s.n), s.n),
                num_cell(_ratio(s.mean), s.mean),
                num_cell(_ratio(s.max), s.max),
            )
        )
    head = (t["model"], t["variant"], t["verdicts"], t["spread_mean"], t["spread_max"])
    return [Heading(3, t["judge_spread"]), Para((t["spread_intro"],)), Table(head, tuple(body))]


def _per_judge(data: ReportData, t: dict[str, str], card: Scorecard) -> list[Block]:
    """Per row, each judge's own rank, quality and K.-o. (two or more judges)."""
    details = {(d.model, d.variant): d.judges for d in card.details}
    rankings = card.agreement.rankings
    if not details or len(data.judges) < 2:
        return []
    head = (t["model"], t["variant"], *data.judges)
    body = []
    for key in data.rows:
        per = details.get(key, {})
        cells = []
        for j in data.judges:
            view = per.get(j) or JudgeView()
            rank = rankings.get(j, [])
            pos = rank.index(f"{key[0]}|{key[1]}") + 1 if f"{key[0]}|{key[1]}" in rank else None
            text = f"#{pos or NONE} · {pct(view.quality_pct)} % · " + (
                t["passed"] if view.ko_passed else f"K.-o.: {view.ko_reason or NONE}"
            )
            cells.append(cell(text))
        body.append((cell(key[0]), cell(key[1]), *cells))
    return [Heading(3, t["per_judge"]), Table(head, tuple(body))]


def _agreement(data: ReportData, t: dict[str, str], agreement: Agreement) -> list[Block]:
    """Krippendorff's α per dimension, κ on red flags, τ-b between rankings."""
    blocks: list[Block] = []
    alphas = agreement.dimension_alpha
    if alphas:
        names = {d.id: d.name for d in data.pack.dimensions}
        blocks.append(
            Table(
                (t["dimension"], t["alpha"]),
                tuple(
                    (cell(Code(dim), f" {names.get(dim, '')}"), cell(_stat(stat, t)))
                    for dim, stat in alphas.items()
                ),
            )
        )
    kappa = agreement.red_flag_kappa
    items: list[tuple[Inline, ...]] = [(f"{t['kappa']} ({kappa.method}): {_stat(kappa, t)}",)]
    for pair, stat in agreement.ranking_tau.items():
        items.append((f"{t['tau']} ({pair}): {_stat(stat, t)}",))
    blocks.append(Bullets(tuple(items)))
    return blocks


def judges(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The judge checks, the judges, their counts, each judge's own view of every row, and the
    agreement (a judged report: ``data.card`` is set)."""
    card = data.card
    if card is None:
        return []
    verdicts = [v for vs in data.verdicts.values() for v in vs]
    used = templates_used(data)
    rows = []
    for j in data.judges:
        own = [v for v in verdicts if v.judge == j]
        rows.append(
            (
                cell(Code(j)),
                cell(data.judge_models.get(j, NONE)),
                cell(", ".join(used.get(j, [])) or NONE),
                num_cell(str(len(own)), len(own)),
                num_cell(
                    str(sum(v.score is not None for v in own)),
                    sum(v.score is not None for v in own),
                ),
                num_cell(
                    str(sum(v.status == "judge_error" for v in own)),
                    sum(v.status == "judge_error" for v in own),
                ),
            )
        )
    blocks: list[Block] = [
        Heading(2, t["judges_section"]),
        *judge_checks(data, t),
        *outside_raters(data, t),
        Table(
            (
                t["judge"],
                t["judge_model"],
                t["holistic_template"],
                t["verdicts"],
                t["scored"],
                t["judge_errors"],
            ),
            tuple(rows),
        ),
        Para((Strong(t["vote"]), f": {card.agreement.red_flag_vote}")),
        *template_table(data, t),
    ]
    if card.aborted_judges:
        blocks.append(Para((Strong(t["aborted"]), ": ", joined(card.aborted_judges))))
    blocks += _per_judge(data, t, card)
    blocks += _spread_table(data, t, card)
    blocks.append(Heading(3, t["agreement"]))
    if len(data.judges) < 2:
        blocks.append(Para((t["one_judge"],)))
        return blocks
    return blocks + _agreement(data, t, card.agreement)
