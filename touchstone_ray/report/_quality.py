"""Sections that show judgements: verdict and ranking, master scorecard per dimension, per
category, variant A/B, quality vs speed, judges and agreement.

Reads the scorecard as it is: the SPEC §7 contract fields of every row, and the extra
sections (``categories``, ``variant_ab``, ``agreement``, ``details``) only when present.
Dimension rationales and cited prompts come from ``judgements/<judge>/reports.jsonl``.
"""

from __future__ import annotations

from touchstone_ray.doc import (
    Block,
    Bullets,
    Cell,
    Chart,
    Code,
    Heading,
    Inline,
    Para,
    Strong,
    Table,
    cell,
    charts,
    num_cell,
)
from touchstone_ray.doc.fmt import NONE, gb, num, pct
from touchstone_ray.report._data import ReportData, RowKey
from touchstone_ray.report._flags import misconfig_mark, misconfig_warning, misconfigured_rows
from touchstone_ray.report._sections import links, row_label
from touchstone_ray.report._speed import load_label, speed
from touchstone_ray.scoring.aggregates import under_load
from touchstone_ray.scoring.render import (
    NUMERIC_COLUMNS,
    RankingCell,
    RankingColumn,
    ko_text,
    level_text,
    ranking_rows,
    with_checks,
)
from touchstone_ray.scoring.scorecard_model import ScorecardRow

__all__ = ["ab", "categories", "master", "overview", "quality_speed"]


REPORT_COLUMNS: tuple[RankingColumn, ...] = (
    "rank",
    "model",
    "variant",
    "quality",
    "level",
    "ko",
    "red_flags",
    "mean",
    "ttft_p50",
    "tps",
)
"""The columns of the report's ranking (a subset of ``scorecard.md``'s, no load mark)."""


def _ranking_cell(
    data: ReportData,
    row: ScorecardRow,
    column: str,
    c: RankingCell,
    misconfigured: bool,
    t: dict[str, str],
) -> Cell:
    if column == "model" and misconfigured:
        return cell(c.text + misconfig_mark(t))
    if column == "red_flags":
        return cell(*links(data, list(row.red_flagged)))
    if column == "ko":
        return cell(c.text, sort=c.value)
    return num_cell(c.text, c.value) if column in NUMERIC_COLUMNS else cell(c.text)


def overview(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The verdict line, the misconfiguration warning where a row's answers mostly show a
    server misconfiguration (:func:`~._flags.misconfig_warning`), and the sortable ranking
    table (:func:`~touchstone_ray.scoring.render.ranking_rows`; red flags linked to their
    prompts; such a row's model marked)."""
    rows = [data.card_rows[k] for k in data.rows if k in data.card_rows]
    best = next((r for r in rows if r.ko_passed), None)
    if best is not None:
        verdict: tuple[Inline, ...] = (
            Strong(f"{t['recommend']}: "),
            Code(f"{best.model} / {best.variant}"),
            f" ({pct(best.quality_pct)} %, {level_text(best, data.lang)}, K.-o. "
            f"{t['passed']}, {t['mean']} {num(best.mean_answer_score)})",
        )
    else:
        verdict = (Strong(f"{t['verdict']}: "), t["no_pass"])
    columns = with_checks(REPORT_COLUMNS, rows)
    head, cells = ranking_rows(rows, data.lang, columns, load_mark=False)
    misconfigured = misconfigured_rows(data)
    body = tuple(
        tuple(
            _ranking_cell(data, r, col, c, (r.model, r.variant) in misconfigured, t)
            for col, c in zip(columns, row, strict=True)
        )
        for r, row in zip(rows, cells, strict=True)
    )
    return [
        Para(verdict),
        *misconfig_warning(data, t),
        Table(tuple(head), body, sortable=True, css_id="ranking"),
    ]


def master(data: ReportData, t: dict[str, str]) -> list[Block]:
    """All dimensions at a glance, then per dimension every judge's score, rationale and
    cited prompts (linked)."""
    dims = data.pack.dimensions
    head = (t["model"], t["variant"], *(f"{d.id} ×{d.weight}" for d in dims), t["quality"])
    body = []
    for key in data.rows:
        r = data.card_rows.get(key)
        scores = r.dim_scores if r else {}
        quality = r.quality_pct if r else None
        body.append(
            (
                cell(key[0]),
                cell(key[1]),
                *(num_cell(num(scores.get(d.id), 1), scores.get(d.id)) for d in dims),
                num_cell(pct(quality), quality),
            )
        )
    blocks: list[Block] = [Heading(2, t["master"]), Table(head, tuple(body), sortable=True)]
    for d in dims:
        blocks.append(Heading(3, f"{d.id} {d.name} (×{d.weight})"))
        if d.about:
            blocks.append(Para((d.about,), small=True))
        rows = []
        items: list[tuple[Inline, ...]] = []
        for key in data.rows:
            r = data.card_rows.get(key)
            reports = data.reports.get(key, {})
            per_judge = [
                reports[j].dim_scores.get(d.id) if j in reports else None for j in data.judges
            ]
            median = r.dim_scores.get(d.id) if r else None
            rows.append(
                (
                    cell(key[0]),
                    cell(key[1]),
                    num_cell(num(median, 1), median),
                    *(num_cell(num(s, 0), s) for s in per_judge),
                )
            )
            for judge in data.judges:
                rep = reports.get(judge)
                if rep is None:
                    continue
                score = rep.dim_scores.get(d.id)
                rationale = rep.dim_rationales.get(d.id, "")
                cited = list(rep.cited_prompts.get(d.id, []))
                items.append(
                    (
                        Strong(row_label(key)),
                        " · ",
                        Code(judge),
                        f" {NONE if score is None else score}: {rationale or NONE} · "
                        f"{t['cited']}: ",
                        *links(data, cited),
                    )
                )
        blocks.append(Table((t["model"], t["variant"], t["median"], *data.judges), tuple(rows)))
        if items:
            blocks.append(Bullets(tuple(items)))
    return blocks


def categories(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Mean answer score per category: the scorecard's section, else computed here."""
    section = data.card.categories if data.card else None
    names = (section.names if section else {}) or {c.id: c.name for c in data.pack.categories}
    by_row = {(r.model, r.variant): r.means for r in section.rows} if section else {}
    if not by_row:
        by_row = _category_means(data)
    cids = list(names)
    head = (t["model"], t["variant"], *(f"{c} {names[c]}" for c in cids))
    body = []
    grid: list[list[float | None]] = []
    for key in data.rows:
        means = by_row.get(key, {})
        grid.append([means.get(c) for c in cids])
        body.append(
            (cell(key[0]), cell(key[1]), *(num_cell(num(means.get(c)), means.get(c)) for c in cids))
        )
    svg = charts.heatmap_svg(
        [row_label(k) for k in data.rows],
        cids,
        grid,
        labels={"empty": t["none_found"]},
    )
    return [
        Heading(2, t["per_category"]),
        Table(head, tuple(body), sortable=True),
        Chart("heatmap", t["heatmap"], svg),
    ]


def _category_means(data: ReportData) -> dict[RowKey, dict[str, float | None]]:
    sums: dict[RowKey, dict[str, list[int]]] = {}
    for verdicts in data.verdicts.values():
        for v in verdicts:
            if v.score is not None:
                sums.setdefault((v.model, v.variant), {}).setdefault(v.category, []).append(v.score)
    return {k: {c: sum(s) / len(s) for c, s in cats.items()} for k, cats in sums.items()}


def ab(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Variant A/B per model (paired per prompt, B − A) with the forest plot."""
    items = data.card.variant_ab if data.card else []
    blocks: list[Block] = [Heading(2, t["variant_ab"])]
    if not items:
        return [*blocks, Para((t["no_ab"],))]
    head = (
        t["model"],
        "A",
        "B",
        t["diff"],
        t["ci"],
        t["sign_p"],
        t["pairs"],
        t["b_better"],
        t["a_better"],
        t["ties"],
        t["e2e_diff"],
        t["tok_diff"],
        t["chars"],
    )
    body = []
    warnings: list[tuple[Inline, ...]] = []
    forest = []
    for c in items:
        lo, hi = c.ci_low, c.ci_high
        ci = f"[{num(lo)}, {num(hi)}]" if lo is not None and hi is not None else NONE
        chars = f"{num(c.answer_chars_median_a, 0)} / {num(c.answer_chars_median_b, 0)}"
        body.append(
            (
                cell(c.model),
                cell(c.variant_a),
                cell(c.variant_b),
                num_cell(num(c.mean_diff), c.mean_diff),
                cell(ci),
                num_cell(num(c.sign_test_p, 3), c.sign_test_p),
                num_cell(str(c.n_pairs), c.n_pairs),
                num_cell(str(c.n_b_better), c.n_b_better),
                num_cell(str(c.n_a_better), c.n_a_better),
                num_cell(str(c.n_ties), c.n_ties),
                num_cell(num(c.e2e_median_diff_s, 3), c.e2e_median_diff_s),
                num_cell(num(c.completion_tokens_median_diff, 0), c.completion_tokens_median_diff),
                cell(chars),
            )
        )
        label = f"{c.model}: {c.variant_b} − {c.variant_a}"
        if c.warning:
            warnings.append((Strong(f"{t['note']}: "), Code(c.model), " ", c.warning))
        forest.append(charts.ForestItem(label, c.mean_diff, lo, hi, c.length_confound))
    svg = charts.forest_svg(forest, labels={"x": t["forest"], "empty": t["none_found"]})
    blocks += [Table(head, tuple(body)), Chart("forest", t["forest"], svg)]
    if warnings:
        blocks.append(Bullets(tuple(warnings)))
    return blocks


def _qs_svg(points: list[charts.QsPoint], t: dict[str, str], chart_id: str) -> str:
    return charts.quality_speed_svg(
        points,
        labels={
            "x": f"{t['tps']} (median)",
            "y": t["quality"],
            "pareto": t["pareto"],
            "ko": t["ko"],
            "empty": t["none_found"],
        },
        chart_id=chart_id,
    )


def quality_speed(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Quality % against decode tok/s with the Pareto front, then latency and resources.

    The chart's table lists only what the chart plots; TTFT and the other speed figures are in
    the latency table below it (the same values as the ranking: the scorecard's).

    Rows measured under load (``concurrency`` > 1) are kept off the single-stream chart and
    its Pareto front: they get their own chart, and the table says ``under load (c = N)``."""
    single: list[charts.QsPoint] = []
    loaded: list[charts.QsPoint] = []
    for key in data.rows:
        r = data.card_rows.get(key)
        s = data.stats.get(key)
        q = r.quality_pct if r else None
        tps = s.decode_tps_median if s else None
        if q is None or tps is None:
            continue
        delta = s.model_delta_mb if s else None
        point = charts.QsPoint(
            row_label(key),
            float(q),
            float(tps),
            None if delta is None else float(delta) / 1024,
            bool(r and r.ko_passed),
        )
        (loaded if under_load(data.concurrency(key[0])) else single).append(point)
    front = {p.label for p in charts.pareto_front(single)}
    head = (
        t["model"],
        t["variant"],
        t["quality"],
        t["ko"],
        t["tps"],
        t["delta_gb"],
        t["pareto"],
    )
    body = []
    for p in single + loaded:
        model, variant = p.label.split(" / ", 1)
        r = data.card_rows.get((model, variant))
        c = data.concurrency(model)
        body.append(
            (
                cell(model),
                cell(variant),
                num_cell(pct(p.quality_pct), p.quality_pct),
                cell(ko_text(r, t) if r else f"{t['failed']}: {NONE}"),
                num_cell(num(p.decode_tps, 1), p.decode_tps),
                num_cell(gb(None if p.delta_gb is None else p.delta_gb * 1024), p.delta_gb),
                cell(load_label(c, t) if under_load(c) else "★" if p.label in front else ""),
            )
        )
    blocks: list[Block] = [Heading(2, t["quality_speed"])]
    if single or not loaded:
        blocks.append(Chart("quality-speed", t["qs_chart"], _qs_svg(single, t, "quality-speed")))
    if loaded:
        blocks += [
            Para((t["load_note"],)),
            Chart(
                "quality-speed-load", t["qs_load_chart"], _qs_svg(loaded, t, "quality-speed-load")
            ),
        ]
    return [*blocks, Table(head, tuple(body), sortable=True), *speed(data, t, 3)]
