"""The rating task of an unjudged report: instructions, the formula, both K.-o. checks, the
reply format of SPEC §10 and a fill-in table per model × variant, for a person or an outside
AI. Nothing here reads a judgement; it works on a bundle that has none."""

from __future__ import annotations

import json

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
from touchstone_ray.doc.fmt import mb, num
from touchstone_ray.report._data import ReportData
from touchstone_ray.report._flags import misconfig_mark, misconfig_warning, misconfigured_rows
from touchstone_ray.report._sections import method, row_label

__all__ = ["matrix_overview", "rating_task"]


def matrix_overview(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The model × variant matrix with cell counts and speed, without any judgement; a row
    whose answers mostly show a misconfigured server is marked, with the warning above the
    table (:func:`~touchstone_ray.report._flags.misconfig_warning`)."""
    misconfigured = misconfigured_rows(data)
    head = (
        t["model"],
        t["variant"],
        t["host"],
        t["engine"],
        t["cells"],
        t["failed_cells"],
        t["ttft_p50"],
        t["tps"],
        t["peak_ram"],
        t["delta"],
    )
    body = []
    for key in data.rows:
        s = data.stats[key]
        body.append(
            (
                cell(key[0] + (misconfig_mark(t) if key in misconfigured else "")),
                cell(key[1]),
                cell(", ".join(s.hosts)),
                cell(", ".join(s.engines)),
                num_cell(str(s.n_cells), s.n_cells),
                num_cell(str(s.n_failed), s.n_failed),
                num_cell(num(s.ttft_p50_s, 3), s.ttft_p50_s),
                num_cell(num(s.decode_tps_median, 1), s.decode_tps_median),
                num_cell(mb(s.peak_ram_mb), s.peak_ram_mb),
                num_cell(mb(s.model_delta_mb), s.model_delta_mb),
            )
        )
    return [
        *misconfig_warning(data, t),
        Table(head, tuple(body), sortable=True, css_id="ranking"),
    ]


_ANSWER_FORMAT = (
    '{"key": "<model|variant|prompt_id|repeat>", "score": 1-5, "red_flag": false, '
    '"rationale": "…", "red_flags_hit": [], "green_flags_hit": []}'
)


def _holistic_format(data: ReportData) -> str:
    dims = ", ".join(
        f'"{d.id}": {{"score": 1-5, "rationale": "…", "cited_prompts": ["…"]}}'
        for d in data.pack.dimensions[:2]
    )
    more = ", …" if len(data.pack.dimensions) > 2 else ""
    return f'{{"model": "…", "variant": "…", {dims}{more}}}'


def _reply_format(data: ReportData) -> str:
    """The reply ``ingest`` reads (:mod:`touchstone_ray.scoring.ingest`), as one line of flow
    YAML for the bundle's first row."""
    model, variant = data.rows[0] if data.rows else ("…", "…")
    first = data.pack.prompts()[0].id
    dims = ", ".join(
        f'{d.id}: {{score: 4, rationale: "… [{first}]", cited_prompts: [{first}]}}'
        for d in data.pack.dimensions
    )
    row = f"model: {json.dumps(model)}, variant: {json.dumps(variant)}, scores: {{{dims}}}"
    return f'{{rater: "…", reports: [{{{row}, red_flagged: []}}]}}'


def rating_task(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Instructions; the method (formula, dimensions, both K.-o. checks with this pack's
    values, scale, rules); the reply format; a fill-in table per model × variant."""
    pack = data.pack
    ko = pack.ko_rule
    steps: tuple[tuple[Inline, ...], ...] = tuple((t[f"task_step{i}"],) for i in range(1, 6))
    blocks: list[Block] = [
        Heading(2, t["task"]),
        Para((t["task_intro"],)),
        Heading(3, t["task_steps"]),
        Bullets(steps, ordered=True),
        *method(data, t, level=2)[1:],
        Heading(3, t["task_format"]),
        Para((t["task_format_answer"], " ", Code(_ANSWER_FORMAT))),
        Para((t["task_format_holistic"], " ", Code(_holistic_format(data)))),
        Para((t["task_format_reply"], " ", Code(_reply_format(data)))),
        Heading(3, t["fill_in"]),
    ]
    for key in data.rows:
        blocks.append(Heading(4, row_label(key)))
        rows = tuple(
            (
                cell(Strong(f"{d.id} {d.name}")),
                num_cell(f"×{d.weight}", d.weight),
                cell(""),
                cell(""),
                cell(""),
            )
            for d in pack.dimensions
        )
        blocks.append(
            Table((t["dimension"], t["weight"], t["fill_score"], t["rationale"], t["cited"]), rows)
        )
        checks = (
            t["fill_flagged"],
            t["fill_ko_red"],
            t["fill_ko_floor"].format(dim=ko.dimension, threshold=ko.threshold),
            t["fill_quality"],
        )
        blocks.append(Table(checks, ((cell(""), cell(""), cell(""), cell("")),)))
    return blocks
