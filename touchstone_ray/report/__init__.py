"""Reports of a bundle (SPEC §6, §10): ``report.md`` (Obsidian), ``report.html`` (one
self-contained file with charts), the unjudged rating task, ``compare`` across bundles and
flat ``export`` tables.

The names below are the package's public surface (a test pins them); the ``_x`` modules are
its implementation. The document model (:class:`Document` and its blocks) and its two
writers (:func:`render_markdown`, :func:`render_html`) serve every report of the project:
``report.md``/``report.html``, ``scorecard.md`` and the perf report; :class:`HtmlWriter`,
:data:`REPORT_CSS`, :data:`REPORT_JS` and :func:`answer_blocks` let the web UI show the same
blocks. Public modules: :mod:`.charts` (SVG charts), :mod:`.compare`, :mod:`.export`,
:mod:`.unjudged`.

matplotlib is imported only when a chart is drawn, pyarrow only by a parquet export.
"""

from __future__ import annotations

from touchstone_ray.report._answers import answer_blocks
from touchstone_ray.report._build import FORMATS, build_document, parse_formats, write_report
from touchstone_ray.report._data import ReportData, RowStats, load_report_data, row_stats
from touchstone_ray.report._doc import (
    Block,
    Bullets,
    Callout,
    Cell,
    Chart,
    Code,
    Document,
    Heading,
    Inline,
    Link,
    Para,
    Strong,
    Table,
    cell,
    num_cell,
)
from touchstone_ray.report._fmt import NONE
from touchstone_ray.report._html import REPORT_CSS, REPORT_JS, HtmlWriter, render_html
from touchstone_ray.report._markdown import escape_text, render_markdown

__all__ = [
    "FORMATS",
    "NONE",
    "REPORT_CSS",
    "REPORT_JS",
    "Block",
    "Bullets",
    "Callout",
    "Cell",
    "Chart",
    "Code",
    "Document",
    "Heading",
    "HtmlWriter",
    "Inline",
    "Link",
    "Para",
    "ReportData",
    "RowStats",
    "Strong",
    "Table",
    "answer_blocks",
    "build_document",
    "cell",
    "escape_text",
    "load_report_data",
    "num_cell",
    "parse_formats",
    "render_html",
    "render_markdown",
    "row_stats",
    "write_report",
]
