"""The judges section: who judged, their counts, each judge's own view of every row, and
their agreement (Krippendorff's α per dimension, κ on red flags, Kendall's τ-b between
rankings), read from the scorecard's ``agreement`` and ``details`` sections when present."""

from __future__ import annotations

from typing import Any

from touchstone_ray.report._data import ReportData
from touchstone_ray.report._doc import (
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
from touchstone_ray.report._fmt import NONE, joined, pct

__all__ = ["judges"]


def _stat(stat: Any, t: dict[str, str]) -> str:
    if not isinstance(stat, dict):
        return NONE
    if stat.get("value") is None:
        return f"{t['undefined']} ({stat.get('reason') or NONE})"
    return f"{stat['value']:.3f} (n = {stat.get('n_items', NONE)})"


def judges(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The judges, their counts, each judge's own view of every row, and the agreement."""
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
