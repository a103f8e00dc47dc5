"""The judge card on the result page (issue 33 item 4): download both parts of the rating task
with their reply templates, paste or upload a filled reply, see the summary and
``judge_quality.md`` inline.

The downloads are built from the bundle on each request and streamed as attachments
(:data:`DOWNLOADS`), never written into the bundle: part A (``rating-task.html``, the
self-contained rating task of ``report --unjudged``) and its reply template, part B
(``critique-task.md`` of ``report --critique``) and its reply template. A reply (the form's
text, else its uploaded file) is ingested exactly as ``touchstone-ray ingest`` does
(:func:`~touchstone_ray.scoring.ingest.ingest_reply`, then
:func:`~touchstone_ray.report.critique.write_judge_quality`); a broken reply answers 400 with
its one-line error (the temporary file's path shown as ``reply``), never a 500, and stores
nothing. Routes (:class:`JudgeCard`): ``GET /judge-card/file/<name>/<bundle>``, ``POST
/judge-card/reply/<bundle>``. :func:`judge_card_html` is the card itself, which
:func:`touchstone_ray.ui.result.result_html` appends.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from touchstone_ray.doc import REPORT_CSS, HtmlWriter, render_html
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.lang import labels, ui_labels
from touchstone_ray.ui._page import HEADERS, bundle_lang, e, page
from touchstone_ray.ui.security import confined_bundle

__all__ = ["DOWNLOADS", "JudgeCard", "download_text", "ingest_text", "judge_card_html"]

DOWNLOADS = ("rating-task.html", "rating-reply.yaml", "critique-task.md", "critique-reply.yaml")
"""The files the card offers: part A, its reply template, part B, its reply template."""
MAX_REPLY_BYTES = 2 * 1024 * 1024
"""Largest reply the card takes (bytes)."""


def judge_card_html(rel: str, lang: str) -> str:
    """The card of the bundle at ``rel`` (its path below ``--runs``) in ``lang``."""
    u = ui_labels(lang)
    quoted = quote(rel)
    links = "".join(
        f'<li><a class="jc-download" download href="/judge-card/file/{name}/{quoted}">'
        f"{e(u['jc_' + name.split('.')[0].replace('-', '_')])}</a> "
        f'<code class="muted">{e(name)}</code></li>'
        for name in DOWNLOADS
    )
    return (
        f'<section id="judge-card"><h2>{e(u["jc_title"])}</h2>'
        f'<p class="muted">{e(u["jc_intro"])}</p><ul>{links}</ul>'
        f'<form id="jc-form" method="post" enctype="multipart/form-data" '
        f'action="/judge-card/reply/{quoted}">'
        f'<label>{e(u["jc_name"])} <input name="name" value="outside" required></label><br>'
        f'<label>{e(u["jc_paste"])}<br><textarea name="reply" rows="10" cols="80">'
        f"</textarea></label><br>"
        f'<label>{e(u["jc_upload"])} <input type="file" name="file" accept=".yaml,.yml,.txt">'
        f"</label><br>"
        f'<button type="submit">{e(u["jc_submit"])}</button></form></section>'
    )


def download_text(root: Path, name: str) -> str:
    """The text of the download ``name`` (:data:`DOWNLOADS`) for the bundle ``root``."""
    from touchstone_ray.report import build_document, load_report_data
    from touchstone_ray.report.critique import critique_files, rating_reply_template

    if name == "rating-task.html":
        data = load_report_data(root, judged=False)
        return render_html(build_document(data), toc_title=labels(data.lang)["toc"])
    if name == "rating-reply.yaml":
        return rating_reply_template(load_report_data(root, judged=False))
    return critique_files(root)[name]


def ingest_text(root: Path, text: str, name: str) -> tuple[list[str], str]:
    """Ingest the reply ``text`` as outside rater ``name`` into the bundle ``root``; returns
    the summary lines and the HTML of ``judge_quality.md`` (empty without a critique).
    Raises :class:`~touchstone_ray.errors.TouchstoneError` (one line, the temporary file
    named ``reply``) for a broken reply; nothing is stored then."""
    from touchstone_ray.report.critique import quality_document, write_judge_quality
    from touchstone_ray.scoring.ingest import ingest_reply

    with tempfile.TemporaryDirectory(prefix="touchstone-reply-") as tmp:
        path = Path(tmp) / "reply.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            result = ingest_reply(root, path, name)
        except TouchstoneError as exc:
            raise type(exc)(str(exc).replace(str(path), "reply")) from None
    lang = bundle_lang(root, "en")
    u = ui_labels(lang)
    lines = [u["jc_rows"].format(n=result["rows"], name=name)]
    if "critiqued" in result:
        lines.append(u["jc_critiqued"].format(n=result["critiqued"], name=name))
        write_judge_quality(root)
    doc = quality_document(root) if "critiqued" in result else None
    html = "".join(HtmlWriter().block(b) for b in doc.blocks) if doc else ""
    return lines, html


class JudgeCard:
    """The card's routes over the bundles below ``runs``."""

    def __init__(self, runs: Path, lang: str = "en") -> None:
        self.runs = runs.resolve()
        self.lang = lang

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/judge-card/file/{name}/{rel:.+}", self.download),
            web.post("/judge-card/reply/{rel:.+}", self.reply),
        ]

    def _root(self, request: web.Request) -> Path:
        root = confined_bundle(self.runs, request.match_info["rel"])
        if root is None:
            raise web.HTTPNotFound(text="no such bundle under --runs")
        return root

    async def download(self, request: web.Request) -> web.Response:
        root = self._root(request)
        name = request.match_info["name"]
        if name not in DOWNLOADS:
            raise web.HTTPNotFound(text="no such download")
        try:
            text = await asyncio.to_thread(download_text, root, name)
        except TouchstoneError as exc:
            return web.Response(status=400, text=f"error: {exc}", headers=HEADERS)
        kind = "text/html" if name.endswith(".html") else "text/plain"
        return web.Response(
            text=text,
            content_type=kind,
            headers={**HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
        )

    async def reply(self, request: web.Request) -> web.Response:
        root = self._root(request)
        lang = await asyncio.to_thread(bundle_lang, root, self.lang)
        u = ui_labels(lang)
        rel = root.relative_to(self.runs).as_posix()
        back = f'<p><a id="jc-back" href="/run/{e(quote(rel))}">{e(u["jc_back"])}</a></p>'
        try:
            form = await request.post()
            name = str(form.get("name") or "").strip()
            text = str(form.get("reply") or "")
            upload = form.get("file")
            if not text.strip() and isinstance(upload, web.FileField):
                data = upload.file.read(MAX_REPLY_BYTES + 1)
                if len(data) > MAX_REPLY_BYTES:
                    raise ValueError(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
                text = data.decode("utf-8")
            if not text.strip():
                raise ValueError(u["jc_empty"])
            lines, quality = await asyncio.to_thread(ingest_text, root, text, name)
        except (TouchstoneError, ValueError, OSError) as exc:
            body = (
                f"<h1>{e(u['jc_title'])} · {e(root.name)}</h1>"
                f'<p class="err" id="jc-error">{e(u["jc_errors"])}: {e(exc)}</p>{back}'
            )
            response = page(u["jc_title"], body, lang=lang)
            response.set_status(400)
            return response
        summary = "".join(f"<li>{e(line)}</li>" for line in lines)
        body = (
            f"<h1>{e(u['jc_title'])} · {e(root.name)}</h1>"
            f'<ul id="jc-summary">{summary}</ul>{back}'
            f'<style>{REPORT_CSS}</style><div class="report" id="jc-quality">{quality}</div>'
        )
        return page(u["jc_title"], body, lang=lang)
