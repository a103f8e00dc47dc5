"""The document model and its two writers: every report of the project is built as a
:class:`Document` of blocks and written by :func:`render_markdown` (Obsidian-native
``report.md``) and :func:`render_html` (one self-contained ``report.html``).

``report.md``/``report.html``, ``scorecard.md``, the perf report and the web UI's pages all
use it. Public modules: :mod:`.fmt` (number and time formatting), :mod:`.charts` (SVG charts;
matplotlib is imported only when a chart is drawn). Nothing here imports a stage package.
The names in ``__all__`` are the package's public surface (a test pins them).
"""

from __future__ import annotations

from touchstone_ray.doc._html import REPORT_CSS, REPORT_JS, HtmlWriter, render_html
from touchstone_ray.doc._markdown import escape_text, quote_lines, render_markdown
from touchstone_ray.doc._model import (
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
    anchor,
    cell,
    heading_text,
    num_cell,
)
from touchstone_ray.doc.fmt import NONE

__all__ = [
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
    "Strong",
    "Table",
    "anchor",
    "cell",
    "escape_text",
    "heading_text",
    "num_cell",
    "quote_lines",
    "render_html",
    "render_markdown",
]
