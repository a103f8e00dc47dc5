"""The Queue page (issue 29, item 7): the UI queue's entries and their states, live; add an
entry, move or remove a pending one, stop a running one (:mod:`.queue_jobs` does the work).

Routes (all behind the app's guards: Host, token, Origin on every POST): ``/queue`` the page,
``/queue/fragment`` its entry table (re-fetched every second by ``queue.js``),
``/queue/choices?pack=P&config=C`` the add form's checkboxes as JSON (``{"models": [...],
"variants": [...]}`` or ``{"error": line}``), ``POST /queue/add``, ``POST /queue/<entry>/move``
(``step`` ``up`` | ``down``), ``POST /queue/<entry>/remove``, ``POST /queue/<entry>/stop``. A
refused edit answers the page with its one line (HTTP 400; 409 for a busy host or an entry in
the wrong state) and changes nothing; a done one redirects to ``/queue`` (303).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from touchstone_ray.errors import TouchstoneError, UsageError
from touchstone_ray.ui._page import HEADERS, e, page
from touchstone_ray.ui.jobs import MEASURING, Jobs
from touchstone_ray.ui.packs import pack_files
from touchstone_ray.ui.queue_jobs import TICK_S, Conflict, QueueRow, UiQueue, choices

__all__ = ["QUEUE", "entries_html", "setup", "start_or_queue"]

QUEUE = web.AppKey("queue", UiQueue)
STEPS = {"up": -1, "down": 1}
INLINE = 'style="display:inline"'
"""The row's buttons side by side."""
"""The move form's ``step`` → places in the file."""


def _cell(values: tuple[str, ...] | None) -> str:
    return e(", ".join(values)) if values else '<span class="muted">all</span>'


def _actions(row: QueueRow) -> str:
    base = f"/queue/{quote(row.name)}"
    if row.state == "running":
        return (
            f'<form method="post" action="{base}/stop">'
            '<button type="submit" class="stop">stop</button></form>'
        )
    buttons = []
    if row.state == "pending":
        for step, label in (("up", "↑"), ("down", "↓")):
            buttons.append(
                f'<form method="post" action="{base}/move" {INLINE}>'
                f'<input type="hidden" name="step" value="{step}">'
                f'<button type="submit" class="{step}" title="move {step}">'
                f"{label}</button></form>"
            )
    buttons.append(
        f'<form method="post" action="{base}/remove" {INLINE}>'
        '<button type="submit" class="remove">remove</button></form>'
    )
    return "".join(buttons)


def entries_html(rows: list[QueueRow], runs: Path, error: str | None = None) -> str:
    """The entry table (one ``tr[data-entry]`` per entry, its state in ``.state .badge``), or
    a line saying the queue is empty; ``error`` (the queue file's or the last submission's
    line) above it."""
    note = f'<p id="queue-error" class="err">{e(error)}</p>' if error else ""
    if not rows:
        return note + '<p id="queue-empty" class="muted">The queue is empty.</p>'
    body = []
    for r in rows:
        bundle = "—"
        if r.bundle and Path(r.bundle).is_relative_to(runs):
            rel = Path(r.bundle).relative_to(runs).as_posix()
            page_of = "live" if r.state == "running" else "run"
            bundle = f'<a href="/{page_of}/{quote(rel)}">{e(Path(r.bundle).name)}</a>'
        took = "—" if r.duration_s is None else f"{r.duration_s:.0f} s"
        why = f'<br><span class="reason muted">{e(r.reason)}</span>' if r.reason else ""
        body.append(
            f'<tr data-entry="{e(r.name)}"><td class="name">{e(r.name)}</td><td>{e(r.kind)}</td>'
            f'<td class="state"><span class="badge s-{e(r.state)}">{e(r.state)}</span>{why}</td>'
            f"<td>{e(r.pack)}</td><td>{e(Path(r.config).name)}</td><td>{_cell(r.models)}</td>"
            f"<td>{_cell(r.variants)}</td><td>{e(r.limit)}</td><td>{e(r.judge_config)}</td>"
            f"<td>{e(', '.join(r.hosts))}</td><td>{took}</td><td>{bundle}</td>"
            f'<td class="actions">{_actions(r)}</td></tr>'
        )
    return (
        note + '<table id="queue-entries"><thead><tr><th>entry</th><th>kind</th><th>state</th>'
        "<th>pack</th><th>config</th><th>models</th><th>variants</th><th>limit</th>"
        "<th>judge</th><th>hosts</th><th>duration</th><th>bundle</th><th></th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _options(paths: list[Path]) -> str:
    return '<option value="">—</option>' + "".join(
        f'<option value="{e(p)}">{e(p.name)}</option>' for p in paths
    )


def queue_html(queue: UiQueue, packs: Path, fragment: str, message: str | None) -> str:
    """The page body: the add form, the refusal or queueing ``message``, the entry table."""
    note = f'<p id="queue-message" class="err">{e(message)}</p>' if message else ""
    return (
        "<h1>Queue</h1>"
        f"<p>The entries of <code>{e(queue.path)}</code>, run one after another per host by a "
        f'Ray job (<a href="/jobs">Jobs</a>); summary: <code>{e(queue.folder)}/summary.md'
        "</code></p>"
        '<form method="post" action="/queue/add" id="queue-add"><h2>Add an eval</h2>'
        '<div style="display:flex;gap:.8rem;align-items:end;flex-wrap:wrap">'
        f'<label>pack<br><select name="pack">{_options(pack_files(packs))}</select></label>'
        "<label>fleet config (under --runs or the packs folder)<br>"
        '<input name="config" size="40"></label>'
        '<label>judge config (optional)<br><input name="judge_config" size="30"></label>'
        '<label>limit (prompts per category)<br><input name="limit" size="6"></label>'
        '<label>name (optional)<br><input name="name" size="20"></label></div>'
        '<fieldset id="queue-models"><legend>models</legend></fieldset>'
        '<fieldset id="queue-variants"><legend>variants</legend></fieldset>'
        '<p id="queue-choices-error" class="err"></p>'
        '<button type="submit">add to queue</button></form>'
        + note
        + f'<h2>Entries</h2><div id="queue" data-fragment="/queue/fragment">{fragment}</div>'
    )


async def _fragment(queue: UiQueue, runs: Path) -> str:
    try:
        rows = await asyncio.to_thread(queue.rows)
        error = queue.last_error
    except TouchstoneError as exc:
        rows, error = [], str(exc)
    return entries_html(rows, runs, error)


async def _page(
    request: web.Request, message: str | None = None, status: int = 200
) -> web.Response:
    queue = request.app[QUEUE]
    fragment = await _fragment(queue, queue.jobs.runs)
    queued = request.query.get("queued")
    if queued and message is None:
        message = f"a host it needs is busy: the run waits in the queue as entry {queued}"
    body = queue_html(queue, queue.jobs.packs, fragment, message)
    response = page("Queue", body, scripts=("queue.js",))
    response.set_status(status)
    return response


async def queue_page(request: web.Request) -> web.Response:
    return await _page(request)


async def queue_fragment(request: web.Request) -> web.Response:
    queue = request.app[QUEUE]
    html = await _fragment(queue, queue.jobs.runs)
    return web.Response(text=html, content_type="text/html", headers=HEADERS)


async def queue_choices(request: web.Request) -> web.Response:
    jobs = request.app[QUEUE].jobs

    def found() -> dict[str, Any]:
        pack = jobs.path_of(request.query.get("pack", ""), "pack")
        config = jobs.path_of(request.query.get("config", ""), "config")
        return dict(choices(pack, config))

    try:
        data = await asyncio.to_thread(found)
    except TouchstoneError as exc:
        data = {"error": str(exc)}
    return web.Response(text=json.dumps(data), content_type="application/json", headers=HEADERS)


def _status(exc: UsageError) -> int:
    return 409 if isinstance(exc, Conflict) else 400


async def _edit(request: web.Request, action: Any, *args: Any) -> web.Response:
    try:
        await asyncio.to_thread(action, *args)
    except UsageError as exc:
        return await _page(request, str(exc), _status(exc))
    raise web.HTTPSeeOther("/queue")


async def queue_add(request: web.Request) -> web.Response:
    posted = await request.post()
    form: dict[str, Any] = {k: v for k, v in posted.items() if isinstance(v, str)}
    for key in ("models", "variants"):
        form[key] = [v for v in posted.getall(key, []) if isinstance(v, str)]
    return await _edit(request, request.app[QUEUE].add, form)


async def queue_move(request: web.Request) -> web.Response:
    step = STEPS.get(str((await request.post()).get("step", "")))
    if step is None:
        return await _page(request, "step: expected up or down", 400)
    return await _edit(request, request.app[QUEUE].move, request.match_info["entry"], step)


async def queue_remove(request: web.Request) -> web.Response:
    return await _edit(request, request.app[QUEUE].remove, request.match_info["entry"])


async def queue_stop(request: web.Request) -> web.Response:
    return await _edit(request, request.app[QUEUE].stop, request.match_info["entry"])


def start_or_queue(app: web.Application, kind: str, form: dict[str, str]) -> str:
    """Start a run from the Jobs page (blocking: call it from a thread); the address to
    redirect to: the job's page, or the Queue page when an eval or perf waits there for a busy
    host. Raises what :meth:`Jobs.submit` raises."""
    queue = app[QUEUE]
    if kind in MEASURING:
        target, queued = queue.start(kind, form)
        if queued:
            return f"/queue?queued={quote(target)}"
    else:
        target = queue.jobs.submit(kind, form)
    return f"/jobs/{target}"


async def _tick_forever(queue: UiQueue) -> None:
    said: str | None = None
    while True:
        try:
            await asyncio.to_thread(queue.tick)
            said = None
        except Exception as exc:  # the page shows it too; the ticker must go on
            if str(exc) != said:  # once, not every tick
                said = str(exc)
                print(f"warning: queue: {exc}", file=sys.stderr, flush=True)
        await asyncio.sleep(TICK_S)


async def _ticker(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(_tick_forever(app[QUEUE]))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def setup(app: web.Application, jobs: Jobs) -> None:
    """Give ``app`` the queue of ``jobs``' runs folder, the Queue page's routes and the ticker
    that starts the queue job (:meth:`UiQueue.tick`)."""
    app[QUEUE] = UiQueue(jobs)
    app.cleanup_ctx.append(_ticker)
    app.add_routes(
        [
            web.get("/queue", queue_page),
            web.get("/queue/fragment", queue_fragment),
            web.get("/queue/choices", queue_choices),
            web.post("/queue/add", queue_add),
            web.post("/queue/{entry}/move", queue_move),
            web.post("/queue/{entry}/remove", queue_remove),
            web.post("/queue/{entry}/stop", queue_stop),
        ]
    )
