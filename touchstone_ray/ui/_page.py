"""The page shell every UI page shares: CSP and security headers, the nav, the stylesheet,
the page's language, and column heads with their glossary tooltip.

Texts go through :func:`e` (``html.escape``); scripts are served from ``/static/`` by the
app (``script-src 'self'``), never inline, and nothing loads from outside. A page speaks one
language: its nav and labels come from :func:`touchstone_ray.lang.ui_labels` of the language
it is given (the pack's for a pack's bundle, else ``ui --lang``).
"""

from __future__ import annotations

import html
from pathlib import Path

from aiohttp import web

from touchstone_ray.errors import TouchstoneError
from touchstone_ray.lang import header_tip, ui_labels

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'self'"
)
"""As strict as ``report.html``'s; scripts only from this server, fetch/SSE only to it. The
header adds ``frame-ancestors 'none'`` (browsers ignore it in a ``<meta>``)."""

HEADERS = {
    "Content-Security-Policy": CSP + "; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    # not no-referrer: under it Chromium sends ``Origin: null`` with a form post
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

CSS = """
:root{--fg:#1d2430;--muted:#5b6575;--line:#d9dee7;--soft:#f4f6fa;--accent:#2f5fb3}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg)}
header.top{display:flex;gap:1.2rem;align-items:center;padding:.6rem 1.2rem;background:#1d2430}
header.top a{color:#fff;text-decoration:none;font-weight:600}
header.top .brand{margin-right:1rem}
main.page{max-width:1500px;margin:0 auto;padding:1rem 1.4rem}
h1{font-size:1.5rem;margin:.4rem 0 .8rem}
h2{font-size:1.2rem;margin:1.6rem 0 .6rem;border-bottom:2px solid var(--line)}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid var(--line);padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:var(--soft)}
a{color:var(--accent)}
code,pre,textarea{font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace}
code{background:var(--soft);padding:.05rem .3rem;border-radius:3px;overflow-wrap:anywhere}
pre{background:var(--soft);padding:.5rem;white-space:pre-wrap}
.badge{display:inline-block;padding:.05rem .45rem;border-radius:9px;font-size:12px;
font-weight:600;background:#e4e8ef}
.s-running{background:#d8e8ff}.s-crashed{background:#ffd9d9}.s-done{background:#def5df}
.s-failed{background:#ffd9d9}.s-judged{background:#c9efcb}
.ko-pass{background:#def5df}.ko-fail{background:#ffd9d9}
.muted{color:var(--muted)}
.err{color:#a11;font-weight:600}
.ok{color:#176b22;font-weight:600}
form.filters{display:flex;gap:.8rem;align-items:end;margin:.4rem 0 1rem;flex-wrap:wrap}
label{font-size:12.5px;color:var(--muted)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:1rem}
.card{border:1px solid var(--line);border-radius:6px;padding:.6rem .8rem}
.bar{height:12px;background:var(--soft);border-radius:6px;overflow:hidden;margin:.3rem 0}
.bar>span{display:block;height:100%;background:#3f7de0}
svg.spark{display:block}
textarea{width:100%;min-height:18rem}
"""


def e(text: object) -> str:
    """HTML-escaped ``str(text)``; ``None`` shows as an em dash."""
    return "—" if text is None else html.escape(str(text), quote=True)


def th(lang: str, text: str, extra: dict[str, str] | None = None) -> str:
    """A column head ``text`` with the glossary's definition and unit as its tooltip when it
    names a figure (:func:`touchstone_ray.lang.header_tip`; ``extra`` as there)."""
    tip = header_tip(lang, text, extra)
    title = f' title="{e(tip)}"' if tip else ""
    return f"<th{title}>{e(text)}</th>"


def page(
    title: str,
    body: str,
    *,
    scripts: tuple[str, ...] = (),
    head: str = "",
    lang: str = "en",
) -> web.Response:
    """A whole HTML page in ``lang`` (``<html lang>`` and the nav) with ``body`` (already
    escaped HTML, in the same language) and ``scripts`` (names under ``/static/``), sent
    with :data:`HEADERS`."""
    u = ui_labels(lang)
    tags = "".join(f'<script src="/static/{e(s)}"></script>' for s in scripts)
    nav = "".join(
        f'<a href="{href}">{e(u[key])}</a>'
        for href, key in (
            ("/", "nav_runs"),
            ("/compare", "nav_compare"),
            ("/judges", "nav_judges"),
            ("/packs", "nav_packs"),
            ("/jobs", "nav_jobs"),
            ("/queue", "nav_queue"),
        )
    )
    text = (
        f'<!DOCTYPE html>\n<html lang="{e(lang)}"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · touchstone-ray</title><style>{CSS}</style>{head}</head><body>"
        f'<header class="top"><a class="brand" href="/">touchstone-ray</a>{nav}</header>'
        f'<main class="page">{body}</main>{tags}</body></html>\n'
    )
    return web.Response(text=text, content_type="text/html", headers=HEADERS)


PERF_LANG = "en"
"""The language of a perf bundle's pages: its report's (``perf.report`` writes English)."""


def bundle_lang(root: Path, default: str) -> str:
    """The language of the pages that show the bundle ``root``: an eval or tools bundle's
    frozen pack's ``language`` (SPEC §3, §3b), a perf bundle's :data:`PERF_LANG`, else ``default``
    (``ui --lang``: a bundle that cannot be read)."""
    from touchstone_ray.bundle import Bundle

    try:
        bundle = Bundle(root)
        kind = bundle.kind()
        if kind == "tools":
            from touchstone_ray.toolpack import load_tools_pack

            return load_tools_pack(bundle.layout.pack).language
        return bundle.pack().language if kind == "eval" else PERF_LANG
    except TouchstoneError:
        return default
