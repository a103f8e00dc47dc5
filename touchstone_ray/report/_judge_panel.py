"""The judges section: first the judge checks (qualification on the pack's calibration answers
and warnings, the scorecard's ``judge_checks``), then who judged, their counts, each judge's own
view of every row, and their agreement (Krippendorff's α per dimension, κ on red flags,
Kendall's τ-b between rankings), read from the scorecard's ``agreement`` and ``details``
sections when present. :func:`judge_warnings` is the short list shown beside the ranking."""

from __future__ import annotations

from typing import Any

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

__all__ = ["judge_checks", "judge_warnings", "judges"]


def _stat(stat: Any, t: dict[str, str]) -> str:
    if not isinstance(stat, dict):
        return NONE
    if stat.get("value") is None:
        return f"{t['undefined']} ({stat.get('reason') or NONE})"
    return f"{stat['value']:.3f} (n = {stat.get('n_items', NONE)})"


def _ratio(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else NONE


def judge_checks(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The judge-checks table (every judge with a check, counted or not); empty without one."""
    checks = (data.card or {}).get("judge_checks") or {}
    if not isinstance(checks, dict) or not checks:
        return []
    body = []
    for judge_id, check in checks.items():
        if not isinstance(check, dict):
            continue
        counted = judge_id in data.judges
        body.append(
            (
                cell(Code(str(judge_id))),
                cell(t["yes"] if check.get("qualified") else Strong(t["no"])),
                cell(t["yes"] if counted else t["no"]),
                num_cell(_ratio(check.get("band_accuracy")), check.get("band_accuracy")),
                num_cell(_ratio(check.get("red_flag_recall")), check.get("red_flag_recall")),
                num_cell(_ratio(check.get("score_gap")), check.get("score_gap")),
                num_cell(str(check.get("n_calibration", NONE)), check.get("n_calibration")),
                num_cell(str(check.get("n_unknown_flags", NONE)), check.get("n_unknown_flags")),
                cell("; ".join(str(w) for w in check.get("warnings") or []) or NONE),
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
    checks = (data.card or {}).get("judge_checks") or {}
    items: list[tuple[Inline, ...]] = []
    for judge_id, check in checks.items() if isinstance(checks, dict) else ():
        if not isinstance(check, dict):
            continue
        warnings = [str(w) for w in check.get("warnings") or []]
        if not check.get("qualified"):
            state = t["counted"] if judge_id in data.judges else t["not_counted"]
            warnings.insert(0, f"{t['not_qualified']} ({state})")
        if warnings:
            items.append((Code(str(judge_id)), ": " + "; ".join(warnings)))
    return [Para((Strong(t["judge_warnings"]),)), Bullets(tuple(items))] if items else []


def _spread_table(data: ReportData, t: dict[str, str], card: dict[str, Any]) -> list[Block]:
    """Per row: the judges' score spread over repeated verdicts (``judge --repeats``)."""
    spreads = {
        (str(d.get("model")), str(d.get("variant"))): d.get("judge_spread")
        for d in card.get("details") or []
        if isinstance(d, dict) and isinstance(d.get("judge_spread"), dict)
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
                num_cell(str(s.get("n")), s.get("n")),
                num_cell(_ratio(s.get("mean")), s.get("mean")),
                num_cell(_ratio(s.get("max")), s.get("max")),
            )
        )
    head = (t["model"], t["variant"], t["verdicts"], t["spread_mean"], t["spread_max"])
    return [Heading(3, t["judge_spread"]), Para((t["spread_intro"],)), Table(head, tuple(body))]


def judges(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The judge checks, the judges, their counts, each judge's own view of every row, and the
    agreement."""
    card = data.card or {}
    verdicts = [v for vs in data.verdicts.values() for v in vs]
    rows = []
    for j in data.judges:
        own = [v for v in verdicts if v.judge == j]
        rows.append(
            (
                cell(Code(j)),
                cell(data.judge_models.get(j, NONE)),
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
    agreement = card.get("agreement") or {}
    blocks: list[Block] = [
        Heading(2, t["judges_section"]),
        *judge_checks(data, t),
        *outside_raters(data, t),
        Table(
            (
                t["judge"],
                t["judge_model"],
                t["verdicts"],
                t["scored"],
                t["judge_errors"],
            ),
            tuple(rows),
        ),
        Para((Strong(t["vote"]), f": {agreement.get('red_flag_vote', NONE)}")),
    ]
    if card.get("aborted_judges"):
        blocks.append(Para((Strong(t["aborted"]), ": ", joined(card["aborted_judges"]))))
    details = {
        (str(d.get("model")), str(d.get("variant"))): d.get("judges") or {}
        for d in card.get("details") or []
        if isinstance(d, dict)
    }
    rankings = agreement.get("rankings") or {}
    if details and len(data.judges) > 1:
        head = (t["model"], t["variant"], *data.judges)
        body = []
        for key in data.rows:
            per = details.get(key, {})
            cells = []
            for j in data.judges:
                view = per.get(j) or {}
                rank = rankings.get(j, [])
                pos = rank.index(f"{key[0]}|{key[1]}") + 1 if f"{key[0]}|{key[1]}" in rank else None
                text = f"#{pos or NONE} · {pct(view.get('quality_pct'))} % · " + (
                    t["passed"]
                    if view.get("ko_passed")
                    else f"K.-o.: {view.get('ko_reason') or NONE}"
                )
                cells.append(cell(text))
            body.append((cell(key[0]), cell(key[1]), *cells))
        blocks += [Heading(3, t["per_judge"]), Table(head, tuple(body))]
    blocks += _spread_table(data, t, card)
    blocks.append(Heading(3, t["agreement"]))
    if len(data.judges) < 2:
        blocks.append(Para((t["one_judge"],)))
        return blocks
    alphas = agreement.get("dimension_alpha") or {}
    if alphas:
        names = {d.id: d.name for d in data.pack.dimensions}
        blocks.append(
            Table(
                (t["dimension"], t["alpha"]),
                tuple(
                    (cell(Code(str(dim)), f" {names.get(str(dim), '')}"), cell(_stat(stat, t)))
                    for dim, stat in alphas.items()
                ),
            )
        )
    items: list[tuple[Inline, ...]] = []
    kappa = agreement.get("red_flag_kappa")
    if isinstance(kappa, dict):
        items.append((f"{t['kappa']} ({kappa.get('method', NONE)}): {_stat(kappa, t)}",))
    for pair, stat in (agreement.get("ranking_tau") or {}).items():
        items.append((f"{t['tau']} ({pair}): {_stat(stat, t)}",))
    if items:
        blocks.append(Bullets(tuple(items)))
    elif not alphas:
        blocks.append(Para((NONE,)))
    return blocks
