"""Assemble a report :class:`~touchstone_ray.doc.Document` from a loaded bundle and write its
files."""

from __future__ import annotations

from pathlib import Path

from touchstone_ray.bundle import Layout
from touchstone_ray.doc import Block, Chart, Document, Heading
from touchstone_ray.errors import UsageError
from touchstone_ray.lang import labels
from touchstone_ray.report import _answers, _judge_panel, _quality, _sections, _speed, unjudged
from touchstone_ray.report._data import ReportData, load_report_data
from touchstone_ray.storage import atomic_write_text

__all__ = ["FORMATS", "build_document", "write_report"]

FORMATS = ("md", "html")
"""Report formats ``--format`` accepts."""
CHARTS_DIR = "report-charts"
"""Folder beside ``report.md`` that holds its charts as SVG files."""
TASK_STEM, TASK_CHARTS_DIR = "rating-task", "rating-task-charts"
"""``report --unjudged`` writes ``rating-task.md`` / ``.html`` with charts in their own folder,
so the judged ``report.md`` and its charts stay as they are."""


def build_document(data: ReportData) -> Document:
    """The whole report of ``data``: judged when it carries a scorecard, else the rating
    task version."""
    t = labels(data.lang)
    title = f"{t['report'] if data.judged else t['task']} · {data.pack.title}"
    blocks: list[Block] = [Heading(1, title), *_sections.setup_blocks(data, t)]
    blocks.append(Heading(2, t["overview"] if data.judged else t["overview_plain"]))
    if data.judged:
        blocks += _quality.overview(data, t)
        blocks += _judge_panel.judge_warnings(data, t)
        blocks += _sections.method(data, t)
        blocks += _sections.hardware(data, t)
        blocks += _quality.master(data, t)
        blocks += _quality.categories(data, t)
        blocks += _quality.ab(data, t)
        blocks += _quality.quality_speed(data, t)
        blocks += _judge_panel.judges(data, t)
    else:
        blocks += unjudged.matrix_overview(data, t)
        blocks += unjudged.rating_task(data, t)
        blocks += _sections.hardware(data, t)
        blocks += [Heading(2, t["speed"]), *_speed.speed(data, t, 3)]
    blocks += _answers.answers(data, t)
    blocks += _sections.glossary(data, t)
    return Document(
        title=title, lang=data.lang, frontmatter=_sections.frontmatter(data), blocks=blocks
    )


def parse_formats(value: str | None) -> list[str]:
    """``md,html`` → ``["md", "html"]``; raises :class:`UsageError` for an unknown one."""
    wanted = [f.strip().lower() for f in (value or ",".join(FORMATS)).split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown or not wanted:
        raise UsageError(f"--format: unknown {unknown or value!r}; expected md, html or md,html")
    return list(dict.fromkeys(wanted))


def write_report(root: Path, formats: str | None = None, *, unjudged: bool = False) -> list[Path]:
    """Write the report of the bundle ``root``; returns the written paths.

    ``report.md`` (with ``report-charts/*.svg``) and ``report.html`` (SPEC §6), judged; with
    ``unjudged``, the rating task as ``rating-task.md`` (charts in ``rating-task-charts/``) and
    ``rating-task.html``, leaving any judged report alone. Raises
    :class:`~touchstone_ray.errors.BundleError` for a missing or invalid bundle and, when
    judged, a bundle without ``scorecard.json``.
    """
    from touchstone_ray.doc import render_html, render_markdown

    wanted = parse_formats(formats)
    root = Path(root)
    layout = Layout(root)
    data = load_report_data(root, judged=not unjudged)
    doc = build_document(data)
    stem, charts_dir = (TASK_STEM, TASK_CHARTS_DIR) if unjudged else ("report", CHARTS_DIR)
    written: list[Path] = []
    if "md" in wanted:
        charts = layout.charts_dir(charts_dir)
        charts.mkdir(exist_ok=True)
        for block in doc.blocks:
            if isinstance(block, Chart):
                atomic_write_text(charts / f"{block.name}.svg", block.svg)
        path = layout.report("md", stem)
        atomic_write_text(path, render_markdown(doc, charts_dir=charts_dir))
        written.append(path)
    if "html" in wanted:
        path = layout.report("html", stem)
        atomic_write_text(path, render_html(doc, toc_title=labels(data.lang)["toc"]))
        written.append(path)
    return written
