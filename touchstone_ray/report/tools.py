"""``report --bundle <tools bundle>``: ``summary.json``, ``report.md`` and ``report.html`` of a
tools run (SPEC §7c, issue 27 item 11), in the pack's language.

Built as a :class:`~touchstone_ray.doc.Document` from the figures of
:mod:`touchstone_ray.scoring.tools`: the setup (pack, fingerprints, models, hosts, cells), the
per-model table (cells passed with Wilson's 95 % interval, checks ok / failed / not measured,
length cut-offs, empty arguments, schema errors, transport errors, 4xx, missing cells, tokens,
run time, turns, decode speed), the pass-rate-vs-speed chart, the per-item matrix (✓ / ✗ /
k/n / – per model), the per-item-and-model table (checks ok, finish reasons, calls per turn,
failed and unmeasured checks), every cell with its turns and checks (collapsed), and the
definitions of every column (:func:`tools_head_tips` gives them to the web UI as tooltips).

Model output (answers, reasoning, call arguments) travels only as callout text; a world reply
longer than :data:`WORLD_REPLY_CHARS` is cut (the whole text is the fixture in ``pack.yaml``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from touchstone_ray.bundle import Layout
from touchstone_ray.doc import (
    Block,
    Bullets,
    Callout,
    Cell,
    Chart,
    Code,
    Document,
    Heading,
    Inline,
    Para,
    Strong,
    Table,
    cell,
    num_cell,
)
from touchstone_ray.doc.charts import PassPoint, pass_speed_svg
from touchstone_ray.doc.fmt import NONE, num, utc
from touchstone_ray.lang import labels, tools_labels
from touchstone_ray.scoring.tools import (
    ModelFigures,
    ToolsBundleData,
    ToolsSummary,
    load_tools_bundle,
    pass_mark,
    tools_summary,
)
from touchstone_ray.storage import atomic_write_json, atomic_write_text
from touchstone_ray.tool_records import ToolsRecord, ToolTurn

__all__ = [
    "CHARTS_DIR",
    "ITEM_DETAIL_KEYS",
    "MODEL_KEYS",
    "WORLD_REPLY_CHARS",
    "build_tools_document",
    "cell_blocks",
    "model_cells",
    "tools_document",
    "tools_head_tips",
    "write_tools_report",
]

CHARTS_DIR = "report-charts"
"""Folder beside ``report.md`` that holds its charts as SVG files."""
WORLD_REPLY_CHARS = 2000
"""A world reply is shown up to this many characters."""
MODEL_KEYS = (
    "model",
    "host",
    "passed",
    "pass_pct",
    "ci",
    "checks",
    "cutoffs",
    "empty_args",
    "schema_errors",
    "transport",
    "http_4xx",
    "missing",
    "tokens_median",
    "tokens_total",
    "reasoning_median",
    "reasoning_total",
    "run_s",
    "wall_s",
    "turns",
    "decode_tps",
)
"""The per-model table's columns (keys of :func:`touchstone_ray.lang.tools_labels`)."""
ITEM_DETAIL_KEYS = (
    "item",
    "model",
    "mark",
    "checks_ok",
    "finish",
    "calls_turn",
    "failed_checks",
    "not_measured",
)
"""The per-item-and-model table's columns."""


def tools_head_tips(lang: str) -> dict[str, str]:
    """Column head text in ``lang`` → the definition of its figure (the ``d_<key>`` entries
    of :func:`~touchstone_ray.lang.tools_labels`)."""
    t = tools_labels(lang)
    return {t[k]: t[f"d_{k}"] for k in t if f"d_{k}" in t}


def _pct(share: float | None) -> str:
    return NONE if share is None else num(share * 100, 1)


def _int(value: int | None) -> Cell:
    return num_cell(NONE if value is None else str(value), value)


def _fig(value: float | None, digits: int = 1) -> Cell:
    return num_cell(num(value, digits), value)


def model_cells(m: ModelFigures) -> tuple[Cell, ...]:
    """The per-model table's row of ``m`` (in :data:`MODEL_KEYS` order)."""
    ci = (
        f"[{_pct(m.pass_ci_low)}, {_pct(m.pass_ci_high)}]"
        if m.pass_ci_low is not None and m.pass_ci_high is not None
        else NONE
    )
    return (
        cell(m.model),
        cell(", ".join(m.hosts) or NONE),
        num_cell(f"{m.passed}/{m.scored}", m.pass_share),
        num_cell(_pct(m.pass_share), m.pass_share),
        cell(ci),
        num_cell(f"{m.checks_ok}/{m.checks_failed}/{m.checks_not_measured}", m.checks_ok),
        _int(m.length_cutoffs),
        _int(m.empty_args),
        _int(m.schema_errors),
        _int(m.transport_errors),
        _int(m.http_4xx),
        _int(m.cells_missing),
        _fig(m.completion_tokens_median),
        _int(m.completion_tokens_total),
        _fig(m.reasoning_tokens_median),
        _int(m.reasoning_tokens_total),
        _fig(m.run_s_total, 2),
        _fig(m.wall_s, 2),
        _fig(m.turns_median),
        _fig(m.decode_tps_median),
    )


def _setup(data: ToolsBundleData, s: ToolsSummary, t: dict[str, str]) -> list[Block]:
    m = data.manifest
    planned = sum(f.cells_planned for f in s.models)
    done = sum(f.cells for f in s.models)
    lines: list[tuple[Inline, ...]] = [
        (Strong(f"{t['pack']}: "), f"{s.pack_title} ", Code(f"{s.pack_id} v{s.pack_version}")),
        (Strong(f"{t['checks_fingerprint']}: "), Code(str(s.checks_fingerprint or NONE)[:12])),
        (Strong(f"{t['pack_fingerprint']}: "), Code(str(s.pack_fingerprint or NONE)[:12])),
        (Strong(f"{t['status']}: "), str(s.status or NONE)),
        (Strong(f"{t['models']}: "), ", ".join(f.model for f in s.models) or NONE),
        (Strong(f"{t['hosts']}: "), ", ".join(sorted(m.hosts)) or NONE),
        (Strong(f"{t['items']}: "), str(s.n_items)),
        (Strong(f"{t['cells']}: "), f"{done}/{planned}"),
        (Strong(f"{t['started']}: "), utc(m.started_at)),
        (Strong(f"{t['finished']}: "), utc(m.finished_at)),
    ]
    blocks: list[Block] = [Heading(2, t["setup"]), Bullets(tuple(lines))]
    if s.simulated:
        blocks.append(
            Callout("warning", t["simulated_title"], text=t["simulated"], collapsed=False)
        )
    if s.status == "running":
        note = t["running_note"].format(done=done, planned=planned)
        blocks.append(Callout("info", t["status"], text=note, collapsed=False))
    if s.malformed_lines:
        blocks.append(Para((t["malformed"].format(n=s.malformed_lines),), small=True))
    return blocks


def _chart(s: ToolsSummary, t: dict[str, str]) -> Chart:
    points = [
        PassPoint(
            label=p.model,
            pass_pct=p.pass_share * 100,
            ci_low_pct=None if p.pass_ci_low is None else p.pass_ci_low * 100,
            ci_high_pct=None if p.pass_ci_high is None else p.pass_ci_high * 100,
            run_s=p.run_s_median,
            decode_tps=p.decode_tps_median,
        )
        for p in s.pass_speed
        if p.pass_share is not None
    ]
    svg = pass_speed_svg(
        points,
        labels={
            "x_run": t["x_run"],
            "x_decode": t["x_decode"],
            "y": t["y_pass"],
            "empty": t["chart_empty"],
        },
    )
    return Chart("pass-speed", t["pass_speed"], svg, caption=t["chart_caption"])


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in values.items()) or NONE


def _calls(per_cell: Sequence[Sequence[int]]) -> str:
    return " ".join("[" + ", ".join(str(n) for n in turns) + "]" for turns in per_cell) or NONE


def _items(s: ToolsSummary, t: dict[str, str]) -> list[Block]:
    models = [f.model for f in s.models]
    matrix = tuple(
        (
            cell(Code(row.item_id)),
            cell(row.title),
            *(cell(row.models[m].mark if m in row.models else NONE, sort=None) for m in models),
        )
        for row in s.items
    )
    detail = []
    for row in s.items:
        for m in models:
            c = row.models.get(m)
            if c is None:
                continue
            detail.append(
                (
                    cell(Code(row.item_id)),
                    cell(m),
                    cell(c.mark),
                    num_cell(f"{c.checks_ok}/{c.checks_measured}", c.checks_ok),
                    cell(_counts(c.finish_reasons)),
                    cell(_calls(c.calls_per_turn)),
                    cell(", ".join(c.failed_checks) or NONE),
                    cell(", ".join(c.not_measured) or NONE),
                )
            )
    return [
        Heading(2, t["per_item"]),
        Table((t["item"], t["item_title"], *models), matrix, sortable=True, css_id="tools-items"),
        Heading(3, t["item_detail"]),
        Table(
            tuple(t[k] for k in ITEM_DETAIL_KEYS),
            tuple(detail),
            sortable=True,
            css_id="tools-item-detail",
        ),
    ]


def _cut(text: str, t: dict[str, str], limit: int = WORLD_REPLY_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n" + t["chars_cut"].format(n=len(text))


def _arguments(arguments: Any, valid: bool, t: dict[str, str]) -> str:
    if isinstance(arguments, str) and not valid:
        return f"({t['not_json']}) {arguments}"
    return json.dumps(arguments, ensure_ascii=False, indent=1, sort_keys=False)


def _turn_blocks(n: int, turn: ToolTurn, t: dict[str, str]) -> list[Block]:
    tokens = NONE if turn.completion_tokens is None else str(turn.completion_tokens)
    if turn.reasoning_tokens:
        tokens += " " + t["of_reasoning"].format(n=turn.reasoning_tokens)
    line = t["turn_figures"].format(
        finish=turn.finish_reason or NONE,
        tokens=tokens,
        ttft=num(turn.ttft_s, 3),
        e2e=num(turn.e2e_s, 3),
    )
    blocks: list[Block] = [Para((Strong(t["turn"].format(n=n)), " · " + line), small=True)]
    if turn.content.strip():
        blocks.append(Callout("quote", t["answer"], text=turn.content))
    if turn.reasoning_text.strip():
        blocks.append(Callout("note", t["reasoning"], text=turn.reasoning_text))
    if turn.tool_calls:
        text = "\n\n".join(
            f"{c.name} {_arguments(c.arguments, c.arguments_valid_json, t)}"
            for c in turn.tool_calls
        )
        title = f"{t['calls']}: " + ", ".join(c.name for c in turn.tool_calls)
        blocks.append(Callout("tip", title, text=text))
    if turn.world_replies:
        text = "\n\n".join(
            f"{w.name} ({w.source}): {_cut(w.content, t)}" for w in turn.world_replies
        )
        blocks.append(Callout("info", t["world"], text=text))
    return blocks


def cell_blocks(r: ToolsRecord, t: dict[str, str]) -> list[Block]:
    """One cell as a collapsed callout: its turns (figures, answer, reasoning, calls with
    their arguments, the world's replies) and its checks, or its error (labels ``t``, of
    :func:`~touchstone_ray.lang.tools_labels`)."""
    mark = pass_mark(1 if r.passed is not None else 0, 1 if r.passed else 0)
    title = f"{r.item_id} · {r.model} #{r.repeat} {mark}"
    inner: list[Block] = []
    if not r.ok:
        inner.append(Callout("failure", t["error"], text=f"{r.error_kind or NONE}: {r.error}"))
    for n, turn in enumerate(r.turns, start=1):
        inner += _turn_blocks(n, turn, t)
    if r.checks:
        rows = tuple(
            (
                cell(Code(c.id)),
                cell(c.type),
                cell(t["ok"] if c.ok else t["failed"] if c.ok is False else t["not_measured"]),
                cell(c.detail or NONE),
            )
            for c in r.checks
        )
        head = (t["check"], t["type"], t["outcome"], t["detail"])
        inner.append(Table(head, rows))
    failed = not r.ok or r.passed is False
    return [Callout("failure" if failed else "info", title, blocks=tuple(inner))]


def _method(t: dict[str, str]) -> list[Block]:
    keys = [k for k in (*MODEL_KEYS, *ITEM_DETAIL_KEYS) if f"d_{k}" in t]
    items = tuple((Strong(f"{t[k]}: "), t[f"d_{k}"]) for k in dict.fromkeys(keys))
    return [Heading(2, t["method"]), Bullets(items)]


def build_tools_document(
    data: ToolsBundleData, summary: ToolsSummary, *, cells: bool = True
) -> Document:
    """The tools report of ``data`` with its figures ``summary`` (module docstring); without
    ``cells`` the per-cell section is left out (the web UI shows its own)."""
    t = tools_labels(summary.language)
    title = f"{t['title']} · {summary.pack_title}"
    blocks: list[Block] = [Heading(1, title), *_setup(data, summary, t)]
    blocks.append(Heading(2, t["per_model"]))
    blocks.append(
        Table(
            tuple(t[k] for k in MODEL_KEYS),
            tuple(model_cells(m) for m in summary.models),
            sortable=True,
            css_id="tools-models",
        )
    )
    blocks += [Heading(2, t["pass_speed"]), _chart(summary, t)]
    blocks += _items(summary, t)
    if cells:
        blocks.append(Heading(2, t["cells_section"]))
        for item in data.items:
            mine = [r for r in data.records if r.item_id == item.id]
            if mine:
                blocks.append(Heading(3, f"{item.id} · {item.title}" if item.title else item.id))
                for r in mine:
                    blocks += cell_blocks(r, t)
    blocks += _method(t)
    front: dict[str, object] = {
        "kind": "tools",
        "pack": summary.pack_id,
        "pack_version": summary.pack_version,
        "checks_fingerprint": summary.checks_fingerprint,
        "simulated": summary.simulated,
        "models": [m.model for m in summary.models],
        "pass_pct": {
            m.model: None if m.pass_share is None else round(m.pass_share * 100, 1)
            for m in summary.models
        },
    }
    return Document(title=title, lang=summary.language, frontmatter=front, blocks=blocks)


def tools_document(root: Path, *, cells: bool = True) -> Document:
    """The report document of the tools bundle ``root`` (figures computed from its cells).
    Raises :class:`~touchstone_ray.errors.BundleError` for a bundle that is not a readable
    tools bundle."""
    data = load_tools_bundle(Path(root))
    return build_tools_document(data, tools_summary(data), cells=cells)


def write_tools_report(root: Path, formats: Collection[str] = ("md", "html")) -> list[Path]:
    """Write ``summary.json``, ``report.md`` (charts in ``report-charts/``) and/or
    ``report.html`` into the tools bundle ``root``; returns the written paths, the summary
    first. Raises :class:`~touchstone_ray.errors.BundleError` like :func:`tools_document`.
    Called by the ``tools`` command when a run ends and by ``report --bundle``."""
    from touchstone_ray.doc import render_html, render_markdown

    layout = Layout(Path(root))
    data = load_tools_bundle(layout.root)
    summary = tools_summary(data)
    written = [layout.summary]
    atomic_write_json(layout.summary, summary.model_dump(mode="json"))
    doc = build_tools_document(data, summary)
    if "md" in formats:
        charts = layout.charts_dir(CHARTS_DIR)
        charts.mkdir(exist_ok=True)
        for block in doc.blocks:
            if isinstance(block, Chart):
                atomic_write_text(charts / f"{block.name}.svg", block.svg)
        written.append(layout.report("md"))
        atomic_write_text(written[-1], render_markdown(doc, charts_dir=CHARTS_DIR))
    if "html" in formats:
        written.append(layout.report("html"))
        toc = labels(summary.language)["toc"]
        atomic_write_text(written[-1], render_html(doc, toc_title=toc))
    return written
