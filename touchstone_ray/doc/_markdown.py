"""``report.md``: Obsidian-native Markdown from a :class:`~touchstone_ray.doc.Document`.

- YAML frontmatter (Obsidian properties, Bases-friendly: flat keys, lists, ISO dates).
- Heading links as wikilinks ``[[#A1 · Title|A1]]`` (``\\|`` inside tables).
- Every long text is a collapsed callout (``> [!quote]- Antwort``) with **every** line
  prefixed by ``> `` so model output cannot end the callout. Inside it, the text is escaped
  so it stays text: Markdown punctuation gets a backslash, ``<``/``>`` become entities (no
  HTML, no nested quote or callout), backticks and tildes are escaped (no code fence opens),
  a line of only ``-``/``=`` cannot become a heading underline, leading spaces become
  no-break spaces (no indented code block), and ``|``, ``[[``, ``%%``, ``$``, ``#`` and ``^``
  lose their Obsidian meaning.
- Charts are image links to ``report-charts/<name>.svg`` (written beside the note).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import yaml

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
    heading_text,
)

__all__ = ["escape_text", "quote_lines", "render_markdown"]

_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_PUNCT = re.compile(r"([\\`*_\[\]$^#])")
_BLOCK_START = re.compile(r"^(\s*)([-+]\s|\d+[.)]\s)")
_SETEXT = re.compile(r"^\s*(-+|=+)\s*$")


def escape_text(text: str) -> str:
    """One line of plain text made inert in Obsidian Markdown (see the module docstring)."""
    text = _ENTITY.sub("&amp;", text)
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    text = _PUNCT.sub(r"\\\1", text)
    return re.sub(r"([~=%]){2,}", lambda m: "".join("\\" + c for c in m.group(0)), text)


def _inline(parts: Sequence[Inline]) -> str:
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(escape_text(" ".join(part.splitlines())))
        elif isinstance(part, Link):
            label = heading_text(part.text) or part.target
            out.append(f"[[#{heading_text(part.target)}|{label}]]")
        elif isinstance(part, Code):
            text = " ".join(part.text.splitlines())
            run = max((len(m) for m in re.findall(r"`+", text)), default=0)
            fence = "`" * (run + 1)
            pad = " " if text.startswith("`") or text.endswith("`") else ""
            out.append(f"{fence}{pad}{text}{pad}{fence}")
        elif isinstance(part, Strong):
            text = " ".join(part.text.splitlines())
            core = text.strip()
            lead = text[: len(text) - len(text.lstrip())]
            trail = text[len(text.rstrip()) :]
            out.append(f"{lead}**{escape_text(core)}**{trail}" if core else text)
    return "".join(out)


def _line_start(line: str) -> str:
    """Keep a paragraph line from starting a list."""
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), line, count=1)


def quote_lines(text: str) -> list[str]:
    """A literal text as callout body lines, each already prefixed with ``> ``."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n")
    out: list[str] = []
    for raw in lines:
        expanded = raw.expandtabs(4)
        stripped = expanded.lstrip(" ")
        indent = "\u00a0" * (len(expanded) - len(stripped))
        if not stripped.strip():
            out.append(">")
            continue
        line = escape_text(stripped).replace("|", "\\|")
        if _SETEXT.match(stripped) and not line.startswith("\\"):
            line = "\\" + line
        out.append(f"> {indent}{line}")
    return out


def _cell(c: Cell) -> str:
    return _inline(c.parts).replace("|", "\\|") or " "


def _table(table: Table) -> list[str]:
    head = "| " + " | ".join(escape_text(h).replace("|", "\\|") for h in table.head) + " |"
    rule = "| " + " | ".join("---" for _ in table.head) + " |"
    rows = ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return [head, rule, *rows]


def _callout(block: Callout, charts_dir: str) -> list[str]:
    fold = "-" if block.collapsed else ""
    lines = [f"> [!{block.kind}]{fold} {escape_text(block.title)}"]
    if block.text is not None:
        lines += quote_lines(block.text)
    for i, inner in enumerate(block.blocks):
        if i:
            lines.append(">")
        for line in _block(inner, charts_dir):
            lines.append(f"> {line}" if line else ">")
    return lines


def _block(block: Block, charts_dir: str) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + heading_text(block.text)]
    if isinstance(block, Para):
        return [_line_start(_inline(block.parts))]
    if isinstance(block, Bullets):
        return [
            f"{f'{i}.' if block.ordered else '-'} {_inline(item)}"
            for i, item in enumerate(block.items, start=1)
        ]
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Callout):
        return _callout(block, charts_dir)
    if isinstance(block, Chart):
        alt = escape_text(block.title)
        lines = [f"![{alt}]({charts_dir}/{block.name}.svg)"]
        if block.caption:
            lines += ["", _line_start(escape_text(block.caption))]
        return lines
    raise TypeError(f"unknown block {type(block).__name__}")


def render_markdown(doc: Document, *, charts_dir: str = "report-charts") -> str:
    """The document as Obsidian Markdown with YAML frontmatter (ends with one newline)."""
    front = yaml.safe_dump(
        doc.frontmatter, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
    )
    parts = [f"---\n{front}---"]
    parts += ["\n".join(_block(b, charts_dir)) for b in doc.blocks]
    return "\n\n".join(parts) + "\n"
