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
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from touchstone_ray.errors import TouchstoneError, UsageError
from touchstone_ray.lang import ui_labels
from touchstone_ray.ui._page import HEADERS, e, page, th
from touchstone_ray.ui._ticker import ticker
from touchstone_ray.ui.jobs import MEASURING, Jobs
from touchstone_ray.ui.packs import pack_files
from touchstone_ray.ui.queue_jobs import TICK_S, Conflict, QueueRow, UiQueue, choices

__all__ = ["QUEUE", "entries_html", "setup", "start_or_queue"]

QUEUE = web.AppKey("queue", UiQueue)
QUEUE_LANG = web.AppKey("queue_lang", str)
"""The language of the Queue page (``ui --lang``)."""
STEPS = {"up": -1, "down": 1}
"""The move form's ``step`` → places in the file."""
INLINE = 'style="display:inline"'
"""The row's buttons side by side."""
ENTRY_HEADS = (
    "q_h_entry", "q_h_kind", "q_h_state", "q_h_pack", "q_h_config", "q_h_models",
    "q_h_variants", "q_h_limit", "q_h_judge", "q_h_hosts", "q_h_duration", "q_h_bundle",
)  # fmt: skip
"""The entry table's column heads (label keys), in order."""


def _cell(values: tuple[str, ...] | None, u: dict[str, str]) -> str:
    return e(", ".join(values)) if values else f'<span class="muted">{e(u["all"])}</span>'


def _actions(row: QueueRow, u: dict[str, str]) -> str:
    base = f"/queue/{quote(row.name)}"
    if row.state == "running":
        return (
            f'<form method="post" action="{base}/stop">'
            f'<button type="submit" class="stop">{e(u["q_stop"])}</button></form>'
        )
    buttons = []
    if row.state == "pending":
        for step, label in (("up", "↑"), ("down", "↓")):
            buttons.append(
                f'<form method="post" action="{base}/move" {INLINE}>'
                f'<input type="hidden" name="step" value="{step}">'
                f'<button type="submit" class="{step}" title="{e(u["q_" + step])}">'
                f"{label}</button></form>"
            )
    buttons.append(
        f'<form method="post" action="{base}/remove" {INLINE}>'
        f'<button type="submit" class="remove">{e(u["q_remove"])}</button></form>'
    )
    return "".join(buttons)


def entries_html(
    rows: list[QueueRow], runs: Path, error: str | None = None, lang: str = "en"
) -> str:
    """The entry table in ``lang`` (one ``tr[data-entry]`` per entry, its state in
    ``.state .badge`` with the state's key as class ``s-<state>``), or a line saying the
    queue is empty; ``error`` (the queue file's or the last submission's line) above it."""
    u = ui_labels(lang)
    note = f'<p id="queue-error" class="err">{e(error)}</p>' if error else ""
    if not rows:
        return note + f'<p id="queue-empty" class="muted">{e(u["q_empty"])}</p>'
    body = []
    for r in rows:
        bundle = "—"
        if r.bundle and Path(r.bundle).is_relative_to(runs):
            rel = Path(r.bundle).relative_to(runs).as_posix()
            page_of = "live" if r.state == "running" else "run"
            bundle = f'<a href="/{page_of}/{quote(rel)}">{e(Path(r.bundle).name)}</a>'
        took = "—" if r.duration_s is None else f"{r.duration_s:.0f} s"
        why = f'<br><span class="reason muted">{e(r.reason)}</span>' if r.reason else ""
        state = u.get(f"q_s_{r.state}", r.state)
        body.append(
            f'<tr data-entry="{e(r.name)}"><td class="name">{e(r.name)}</td><td>{e(r.kind)}</td>'
            f'<td class="state"><span class="badge s-{e(r.state)}">{e(state)}</span>{why}</td>'
            f"<td>{e(r.pack)}</td><td>{e(Path(r.config).name)}</td>"
            f"<td>{_cell(r.models, u)}</td><td>{_cell(r.variants, u)}</td><td>{e(r.limit)}</td>"
            f"<td>{e(r.judge_config)}</td><td>{e(', '.join(r.hosts))}</td><td>{took}</td>"
            f'<td>{bundle}</td><td class="actions">{_actions(r, u)}</td></tr>'
        )
    heads = "".join(th(lang, u[key]) for key in ENTRY_HEADS)
    return (
        f'{note}<table id="queue-entries"><thead><tr>{heads}<th></th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _options(paths: list[Path]) -> str:
    return '<option value="">—</option>' + "".join(
        f'<option value="{e(p)}">{e(p.name)}</option>' for p in paths
    )


def queue_html(
    queue: UiQueue, packs: Path, fragment: str, message: str | None, lang: str = "en"
) -> str:
    """The page body in ``lang``: the add form, the refusal or queueing ``message``, the entry
    table."""
    u = ui_labels(lang)
    note = f'<p id="queue-message" class="err">{e(message)}</p>' if message else ""
    intro = e(u["q_intro"]).format(
        file=f"<code>{e(queue.path)}</code>",
        jobs=f'<a href="/jobs">{e(u["nav_jobs"])}</a>',
        summary=f"<code>{e(queue.folder)}/summary.md</code>",
    )
    return (
        f"<h1>{e(u['q_title'])}</h1><p>{intro}</p>"
        f'<form method="post" action="/queue/add" id="queue-add"><h2>{e(u["q_add"])}</h2>'
        '<div style="display:flex;gap:.8rem;align-items:end;flex-wrap:wrap">'
        f'<label>{e(u["q_pack"])}<br><select name="pack">{_options(pack_files(packs))}'
        "</select></label>"
        f'<label>{e(u["q_config"])}<br><input name="config" size="40"></label>'
        f'<label>{e(u["q_judge_config"])}<br><input name="judge_config" size="30"></label>'
        f'<label>{e(u["q_limit"])}<br><input name="limit" size="6"></label>'
        f'<label>{e(u["q_name"])}<br><input name="name" size="20"></label></div>'
        f'<fieldset id="queue-models"><legend>{e(u["q_models"])}</legend></fieldset>'
        f'<fieldset id="queue-variants"><legend>{e(u["q_variants"])}</legend></fieldset>'
        '<p id="queue-choices-error" class="err"></p>'
        f'<button type="submit">{e(u["q_submit"])}</button></form>'
        + note
        + f"<h2>{e(u['q_entries'])}</h2>"
        f'<div id="queue" data-fragment="/queue/fragment">{fragment}</div>'
    )


async def _fragment(app: web.Application) -> str:
    queue = app[QUEUE]
    try:
        rows = await asyncio.to_thread(queue.rows)
        error = queue.last_error
    except TouchstoneError as exc:
        rows, error = [], str(exc)
    return entries_html(rows, queue.jobs.runs, error, app[QUEUE_LANG])


async def _page(
    request: web.Request, message: str | None = None, status: int = 200
) -> web.Response:
    queue, lang = request.app[QUEUE], request.app[QUEUE_LANG]
    u = ui_labels(lang)
    fragment = await _fragment(request.app)
    queued = request.query.get("queued")
    if queued and message is None:
        message = u["q_queued"].format(entry=queued)
    body = queue_html(queue, queue.jobs.packs, fragment, message, lang)
    response = page(u["q_title"], body, scripts=("queue.js",), lang=lang)
    response.set_status(status)
    return response


async def queue_page(request: web.Request) -> web.Response:
    return await _page(request)


async def queue_fragment(request: web.Request) -> web.Response:
    html = await _fragment(request.app)
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


def setup(app: web.Application, jobs: Jobs, lang: str = "en") -> None:
    """Give ``app`` the queue of ``jobs``' runs folder, the Queue page's routes in ``lang``
    and the ticker that starts the queue job (:meth:`UiQueue.tick`)."""
    app[QUEUE] = UiQueue(jobs)
    app[QUEUE_LANG] = lang
    app.cleanup_ctx.append(ticker("queue", lambda app: app[QUEUE].tick, TICK_S))
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
