"""The aiohttp application of ``touchstone-ray ui``: routes, settings and the server loop.

Routes: ``/`` overview (``/fragment/overview`` its tables), ``/run/<bundle>`` result page,
``/live/<bundle>`` live page with ``/events/<bundle>`` (server-sent events), ``/packs``,
``/packs/<file>``, ``POST /packs/validate``, ``/compare`` (with ``/compare.csv`` and
``/compare.md``), ``/judges``, ``/jobs`` (``POST /jobs/start``, ``POST /jobs/<id>/stop``,
``/jobs/<id>`` with its log stream ``/jobs/<id>/events``), ``/queue`` (:mod:`.queue_page`),
``/static/<script>``; bundles as files (:mod:`.bundle_files`): ``/zip/<bundle>``,
``/file/<bundle>?name=<file>``, ``POST /bundles/import``, ``POST /trash/<bundle>``, ``/trash``,
``POST /restore/<id>``; a judge run's live page ``/judge-live/<bundle>`` with
``/judge-events/<bundle>`` (:mod:`.live_judges`).
``<bundle>`` is the bundle's path relative to ``--runs``; anything that resolves outside it,
or is not a bundle folder, is a 404. A page that shows one pack's bundle (result, live) or
pack speaks that pack's language; every other page ``--lang``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from aiohttp import web

from touchstone_ray.bundle import Bundle
from touchstone_ray.errors import TouchstoneError, UsageError
from touchstone_ray.lang import LANGUAGES, ui_labels
from touchstone_ray.ui import (
    compare,
    jobs_page,
    judges,
    live,
    overview,
    packs,
    queue_page,
    result,
    start_routes,
    tools_pages,
)
from touchstone_ray.ui._page import HEADERS, bundle_lang, e, page
from touchstone_ray.ui.bundle_files import BundleFiles, files_bar, import_form
from touchstone_ray.ui.jobs import Jobs
from touchstone_ray.ui.judge_card import JudgeCard
from touchstone_ray.ui.live_judges import JudgesLive, judge_live_link
from touchstone_ray.ui.security import confined_bundle, guard_middleware, is_loopback_host
from touchstone_ray.ui.start import judge_config_files, resume_plan, yaml_files
from touchstone_ray.ui.start_routes import form_of
from touchstone_ray.ui.static import SCRIPTS

__all__ = ["UiSettings", "make_app", "serve"]

TOKEN_ENV = "TOUCHSTONE_UI_TOKEN"
"""Environment variable read when ``--token`` is not given."""
POLL_S = 1.0
"""How often the event stream looks at the bundle's files (s)."""


@dataclass(frozen=True)
class UiSettings:
    """What the UI serves and where. ``port`` 0 picks a free port; ``lang`` is the language
    of the pages that show no pack's bundle (``de`` or ``en``)."""

    runs: Path
    packs: Path
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    address: str | None = None
    lang: str = "en"

    def check(self) -> None:
        """Raise :class:`UsageError` for a non-loopback bind without a token, a ``--runs``
        that is not a folder, or a ``--lang`` without a language table."""
        if self.lang not in LANGUAGES:
            raise UsageError(f"--lang {self.lang}: not one of {', '.join(LANGUAGES)}")
        if not is_loopback_host(self.host) and not self.token:
            raise UsageError(
                f"--host {self.host}: listening beyond this machine needs --token "
                f"(or the {TOKEN_ENV} environment variable)"
            )
        if not self.runs.is_dir():
            raise UsageError(f"--runs {self.runs}: no such folder")


RUNS = web.AppKey("runs", Path)
JOBS = web.AppKey("jobs", Jobs)
PACKS = web.AppKey("packs", Path)
LANG = web.AppKey("lang", str)


def _bundle_root(request: web.Request) -> Path:
    root = confined_bundle(request.app[RUNS], request.match_info["rel"])
    if root is None:
        raise web.HTTPNotFound(text="no such bundle under --runs")
    return root


def _filters(request: web.Request, names: tuple[str, ...]) -> dict[str, str]:
    return {k: request.query[k] for k in names if request.query.get(k)}


async def overview_page(request: web.Request) -> web.Response:
    lang = request.app[LANG]
    filters = _filters(request, ("pack", "model", "host"))
    body = overview.overview_html(request.app[RUNS], filters, lang) + import_form(lang)
    return page(ui_labels(lang)["runs_title"], body, scripts=("overview.js",), lang=lang)


async def overview_fragment(request: web.Request) -> web.Response:
    filters = _filters(request, ("pack", "model", "host"))
    rows = overview.summaries(request.app[RUNS])
    return web.Response(
        text=overview.table_html(rows, filters, request.app[LANG]),
        content_type="text/html",
        headers=HEADERS,
    )


async def result_page(request: web.Request) -> web.Response:
    root = _bundle_root(request)
    lang = await asyncio.to_thread(bundle_lang, root, request.app[LANG])
    bar = await asyncio.to_thread(files_bar, root, request.app[RUNS], lang)
    jobs = request.app[JOBS]
    bar += await asyncio.to_thread(
        jobs_page.run_actions, root, request.app[RUNS], lang, jobs.runs, jobs.packs
    )
    try:
        kind = await asyncio.to_thread(_kind, root)
        if kind == "perf":
            title, body = await asyncio.to_thread(result.perf_result_html, root)
        elif kind == "tools":
            title, body = await asyncio.to_thread(
                tools_pages.tools_result_html,
                root,
                _filters(request, tools_pages.FILTERS),
                request.path,
            )
        else:
            title, body = await asyncio.to_thread(
                result.result_html, root, _filters(request, result.FILTERS), request.path
            )
            rel = root.relative_to(request.app[RUNS]).as_posix()
            body = (
                f'<p><a id="judges-live" href="{e(judge_live_link(rel))}">'
                f"{e(ui_labels(lang)['judges_live'])}</a></p>" + body
            )
    except TouchstoneError as exc:
        body = f'<h1>{e(root.name)}</h1><p class="err">{e(exc)}</p>{bar}'
        return page(ui_labels(lang)["result_error_title"], body, lang=lang)
    return page(title, bar + body, scripts=("report.js",), lang=lang)


def _kind(root: Path) -> str:
    """``eval``, ``perf`` or ``tools``: which result page ``root`` gets (a perf bundle's is
    its perf report's sections, a tools bundle's :mod:`.tools_pages`); ``eval`` when the
    manifest cannot be read (the eval page says why)."""
    try:
        return Bundle(root).kind()
    except TouchstoneError:
        return "eval"


async def live_page(request: web.Request) -> web.Response:
    root = _bundle_root(request)
    rel = root.relative_to(request.app[RUNS].resolve()).as_posix()
    lang = await asyncio.to_thread(bundle_lang, root, request.app[LANG])
    u = ui_labels(lang)
    try:
        state = await asyncio.to_thread(live.live_state, root)
        inner = live.live_body(state, lang)
    except TouchstoneError as exc:
        inner = f'<p class="err">{e(exc)}</p>'
    dashboard = await asyncio.to_thread(live.recorded_dashboard, root)
    links = [f'<a href="/run/{e(rel)}">{e(u["result_page"])}</a>']
    links.append(f'<a id="judges-live" href="{e(judge_live_link(rel))}">{e(u["judges_live"])}</a>')
    if dashboard:
        links.append(f'<a id="ray-dashboard" href="{e(dashboard)}">{e(u["dashboard"])}</a>')
    body = (
        f"<h1>{e(u['live_title'])} · {e(root.name)}</h1><p>{' · '.join(links)}</p>"
        f'<div id="live" data-events="/events/{e(rel)}">{inner}</div>'
    )
    return page(f"{u['live_title']} {root.name}", body, scripts=("live.js",), lang=lang)


def _sse(name: str, payload: dict[str, object]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


async def live_events(request: web.Request) -> web.StreamResponse:
    root = _bundle_root(request)
    bundle = Bundle(root)
    lang = await asyncio.to_thread(bundle_lang, root, request.app[LANG])
    response = web.StreamResponse(
        headers={**HEADERS, "Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    seen: float | None = -1.0
    while True:
        stamp = bundle.last_write()
        state = await asyncio.to_thread(bundle.run_state)
        if stamp != seen or state not in ("running",):
            seen = stamp
            try:
                view = await asyncio.to_thread(live.live_state, root)
                html = live.live_body(view, lang)
            except TouchstoneError as exc:
                html = f'<p class="err">{e(exc)}</p>'
            done = state != "running"
            await response.write(_sse("end" if done else "update", {"html": html}))
            if done:
                return response
        await asyncio.sleep(POLL_S)


async def packs_page(request: web.Request) -> web.Response:
    lang = request.app[LANG]
    body = packs.packs_html(request.app[PACKS], lang=lang)
    return page(ui_labels(lang)["packs_title"], body, lang=lang)


async def pack_view(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    path = next((p for p in packs.pack_files(request.app[PACKS]) if p.name == name), None)
    if path is None:
        raise web.HTTPNotFound(text="no such pack in the packs folder")
    try:
        lang, body = packs.pack_view_html(path)
    except TouchstoneError as exc:
        lang = request.app[LANG]
        body = f'<h1>{e(name)}</h1><p class="err" id="pack-error">{e(exc)}</p>'
    return page(name, body, lang=lang)


async def pack_validate(request: web.Request) -> web.Response:
    form = await request.post()
    upload, pasted = form.get("file"), form.get("yaml")
    source: str | bytes
    if isinstance(upload, web.FileField) and upload.filename:
        raw = upload.file.read()
        source = raw if isinstance(raw, bytes) else str(raw)
        text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    else:
        text = source = pasted if isinstance(pasted, str) else ""
    outcome = await asyncio.to_thread(packs.validate_text, source)
    lang = request.app[LANG]
    body = packs.packs_html(request.app[PACKS], text, outcome, lang)
    return page(ui_labels(lang)["packs_title"], body, lang=lang)


async def compare_page(request: web.Request) -> web.Response:
    wanted = request.query.getall("row", [])
    lang = request.app[LANG]
    title = ui_labels(lang)["compare_title"]
    try:
        body = await asyncio.to_thread(compare.compare_html, request.app[RUNS], wanted, lang)
    except TouchstoneError as exc:
        body = f'<h1>{e(title)}</h1><p class="err">{e(exc)}</p>'
    return page(title, body, lang=lang)


async def compare_file(request: web.Request) -> web.Response:
    kind = request.match_info["kind"]
    wanted = request.query.getall("row", [])
    judged = request.query.get("judged") != "0"
    text = await asyncio.to_thread(
        compare.compare_download, request.app[RUNS], wanted, kind, judged
    )
    ctype = "text/csv" if kind == "csv" else "text/markdown"
    name = "compare.csv" if kind == "csv" else "compare.md"
    return web.Response(
        text=text,
        content_type=ctype,
        headers={**HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
    )


async def judges_page(request: web.Request) -> web.Response:
    lang = request.app[LANG]
    body = await asyncio.to_thread(judges.judges_html, request.app[RUNS], lang)
    return page(ui_labels(lang)["judges_title"], body, lang=lang)


async def _jobs_page(request: web.Request, message: str | None = None) -> web.Response:
    jobs = request.app[JOBS]
    lang = request.app[LANG]
    try:
        listed = await asyncio.to_thread(jobs.jobs)
    except TouchstoneError as exc:
        listed, message = [], message or str(exc)
    files = await asyncio.to_thread(yaml_files, jobs.runs, jobs.packs)
    judges_found = await asyncio.to_thread(judge_config_files, jobs.runs, jobs.packs)
    body = jobs_page.jobs_html(
        listed,
        request.app[PACKS],
        jobs.dashboard,
        message,
        jobs.token_file,
        lang=lang,
        configs=[f for f in files if f not in judges_found],
        judge_configs=judges_found,
    )
    return page(ui_labels(lang)["jobs_title"], body, scripts=("start.js",), lang=lang)


async def _refused(request: web.Request, exc: TouchstoneError) -> web.Response:
    """The jobs page with the one line of a refused start (400; 409 for a busy host; 502 when
    the cluster refused or failed the submission)."""
    response = await _jobs_page(request, str(exc))
    if isinstance(exc, UsageError):
        response.set_status(409 if str(exc).startswith("refused:") else 400)
    else:
        response.set_status(502)
    return response


async def jobs_list(request: web.Request) -> web.Response:
    return await _jobs_page(request)


async def job_start(request: web.Request) -> web.StreamResponse:
    form = form_of(await request.post())
    try:
        where = await asyncio.to_thread(
            queue_page.start_or_queue, request.app, form.get("kind", ""), form
        )
    except TouchstoneError as exc:
        return await _refused(request, exc)
    raise web.HTTPSeeOther(where)


async def job_resume(request: web.Request) -> web.StreamResponse:
    jobs = request.app[JOBS]
    root = confined_bundle(jobs.runs, str((await request.post()).get("bundle", "")))
    if root is None:
        raise web.HTTPNotFound(text="no such bundle under --runs")
    try:
        job_id = await asyncio.to_thread(lambda: jobs.submit_plan(resume_plan(root)))
    except TouchstoneError as exc:
        return await _refused(request, exc)
    raise web.HTTPSeeOther(f"/jobs/{job_id}")


async def job_stop(request: web.Request) -> web.StreamResponse:
    job_id = request.match_info["job"]
    try:
        await asyncio.to_thread(request.app[JOBS].stop, job_id)
    except (TouchstoneError, RuntimeError) as exc:
        return await _jobs_page(request, f"stop {job_id}: {exc}")
    raise web.HTTPSeeOther(f"/jobs/{job_id}")


async def job_view(request: web.Request) -> web.Response:
    job_id = request.match_info["job"]
    bundle = await asyncio.to_thread(request.app[JOBS].judged_bundle, job_id)
    link = judge_live_link(bundle.relative_to(request.app[RUNS]).as_posix()) if bundle else None
    lang = request.app[LANG]
    body = jobs_page.job_html(job_id, link, lang)
    return page(ui_labels(lang)["jobs_title"], body, scripts=("job.js",), lang=lang)


async def job_events(request: web.Request) -> web.StreamResponse:
    job_id = request.match_info["job"]
    response = web.StreamResponse(headers={**HEADERS, "Content-Type": "text/event-stream"})
    await response.prepare(request)
    seen = None
    while True:
        try:
            status, logs = await asyncio.to_thread(request.app[JOBS].logs, job_id)
        except (TouchstoneError, RuntimeError) as exc:
            await response.write(_sse("end", {"status": "unknown", "logs": str(exc)}))
            return response
        done = status in ("SUCCEEDED", "FAILED", "STOPPED")
        if (status, logs) != seen or done:
            seen = (status, logs)
            await response.write(
                _sse("end" if done else "update", {"status": status, "logs": logs})
            )
            if done:
                return response
        await asyncio.sleep(POLL_S)


async def favicon(request: web.Request) -> web.Response:
    return web.Response(status=204, headers=HEADERS)


async def static(request: web.Request) -> web.Response:
    script = SCRIPTS.get(request.match_info["name"])
    if script is None:
        raise web.HTTPNotFound()
    return web.Response(text=script, content_type="application/javascript", headers=HEADERS)


def make_app(settings: UiSettings) -> web.Application:
    """The aiohttp application for ``settings`` (guarded by
    :func:`~touchstone_ray.ui.security.guard_middleware`)."""
    app = web.Application(
        middlewares=[guard_middleware(settings.host, settings.port, settings.token)],
        client_max_size=packs.MAX_PASTE_BYTES,
    )
    app[RUNS] = settings.runs.resolve()
    app[PACKS] = settings.packs.resolve()
    app[LANG] = settings.lang
    app[JOBS] = Jobs(settings.address, app[RUNS], app[PACKS])

    async def close_jobs(app: web.Application) -> None:
        await asyncio.to_thread(app[JOBS].close)

    app.on_cleanup.append(close_jobs)
    queue_page.setup(app, app[JOBS], settings.lang)
    start_routes.setup(app, app[JOBS])  # before /jobs/{job}
    app.add_routes(
        [
            web.get("/", overview_page),
            web.get("/fragment/overview", overview_fragment),
            web.get("/run/{rel:.+}", result_page),
            web.get("/live/{rel:.+}", live_page),
            web.get("/events/{rel:.+}", live_events),
            web.get("/packs", packs_page),
            web.post("/packs/validate", pack_validate),
            web.get("/packs/{name}", pack_view),
            web.get("/static/{name}", static),
            web.get("/favicon.ico", favicon),
            web.get("/compare", compare_page),
            web.get("/compare.{kind:csv|md}", compare_file),
            web.get("/judges", judges_page),
            web.get("/jobs", jobs_list),
            web.post("/jobs/start", job_start),
            web.post("/jobs/resume", job_resume),
            web.post("/jobs/{job}/stop", job_stop),
            web.get("/jobs/{job}", job_view),
            web.get("/jobs/{job}/events", job_events),
        ]
    )
    app.add_routes(BundleFiles(app[RUNS], lang=settings.lang).routes())
    app.add_routes(JudgesLive(app[RUNS]).routes())
    app.add_routes(JudgeCard(app[RUNS], settings.lang).routes())
    return app


def serve(settings: UiSettings, stream: TextIO = sys.stdout) -> None:
    """Check ``settings`` and serve until interrupted; prints the address (and a warning for
    a non-loopback bind). Raises :class:`UsageError` (see :meth:`UiSettings.check`)."""
    settings.check()
    if not is_loopback_host(settings.host):
        print(
            f"warning: the UI listens on {settings.host}:{settings.port}, reachable beyond this "
            "machine; every request needs the token",
            file=sys.stderr,
        )
    print(f"touchstone-ray ui: http://{settings.host}:{settings.port}/", file=stream, flush=True)
    web.run_app(
        make_app(settings), host=settings.host, port=settings.port, print=None, access_log=None
    )
