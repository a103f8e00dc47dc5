"""The routes and HTML of bundles as files (:mod:`.files`): downloads, import, trash, undo.

Routes (``<bundle>`` is the bundle's path under ``--runs``, as everywhere in the UI):

- ``GET /zip/<bundle>``: the bundle as ``<folder>.zip`` (attachment).
- ``GET /file/<bundle>?name=<n>``: one of :func:`.files.downloads` (attachment); any other
  name is a 404.
- ``POST /bundles/import`` (``multipart/form-data``, field ``file``): unpacked as
  ``--runs/imported/<folder>``, then 303 to its result page. A refused zip (or no file)
  answers the import page with the one line and status 200, as the pack validator does, so a
  browser shows it as a page and logs no failed load; an upload over the size limit is a 413
  (read from ``Content-Length`` before any byte of the body, else counted while it streams to
  a hidden file under ``--runs``); a ``--runs`` that cannot be written a 500.
- ``POST /trash/<bundle>``: moved to the trash, then 303 to ``/trash?moved=<id>`` whose page
  offers the undo; a running bundle is a 409.
- ``GET /trash``: the trash's entries, each with its restore button.
- ``POST /restore/<id>``: moved back, then 303 to its result page; an id not in the trash or
  an origin taken again is a 409.

The guards of :mod:`.security` (Host, token, Origin on every POST) cover these routes as all.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote

from aiohttp import BodyPartReader, web

from touchstone_ray.bundle import Bundle
from touchstone_ray.errors import BundleError, TouchstoneError
from touchstone_ray.lang import ui_labels
from touchstone_ray.ui._page import HEADERS, e, page, th
from touchstone_ray.ui.files import (
    CHUNK_BYTES,
    IMPORT_MAX_BYTES,
    Trashed,
    download_path,
    downloads,
    import_bundle,
    restore,
    trash,
    trashed,
    zip_bundle,
)
from touchstone_ray.ui.security import confined_bundle

__all__ = ["BundleFiles", "files_bar", "import_form", "trash_html"]

BAR_STYLE = "display:flex;gap:.8rem;align-items:center;flex-wrap:wrap;margin:.4rem 0"
"""The files bar on one line (the page's stylesheet is shared; an inline style is allowed)."""


def _href(rel: str) -> str:
    """``rel`` as a URL path (each segment percent-encoded), ready for an attribute."""
    return e(quote(rel))


def _running(root: Path) -> bool:
    try:
        return Bundle(root).run_state() == "running"
    except BundleError:
        return False


def files_bar(root: Path, runs: Path, lang: str = "en") -> str:
    """The result page's line of the bundle ``root`` (under ``runs``) in ``lang``: the zip,
    each of :func:`.files.downloads`, and the move-to-trash button (not while its run is
    going: the trash refuses it then)."""
    u = ui_labels(lang)
    href = _href(root.relative_to(runs).as_posix())
    links = [f'<a id="download-zip" href="/zip/{href}" download>{e(u["zip"])}</a>']
    links += [
        f'<a class="download" href="/file/{href}?name={e(quote(n, safe=""))}" download>{e(n)}</a>'
        for n in downloads(root)
    ]
    button = (
        f'<span class="muted" id="trash-later">{e(u["trash_later"])}</span>'
        if _running(root)
        else f'<form method="post" action="/trash/{href}">'
        f'<button id="trash-bundle" type="submit">{e(u["trash_button"])}</button></form>'
    )
    return f'<div id="bundle-files" style="{BAR_STYLE}">{" · ".join(links)}{button}</div>'


def import_form(lang: str = "en") -> str:
    """The overview's import form and its link to the trash, in ``lang``."""
    u = ui_labels(lang)
    return (
        '<form id="import" class="filters" method="post" action="/bundles/import" '
        f'enctype="multipart/form-data"><label>{e(u["import_label"])} '
        '<input type="file" name="file" accept=".zip,application/zip"></label>'
        f'<button id="import-submit" type="submit">{e(u["import_button"])}</button>'
        f'<a id="trash-link" href="/trash">{e(u["trash_link"])}</a></form>'
    )


def trash_html(
    items: list[Trashed], moved: str | None, error: str | None = None, lang: str = "en"
) -> str:
    """The trash page in ``lang``: the line of a refused action, the undo of the move just
    made (when ``moved`` is an entry), each entry with where it came from and its restore
    button."""
    u = ui_labels(lang)
    parts = [f"<h1>{e(u['trash_title'])}</h1>"]
    if error:
        parts.append(f'<p class="err" id="trash-error">{e(error)}</p>')
    entry = next((t for t in items if t.id == moved), None)
    if entry is not None:
        parts.append(
            f'<form id="moved" class="filters" method="post" '
            f'action="/restore/{e(quote(entry.id, safe=""))}">'
            f"<span>{e(u['moved'].format(origin=entry.origin))}</span>"
            f'<button id="undo" type="submit">{e(u["undo"])}</button></form>'
        )
    if not items:
        return "".join(parts) + f'<p class="muted" id="trash-empty">{e(u["trash_empty"])}</p>'
    rows = "".join(
        f'<tr data-item="{e(t.id)}"><td>{e(t.origin)}</td>'
        f"<td>{e(time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t.at)))}</td>"
        f'<td><form method="post" action="/restore/{e(quote(t.id, safe=""))}">'
        f'<button type="submit">{e(u["restore"])}</button></form></td></tr>'
        for t in items
    )
    head = f"<tr>{th(lang, u['h_bundle'])}{th(lang, u['h_moved'])}<th></th></tr>"
    return "".join(parts) + f'<table id="trash"><thead>{head}</thead><tbody>{rows}</tbody></table>'


def _attachment(name: str) -> dict[str, str]:
    """``Content-Disposition`` of a download called ``name`` (RFC 6266: an ASCII fallback
    and the UTF-8 name)."""
    fallback = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    value = f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
    return {**HEADERS, "Content-Disposition": value}


def _refused(status: int, title: str, body: str, lang: str) -> web.Response:
    response = page(title, body, lang=lang)
    response.set_status(status)
    return response


def _import_refused(status: int, line: str, lang: str) -> web.Response:
    title = ui_labels(lang)["import_title"]
    body = f'<h1>{e(title)}</h1><p class="err" id="import-error">{e(line)}</p>'
    return _refused(status, title, body + import_form(lang), lang)


@dataclass(frozen=True)
class BundleFiles:
    """The handlers of the module's routes over the runs folder ``runs`` (resolved);
    ``max_upload_bytes`` caps an import's upload and its unpacked size (bytes); ``lang`` is
    the language of the import and trash pages (``ui --lang``)."""

    runs: Path
    max_upload_bytes: int = IMPORT_MAX_BYTES
    lang: str = "en"

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the app."""
        return [
            web.get("/zip/{rel:.+}", self.zip),
            web.get("/file/{rel:.+}", self.file),
            web.post("/bundles/import", self.import_),
            web.post("/trash/{rel:.+}", self.trash),
            web.get("/trash", self.trash_page),
            web.post("/restore/{item}", self.restore),
        ]

    def _root(self, request: web.Request) -> Path:
        root = confined_bundle(self.runs, request.match_info["rel"])
        if root is None:
            raise web.HTTPNotFound(text="no such bundle under --runs")
        return root

    async def zip(self, request: web.Request) -> web.StreamResponse:
        """The bundle as a zip, built in an anonymous temporary file and streamed."""
        root = self._root(request)
        with tempfile.TemporaryFile() as spool:
            await asyncio.to_thread(zip_bundle, root, spool)
            size = spool.seek(0, os.SEEK_END)
            spool.seek(0)
            response = web.StreamResponse(headers=_attachment(f"{root.name}.zip"))
            response.content_type = "application/zip"
            response.content_length = size
            await response.prepare(request)
            while chunk := await asyncio.to_thread(spool.read, CHUNK_BYTES):
                await response.write(chunk)
            await response.write_eof()
        return response

    async def file(self, request: web.Request) -> web.StreamResponse:
        """One single file of the bundle (see :func:`.files.download_path`)."""
        root = self._root(request)
        path = await asyncio.to_thread(download_path, root, request.query.get("name", ""))
        if path is None:
            raise web.HTTPNotFound(text="no such file of the bundle to download")
        return web.FileResponse(path, headers=_attachment(path.name))

    async def _save(self, part: BodyPartReader, out: IO[bytes]) -> bool:
        """Copy the upload into ``out``; False as soon as it exceeds the limit."""
        size = 0
        while chunk := await part.read_chunk(CHUNK_BYTES):
            size += len(chunk)
            if size > self.max_upload_bytes:
                return False
            await asyncio.to_thread(out.write, chunk)
        return True

    async def import_(self, request: web.Request) -> web.StreamResponse:
        """Import the uploaded zip (module docstring: statuses)."""
        too_big = f"import: the upload is larger than the {self.max_upload_bytes} bytes allowed"
        if (request.content_length or 0) > self.max_upload_bytes:
            return _import_refused(413, too_big, self.lang)
        try:
            part = await (await request.multipart()).next()
        except (ValueError, AssertionError, KeyError):
            part = None
        if not isinstance(part, BodyPartReader) or part.name != "file" or not part.filename:
            return _import_refused(200, "import: no file chosen; pick a bundle's .zip", self.lang)
        upload: Path | None = None
        try:
            fd, name = tempfile.mkstemp(prefix=".upload-", suffix=".zip", dir=self.runs)
            upload = Path(name)
            with os.fdopen(fd, "wb") as out:
                if not await self._save(part, out):
                    return _import_refused(413, too_big, self.lang)
            target = await asyncio.to_thread(
                import_bundle, self.runs, upload, self.max_upload_bytes
            )
        except TouchstoneError as exc:
            return _import_refused(200, str(exc), self.lang)
        except OSError as exc:
            return _import_refused(500, f"import: cannot write under --runs ({exc})", self.lang)
        finally:
            if upload is not None:
                upload.unlink(missing_ok=True)
        raise web.HTTPSeeOther("/run/" + quote(target.relative_to(self.runs).as_posix()))

    async def trash(self, request: web.Request) -> web.StreamResponse:
        """Move the bundle to the trash and show the trash with its undo."""
        root = self._root(request)
        try:
            entry = await asyncio.to_thread(trash, self.runs, root)
        except TouchstoneError as exc:
            return await self._trash_refused(str(exc))
        raise web.HTTPSeeOther(f"/trash?moved={quote(entry.id, safe='')}")

    async def trash_page(self, request: web.Request) -> web.Response:
        """The trash (with the undo of ``?moved=<id>``)."""
        listed = await asyncio.to_thread(trashed, self.runs)
        body = trash_html(listed, request.query.get("moved"), lang=self.lang)
        return page(ui_labels(self.lang)["trash_title"], body, lang=self.lang)

    async def _trash_refused(self, line: str) -> web.Response:
        listed = await asyncio.to_thread(trashed, self.runs)
        title = ui_labels(self.lang)["trash_title"]
        return _refused(409, title, trash_html(listed, None, line, self.lang), self.lang)

    async def restore(self, request: web.Request) -> web.StreamResponse:
        """Move a trash entry back and show its result page."""
        try:
            target = await asyncio.to_thread(restore, self.runs, request.match_info["item"])
        except TouchstoneError as exc:
            return await self._trash_refused(str(exc))
        raise web.HTTPSeeOther("/run/" + quote(target.relative_to(self.runs).as_posix()))
