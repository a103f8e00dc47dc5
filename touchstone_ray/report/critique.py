"""Part B of the rating task and the judge-quality document (SPEC §6, ``report --critique``,
``ingest``).

- :func:`critique_document` / :func:`reply_template`: per local judge and (model, variant),
  each dimension's holistic score, template, rationale and the evidence it cited (the judge's
  verdicts on the cited prompts: score, red flag), then each scored answer's verdict (score,
  red flag, rationale). The answer text is never repeated here: part A (``rating-task.md``)
  has it under the prompt id. The reply template is YAML with one entry per item and the four
  rubric questions left empty (:mod:`touchstone_ray.scoring.critique`).
- :func:`write_critique`: ``critique-task.md`` (and ``.html``) and ``critique-reply.yaml`` in the
  bundle; :func:`critique_files` gives the same texts without writing (the web UI streams them).
- :func:`quality_document` / :func:`write_judge_quality`: ``judge_quality.md`` from every
  outside rater's ingested critique: per judge the four rates with the Wilson 95 % interval,
  mean |Δ| against the rater's own scores, outliers, and quality % local / outside / Δ per row.

Every text is in the pack's language (:func:`touchstone_ray.lang.labels`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from touchstone_ray.bundle import Bundle, JudgeFiles, Layout
from touchstone_ray.doc import (
    Block,
    Bullets,
    Code,
    Document,
    Heading,
    Inline,
    Para,
    Table,
    cell,
    num_cell,
    render_html,
    render_markdown,
)
from touchstone_ray.doc.fmt import NONE
from touchstone_ray.lang import labels
from touchstone_ray.pack import Pack
from touchstone_ray.report._data import ReportData
from touchstone_ray.scoring.critique import (
    RUBRIC,
    CritiqueItem,
    critique_items,
    judge_quality,
    local_judges,
    task_digest,
)
from touchstone_ray.storage import atomic_write_text

__all__ = [
    "CRITIQUE_STEM",
    "JUDGE_QUALITY_FILE",
    "REPLY_TEMPLATE_FILE",
    "critique_document",
    "critique_files",
    "quality_document",
    "rating_reply_template",
    "reply_template",
    "write_critique",
    "write_judge_quality",
]

CRITIQUE_STEM = "critique-task"
"""``report --critique`` writes ``critique-task.md`` / ``.html``."""
REPLY_TEMPLATE_FILE = "critique-reply.yaml"
"""The empty reply template beside part B."""
JUDGE_QUALITY_FILE = "judge_quality.md"
"""The judge-quality document ``ingest`` writes into the bundle."""


def _flag(t: dict[str, str], value: bool | None) -> str:
    return NONE if value is None else t["yes"] if value else t["no"]


def _hits(item: CritiqueItem) -> str:
    """`` (<red flags hit>)`` of a verdict item, or nothing."""
    return f" ({'; '.join(item.red_flags_hit)})" if item.red_flags_hit else ""


def _evidence(item: CritiqueItem, verdicts: Sequence[CritiqueItem], t: dict[str, str]) -> str:
    """The cited prompt ids with the judge's verdicts on them in that row: ``A1 (4, red flag:
    no)``; a cited id without a verdict stands alone."""
    parts = []
    for pid in item.cited:
        own = [
            v
            for v in verdicts
            if v.judge == item.judge
            and (v.model, v.variant) == (item.model, item.variant)
            and v.prompt_id == pid
        ]
        shown = "; ".join(f"{v.score}, {t['red_flag']} {_flag(t, v.red_flag)}" for v in own)
        parts.append(f"{pid} ({shown})" if shown else pid)
    return ", ".join(parts) or NONE


def critique_document(pack: Pack, items: Sequence[CritiqueItem], bundle_name: str) -> Document:
    """Part B for ``items`` (:func:`~touchstone_ray.scoring.critique.critique_items`)."""
    t = labels(pack.language)
    title = f"{t['critique']} · {pack.title}"
    rubric: tuple[tuple[Inline, ...], ...] = tuple((t[f"rubric_{q}"],) for q in RUBRIC)
    blocks: list[Block] = [
        Heading(1, title),
        Para((t["critique_intro"],)),
        Para((Code(f"task: {task_digest(items)}"), " · ", Code(bundle_name))),
        Heading(2, t["critique_rubric"]),
        Bullets(rubric),
    ]
    if not items:
        blocks.append(Para((t["critique_none"],)))
    holistic = [i for i in items if i.kind == "holistic"]
    verdicts = [i for i in items if i.kind == "verdict"]
    dims = {d.id: d.name for d in pack.dimensions}
    if holistic:
        blocks.append(Heading(2, t["critique_holistic"]))
    for group in _groups(holistic):
        first = group[0]
        blocks.append(Heading(3, f"{first.judge} · {first.model} · {first.variant}"))
        rows = tuple(
            (
                cell(Code(i.id)),
                cell(Code(str(i.dimension)), f" {dims.get(str(i.dimension), '')}"),
                num_cell(NONE if i.score is None else str(i.score), i.score),
                cell(str(i.template)),
                cell(i.rationale or t["no_rationale"]),
                cell(_evidence(i, verdicts, t)),
            )
            for i in group
        )
        head = (
            t["item"],
            t["dimension"],
            t["fill_score"],
            t["holistic_template"],
            t["rationale"],
            t["evidence_cited"],
        )
        blocks.append(Table(head, rows))
    if verdicts:
        blocks.append(Heading(2, t["critique_answers"]))
    for group in _groups(verdicts):
        first = group[0]
        blocks.append(Heading(3, f"{first.judge} · {first.model} · {first.variant}"))
        answer_rows = tuple(
            (
                cell(Code(i.id)),
                cell(Code(str(i.key))),
                num_cell(NONE if i.score is None else str(i.score), i.score),
                cell(_flag(t, i.red_flag), _hits(i)),
                cell(i.rationale or t["no_rationale"]),
            )
            for i in group
        )
        answer_head = (t["item"], t["key"], t["fill_score"], t["red_flag"], t["rationale"])
        blocks.append(Table(answer_head, answer_rows))
    blocks += [Heading(2, t["critique_reply"]), Para((t["critique_reply_intro"],))]
    return Document(
        title=title,
        lang=pack.language,
        frontmatter={"type": "touchstone-critique-task", "bundle": bundle_name},
        blocks=blocks,
    )


def _groups(items: Sequence[CritiqueItem]) -> list[list[CritiqueItem]]:
    """``items`` in runs of the same (judge, model, variant), order kept."""
    out: list[list[CritiqueItem]] = []
    for item in items:
        if out and (out[-1][0].judge, out[-1][0].model, out[-1][0].variant) == (
            item.judge,
            item.model,
            item.variant,
        ):
            out[-1].append(item)
        else:
            out.append([item])
    return out


def reply_template(items: Sequence[CritiqueItem]) -> str:
    """The empty reply (YAML): ``rater``, ``task`` and one entry per item with the four
    rubric questions left empty; a comment per entry says what it is."""
    lines = [
        "# Part B: rate each rationale. 1 = yes, 0 = no, empty = does not apply / not rated.",
        "# names_improvement stays empty at score 5; catches_safety stays empty when the answer",
        "# has no safety-relevant problem. Entries you delete are not rated.",
        'rater: ""',
        f"task: {json.dumps(task_digest(items))}",
        "critique:" if items else "critique: []",
    ]
    for i in items:
        what = f"{i.dimension}" if i.kind == "holistic" else f"{i.prompt_id} #{i.key}"
        note = f"{i.judge} · {i.model} · {i.variant} · {what} · score {i.score}"
        lines.append(f"  - id: {i.id}  # {note}".replace("\n", " "))
        lines += [f"    {q}:" for q in RUBRIC]
    return "\n".join(lines) + "\n"


def rating_reply_template(data: ReportData) -> str:
    """The empty reply of part A (YAML, :mod:`touchstone_ray.scoring.ingest`): one entry per
    (model, variant) of ``data`` with every dimension's score left empty."""
    lines = [
        "# Part A: your own scores, 1..5 per dimension; cite prompt ids in the rationale.",
        'rater: ""',
        "reports:" if data.rows else "reports: []",
    ]
    for model, variant in data.rows:
        lines += [f"  - model: {json.dumps(model)}", f"    variant: {json.dumps(variant)}"]
        lines.append("    scores:")
        for d in data.pack.dimensions:
            lines.append(f'      {d.id}: {{score: , rationale: "", cited_prompts: []}}')
        lines.append("    red_flagged: []")
    return "\n".join(lines) + "\n"


def critique_files(root: Path) -> dict[str, str]:
    """File name → text of part B (``critique-task.md``, ``critique-task.html``) and its reply
    template for the bundle at ``root``, nothing written."""
    bundle = Bundle.open(Path(root))
    pack = bundle.pack()
    items = critique_items(bundle.root, pack)
    doc = critique_document(pack, items, bundle.root.name)
    t = labels(pack.language)
    return {
        f"{CRITIQUE_STEM}.md": render_markdown(doc),
        f"{CRITIQUE_STEM}.html": render_html(doc, toc_title=t["toc"]),
        REPLY_TEMPLATE_FILE: reply_template(items),
    }


def write_critique(root: Path, formats: Sequence[str] = ("md", "html")) -> list[Path]:
    """Write part B (in ``formats``) and its reply template into the bundle at ``root``;
    returns the paths written."""
    files = critique_files(root)
    written = []
    for name, text in files.items():
        if name.startswith(CRITIQUE_STEM) and name.rsplit(".", 1)[1] not in formats:
            continue
        path = Path(root) / name
        atomic_write_text(path, text)
        written.append(path)
    return written


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return NONE
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def _share(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}"


def quality_document(root: Path) -> Document | None:
    """``judge_quality.md`` of the bundle at ``root`` from every outside rater with a stored
    critique; ``None`` when there is none."""
    from touchstone_ray.scoring.ingest import outside_raters, stored_critique

    bundle = Bundle.open(Path(root))
    pack = bundle.pack()
    t = labels(pack.language)
    layout = Layout(bundle.root)
    local = {j: JudgeFiles(layout, j).reports() for j in local_judges(layout)}
    blocks: list[Block] = []
    title = f"{t['judge_quality']} · {pack.title}"
    for name, reports in outside_raters(bundle.root).items():
        stored = stored_critique(bundle.root, name)
        if stored is None:
            continue
        items = [_item(raw) for raw in stored.get("items", [])]
        rated = {raw["id"]: raw["rates"] for raw in stored.get("items", [])}
        judges = {j: local[j] for j in sorted({i.judge for i in items}) if j in local}
        figures = judge_quality(pack, items, rated, judges, reports)
        rater = f"{name}" + (f" ({stored['rater']})" if stored.get("rater") else "")
        blocks += [Heading(2, rater), Para((t["judge_quality_intro"].format(rater=name),))]
        body = []
        for q in figures:
            for question in RUBRIC:
                r = q.rates[question]
                ci = NONE if r.ci is None else f"{r.ci[0]:.2f}–{r.ci[1]:.2f}"
                body.append(
                    (
                        cell(Code(q.judge)),
                        cell(", ".join(q.templates) or NONE),
                        cell(Code(question)),
                        num_cell(_share(r.rate), r.rate),
                        cell(ci),
                        num_cell(f"{r.k}/{r.n}", r.n),
                    )
                )
        head = (
            t["judge"],
            t["holistic_template"],
            t["rubric"],
            t["rate"],
            t["wilson_ci"],
            t["n_rated"],
        )
        blocks.append(Table(head, tuple(body)))
        blocks.append(Heading(3, t["jq_scores"]))
        if not reports:
            blocks.append(Para((t["jq_no_scores"],)))
            continue
        summary = tuple(
            (
                cell(Code(q.judge)),
                num_cell(_share(q.mean_abs_delta), q.mean_abs_delta),
                num_cell(str(q.n_pairs), q.n_pairs),
                cell(
                    "; ".join(f"{m} · {v} · {d}: {a} → {b}" for m, v, d, a, b in q.outliers) or NONE
                ),
            )
            for q in figures
        )
        blocks.append(Table((t["judge"], t["jq_delta"], "n", t["outliers"]), summary))
        blocks.append(Heading(3, t["jq_rows"]))
        rows = []
        for q in figures:
            for model, variant, mine, theirs in q.rows:
                delta = theirs - mine if mine is not None and theirs is not None else None
                rows.append(
                    (
                        cell(Code(q.judge)),
                        cell(model),
                        cell(variant),
                        num_cell(_pct(mine), mine),
                        num_cell(_pct(theirs), theirs),
                        num_cell(_pct(delta, signed=True), delta),
                    )
                )
        head = (
            t["judge"],
            t["model"],
            t["variant"],
            t["quality_local"],
            t["quality_outside"],
            t["quality_delta"],
        )
        blocks.append(Table(head, tuple(rows)))
    if not blocks:
        return None
    return Document(
        title=title,
        lang=pack.language,
        frontmatter={"type": "touchstone-judge-quality", "bundle": bundle.root.name},
        blocks=[Heading(1, title), *blocks],
    )


def _item(raw: dict[str, Any]) -> CritiqueItem:
    """A stored item (JSON: lists for tuples, its ``rates`` beside) as a CritiqueItem."""
    fields = {k: v for k, v in raw.items() if k != "rates"}
    for k in ("cited", "red_flags_hit"):
        fields[k] = tuple(fields.get(k) or ())
    return CritiqueItem(**fields)


def write_judge_quality(root: Path) -> Path | None:
    """Write ``judge_quality.md`` into the bundle at ``root`` (:func:`quality_document`);
    returns its path, or ``None`` (nothing written) without a stored critique."""
    doc = quality_document(root)
    if doc is None:
        return None
    path = Path(root) / JUDGE_QUALITY_FILE
    atomic_write_text(path, render_markdown(doc))
    return path
