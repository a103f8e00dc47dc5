"""A tiny document model: the report's sections as blocks that both writers render.

The section builders produce a list of :data:`Block`; :mod:`._markdown` and :mod:`._html`
turn it into ``report.md`` and ``report.html``. Every string in a block is *text*, never
markup: each writer escapes it for its format. Model output (prompts, answers, reasoning,
system prompts) only ever travels as :class:`Callout` bodies or plain text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Block",
    "Bullets",
    "Callout",
    "Cell",
    "Chart",
    "Code",
    "Heading",
    "Inline",
    "Link",
    "Para",
    "Strong",
    "Table",
    "anchor",
    "heading_text",
]


@dataclass(frozen=True)
class Link:
    """A link to the heading whose (sanitised) text is ``target``."""

    text: str
    target: str


@dataclass(frozen=True)
class Code:
    """Inline code (ids, field names, paths)."""

    text: str


@dataclass(frozen=True)
class Strong:
    """Bold text."""

    text: str


Inline = str | Link | Code | Strong
"""A piece of a line: plain ``str`` is text."""


@dataclass(frozen=True)
class Cell:
    """A table cell: inline parts and an optional numeric sort key (HTML sorting)."""

    parts: tuple[Inline, ...]
    sort: float | None = None
    right: bool = False
    """Right-aligned (figures)."""


@dataclass(frozen=True)
class Heading:
    """A section heading (level 1..5); links address it by :func:`heading_text` of ``text``."""

    level: int
    text: str


@dataclass(frozen=True)
class Para:
    """A paragraph of inline parts."""

    parts: tuple[Inline, ...]
    small: bool = False
    """Rendered smaller in HTML (figures under an answer)."""


@dataclass(frozen=True)
class Bullets:
    """A bullet list; each item is a line of inline parts."""

    items: tuple[tuple[Inline, ...], ...]
    ordered: bool = False


@dataclass(frozen=True)
class Table:
    """A table; ``sortable`` tables get click-to-sort headers in HTML."""

    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    sortable: bool = False
    css_id: str | None = None
    """An HTML id (tests and scripts find the ranking table by it)."""


CalloutKind = Literal["quote", "note", "info", "warning", "failure", "tip", "todo"]


@dataclass(frozen=True)
class Callout:
    """An Obsidian callout / HTML ``<details>``: a literal ``text`` body (model output,
    shown verbatim) or nested ``blocks``."""

    kind: CalloutKind
    title: str
    text: str | None = None
    blocks: tuple[Block, ...] = ()
    collapsed: bool = True


@dataclass(frozen=True)
class Chart:
    """A chart as SVG text; ``name`` is its file stem (``report-charts/<name>.svg``)."""

    name: str
    title: str
    svg: str
    caption: str = ""


Block = Heading | Para | Bullets | Table | Callout | Chart


@dataclass
class Document:
    """A report: frontmatter facts (YAML for Obsidian), title and blocks."""

    title: str
    lang: str
    frontmatter: dict[str, object] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)


_UNSAFE_HEADING = re.compile(r"[#^\[\]|\\:%*_`<>$~=]+")


def heading_text(text: str) -> str:
    """``text`` without characters that break Obsidian heading links or need escaping
    (``# ^ [ ] | \\ : % * _ ` < > $ ~ =``), whitespace collapsed."""
    return " ".join(_UNSAFE_HEADING.sub(" ", text).split())


def anchor(text: str) -> str:
    """The HTML id of the heading ``text``: ``h-`` + lowercase ASCII slug."""
    plain = unicodedata.normalize("NFKD", heading_text(text))
    plain = plain.replace("ß", "ss")
    slug = re.sub(r"[^a-z0-9]+", "-", plain.encode("ascii", "ignore").decode().lower())
    return "h-" + (slug.strip("-") or "x")


def cell(*parts: Inline, sort: float | None = None) -> Cell:
    """A :class:`Cell` of ``parts``."""
    return Cell(tuple(parts), sort)


def num_cell(text: str, value: float | None) -> Cell:
    """A cell showing ``text`` that sorts by ``value`` (``None`` sorts last)."""
    return Cell((text,), value, right=True)
