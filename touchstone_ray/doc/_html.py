"""``report.html``: one self-contained file from a :class:`~touchstone_ray.doc.Document`.

It loads nothing from outside and works offline: all CSS inline, charts as inline SVG, a
small inline script that sorts tables, and a Content-Security-Policy that forbids every
external load (``default-src 'none'``). Every text, model output included, goes through
:func:`html.escape`; long texts are ``<details>`` blocks with ``white-space: pre-wrap``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

from touchstone_ray.doc._model import (
    Block,
    Bullets,
    Callout,
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
    heading_text,
)

__all__ = ["REPORT_CSS", "REPORT_JS", "HtmlWriter", "render_html"]

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)

REPORT_CSS = """
:root{--fg:#1d2430;--muted:#5b6575;--line:#d9dee7;--bg:#fff;--soft:#f4f6fa;--accent:#2f5fb3}
*{box-sizing:border-box}
body{margin:0;font:14.5px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
.layout{display:grid;grid-template-columns:230px minmax(0,1fr);gap:1.6rem;max-width:1500px;
margin:0 auto;padding:1.5rem}
nav.toc{position:sticky;top:1rem;align-self:start;max-height:calc(100vh - 2rem);overflow:auto;
font-size:13px;border-right:1px solid var(--line);padding-right:1rem}
nav.toc ul{list-style:none;padding-left:.8rem;margin:.2rem 0}
nav.toc>ul{padding-left:0}
nav.toc a{color:var(--fg);text-decoration:none}
nav.toc a:hover{color:var(--accent);text-decoration:underline}
main{min-width:0}
h1{font-size:1.7rem;margin:.2rem 0 1rem}
h2{font-size:1.35rem;margin:2.2rem 0 .8rem;padding-bottom:.3rem;border-bottom:2px solid var(--line)}
h3{font-size:1.1rem;margin:1.6rem 0 .6rem}
h4{font-size:1rem;margin:1.4rem 0 .5rem;padding:.3rem .5rem;background:var(--soft);
border-radius:4px}
a{color:var(--accent)}
p.small{font-size:12.5px;color:var(--muted);margin:.2rem 0 .5rem}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);
padding:.05rem .3rem;border-radius:3px;overflow-wrap:anywhere}
.scroll{overflow-x:auto;margin:.6rem 0 1rem}
table{border-collapse:collapse;font-size:12.5px;min-width:40%}
th,td{border:1px solid var(--line);padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;min-width:3.5rem}
td{white-space:nowrap}
td.w{white-space:normal;min-width:16rem}
td:empty{height:1.8rem;min-width:7rem}
td.r{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th::after{content:" \\2195";color:var(--muted);font-size:11px}
table.sortable th[aria-sort=ascending]::after{content:" \\2191";color:var(--fg)}
table.sortable th[aria-sort=descending]::after{content:" \\2193";color:var(--fg)}
tbody tr:nth-child(even){background:#fafbfd}
ul,ol{padding-left:1.4rem}
li{margin:.15rem 0}
.callout{border-left:4px solid var(--line);background:var(--soft);border-radius:4px;
margin:.5rem 0 .8rem;padding:.35rem .8rem}
.callout>summary,.callout>.title{font-weight:600;cursor:pointer;font-size:13.5px}
.callout>.title{cursor:default}
.callout .text{white-space:pre-wrap;overflow-wrap:anywhere;font-size:13.5px;margin:.4rem 0 .2rem;
max-height:32rem;overflow:auto}
.callout-warning{border-color:#e0a100;background:#fff8e1}
.callout-failure{border-color:#d13c3c;background:#fdecec}
.callout-note{border-color:#7c5cc4}
.callout-quote{border-color:#8a94a6}
figure{margin:1rem 0 1.4rem}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:13px;color:var(--muted);margin-bottom:.3rem;font-weight:600}
@media (max-width:900px){.layout{grid-template-columns:1fr}nav.toc{position:static;
max-height:none;border-right:0}}
@media print{nav.toc{display:none}.layout{display:block}.callout .text{max-height:none}}
"""
"""The report's stylesheet (inlined in ``report.html``; the web UI serves it too)."""

REPORT_JS = """
(function(){
function key(td){var s=td.getAttribute('data-sort');
return s===null?null:(s===''?null:parseFloat(s));}
document.querySelectorAll('table.sortable').forEach(function(t){
var heads=t.tHead.rows[0].cells;
Array.prototype.forEach.call(heads,function(th,i){th.tabIndex=0;
function sort(){var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
var asc=th.getAttribute('aria-sort')!=='ascending';
Array.prototype.forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',asc?'ascending':'descending');
rows.sort(function(a,b){var x=a.cells[i],y=b.cells[i],p=key(x),q=key(y);
if(x.hasAttribute('data-sort')&&y.hasAttribute('data-sort')){
if(p===null&&q===null)return 0;if(p===null)return 1;if(q===null)return -1;
return asc?p-q:q-p;}
var r=x.textContent.localeCompare(y.textContent,undefined,{numeric:true});
return asc?r:-r;});
rows.forEach(function(r){body.appendChild(r);});}
th.addEventListener('click',sort);
th.addEventListener('keydown',function(e){
if(e.key==='Enter'||e.key===' '){e.preventDefault();sort();}});
});});
})();
"""
"""The report's script: click-to-sort tables (inlined in ``report.html``, served by the UI)."""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


class HtmlWriter:
    """Renders blocks of a :class:`~touchstone_ray.doc.Document` to HTML, numbering heading ids
    so they stay unique on the page and collecting the table of contents (``toc``: level, text,
    id). ``tips`` gives a column head's tooltip (its ``title``) from the head's text, ``None``
    for none; without it heads carry no tooltip."""

    def __init__(self, tips: Callable[[str], str | None] | None = None) -> None:
        self.ids: dict[str, int] = {}
        self.toc: list[tuple[int, str, str]] = []
        self.tips = tips

    def th(self, text: str) -> str:
        """A column head with its tooltip (see the class docstring)."""
        tip = self.tips(text) if self.tips else None
        title = f' title="{_e(tip)}"' if tip else ""
        return f'<th scope="col"{title}>{_e(text)}</th>'

    def heading_id(self, text: str) -> str:
        base = anchor(text)
        n = self.ids.get(base, 0) + 1
        self.ids[base] = n
        return base if n == 1 else f"{base}-{n}"

    def inline(self, parts: Sequence[Inline]) -> str:
        out: list[str] = []
        for part in parts:
            if isinstance(part, str):
                out.append(_e(part))
            elif isinstance(part, Link):
                out.append(f'<a href="#{anchor(part.target)}">{_e(part.text)}</a>')
            elif isinstance(part, Code):
                out.append(f"<code>{_e(part.text)}</code>")
            elif isinstance(part, Strong):
                out.append(f"<strong>{_e(part.text)}</strong>")
        return "".join(out)

    def table(self, t: Table) -> str:
        attrs = ' class="sortable"' if t.sortable else ""
        if t.css_id:
            attrs += f' id="{_e(t.css_id)}"'
        head = "".join(self.th(h) for h in t.head)
        numeric = [any(row[i].sort is not None for row in t.rows) for i in range(len(t.head))]
        rows = []
        for row in t.rows:
            cells = []
            for i, c in enumerate(row):
                sort = ""
                if c.sort is not None:
                    sort = f' data-sort="{float(c.sort)!r}"'
                elif i < len(numeric) and numeric[i]:
                    sort = ' data-sort=""'
                text = self.inline(c.parts)
                cls = " r" if c.right else ""
                cls += " w" if len(html.unescape(re.sub("<[^>]+>", "", text))) > 40 else ""
                cls = f' class="{cls.strip()}"' if cls else ""
                cells.append(f"<td{cls}{sort}>{text}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return (
            f'<div class="scroll"><table{attrs}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>"
        )

    def callout(self, c: Callout) -> str:
        body = ""
        if c.text is not None:
            body += f'<div class="text">{_e(c.text)}</div>'
        body += "".join(self.block(b) for b in c.blocks)
        cls = f"callout callout-{c.kind}"
        if c.collapsed:
            return f'<details class="{cls}"><summary>{_e(c.title)}</summary>{body}</details>'
        return f'<div class="{cls}"><div class="title">{_e(c.title)}</div>{body}</div>'

    def block(self, b: Block) -> str:
        if isinstance(b, Heading):
            text = heading_text(b.text)
            hid = self.heading_id(b.text)
            if 2 <= b.level <= 3:
                self.toc.append((b.level, hid, text))
            return f'<h{b.level} id="{hid}">{_e(text)}</h{b.level}>'
        if isinstance(b, Para):
            cls = ' class="small"' if b.small else ""
            return f"<p{cls}>{self.inline(b.parts)}</p>"
        if isinstance(b, Bullets):
            tag = "ol" if b.ordered else "ul"
            items = "".join(f"<li>{self.inline(item)}</li>" for item in b.items)
            return f"<{tag}>{items}</{tag}>"
        if isinstance(b, Table):
            return self.table(b)
        if isinstance(b, Callout):
            return self.callout(b)
        if isinstance(b, Chart):
            svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", b.svg)
            caption = f"<figcaption>{_e(b.title)}</figcaption>"
            note = f'<p class="small">{_e(b.caption)}</p>' if b.caption else ""
            return f'<figure id="chart-{_e(b.name)}">{caption}{svg}{note}</figure>'
        raise TypeError(f"unknown block {type(b).__name__}")

    def toc_html(self, title: str) -> str:
        items: list[tuple[str, str, list[tuple[str, str]]]] = []
        for level, hid, text in self.toc:
            if level == 2 or not items:
                items.append((hid, text, []))
            else:
                items[-1][2].append((hid, text))
        parts = []
        for hid, text, children in items:
            sub = "".join(f'<li><a href="#{h}">{_e(x)}</a></li>' for h, x in children)
            parts.append(
                f'<li><a href="#{hid}">{_e(text)}</a>'
                + (f"<ul>{sub}</ul>" if sub else "")
                + "</li>"
            )
        return f"<strong>{_e(title)}</strong><ul>{''.join(parts)}</ul>"


def render_html(doc: Document, *, toc_title: str | None = None) -> str:
    """The document as one self-contained HTML page."""
    w = HtmlWriter()
    body = "\n".join(w.block(b) for b in doc.blocks)
    title = toc_title or ("Inhalt" if doc.lang == "de" else "Contents")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{_e(doc.lang)}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="touchstone-ray">\n'
        f"<title>{_e(doc.title)}</title>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n"
        f'<div class="layout">\n<nav class="toc">{w.toc_html(title)}</nav>\n'
        f"<main>\n{body}\n</main>\n</div>\n<script>{REPORT_JS}</script>\n</body>\n</html>\n"
    )
