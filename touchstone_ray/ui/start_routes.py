"""The start flow's routes (issue 31, item 1), behind the app's guards (Host, token, Origin on
every POST).

``GET /jobs/choices?pack=P&config=C`` the models (label, host, engine) and variants as JSON,
or ``{"error": line}``; ``GET /jobs/plan?<form>`` the exact command the form would start
(``{"command", "hosts", "then_judge"}`` or ``{"error": line}``, from the same
:meth:`~touchstone_ray.ui.jobs.Jobs.plan` the submission runs); ``POST /jobs/preflight``
(``config``) starts ``touchstone-ray hosts --json`` as a Ray job and answers ``{"job": id}``;
``GET /jobs/preflight/<job>`` its status and, once it printed them, what each endpoint serves
(:func:`~touchstone_ray.ui.start.preflight_models`). The app's ``POST /jobs/resume``
(``bundle``, relative to ``--runs``) starts :func:`~touchstone_ray.ui.start.resume_plan`
(``eval --resume`` or ``perf --resume`` of a crashed or failed bundle) as a job under the host
rule. A ticker (:meth:`~touchstone_ray.ui.jobs.Jobs.chain`) starts each chained judge job once
its eval job succeeded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from touchstone_ray.errors import TouchstoneError, UsageError
from touchstone_ray.queue.commands import PROGRAM, hosts_command
from touchstone_ray.ui._page import HEADERS
from touchstone_ray.ui._ticker import ticker
from touchstone_ray.ui.jobs import ACTIVE, Jobs
from touchstone_ray.ui.start import choices, fleet_hosts, preflight_models

__all__ = ["CHAIN_TICK_S", "form_of", "setup", "start_preflight"]

CHAIN_TICK_S = 2.0
"""How often the app looks for an eval job whose chained judge must start (s)."""
JOBS_KEY = web.AppKey("start_jobs", Jobs)


def form_of(posted: Any) -> dict[str, str]:
    """A posted form (or query) as ``{name: value}``, the values of a repeated name (the
    ``models`` and ``variants`` checkboxes) joined with commas."""
    out: dict[str, str] = {}
    for key in dict.fromkeys(posted.keys()):
        values = [v for v in posted.getall(key) if isinstance(v, str)]
        out[key] = ",".join(v for v in values if v) if len(values) > 1 else "".join(values)
    return out


def start_preflight(jobs: Jobs, config_value: str) -> str:
    """Start the hosts preflight of the fleet config ``config_value`` (under ``--runs`` or the
    packs folder) as a Ray job holding no host; its id. Raises :class:`UsageError` for a path
    not allowed or a config that does not load (nothing starts)."""
    config = jobs.path_of(config_value, "config")
    fleet_hosts(config)  # loads it: a bad config is refused here, not in the job
    return jobs.launch("hosts", [PROGRAM, *hosts_command(config)], ())


def preflight_state(jobs: Jobs, job_id: str) -> dict[str, Any]:
    """``{"status", "models", "problems", "error"}`` of a preflight job: ``models`` (label →
    what its endpoint serves) once the job printed its JSON line; ``error`` the log's last
    line when it ended without one."""
    status, log = jobs.logs(job_id)
    found = preflight_models(log)
    out: dict[str, Any] = {"status": status, "models": {}, "problems": [], "error": None}
    if found is not None:
        out.update(found)
    elif status not in ACTIVE:
        lines = [line for line in log.splitlines() if line.strip()]
        out["error"] = lines[-1] if lines else f"the preflight job ended {status}"
    return out


def _json(data: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(data), content_type="application/json", headers=HEADERS, status=status
    )


async def choices_route(request: web.Request) -> web.Response:
    jobs = request.app[JOBS_KEY]

    def found() -> dict[str, Any]:
        pack = jobs.path_of(request.query.get("pack", ""), "pack")
        config = jobs.path_of(request.query.get("config", ""), "config")
        return choices(pack, config)

    try:
        return _json(await asyncio.to_thread(found))
    except TouchstoneError as exc:
        return _json({"error": str(exc)})


async def plan_route(request: web.Request) -> web.Response:
    jobs = request.app[JOBS_KEY]
    form = form_of(request.query)
    try:
        plan = await asyncio.to_thread(jobs.plan, form.get("kind", "eval"), form)
    except TouchstoneError as exc:
        return _json({"error": str(exc)})
    judge = str(plan.then_judge) if plan.then_judge else None
    return _json({"command": plan.line, "hosts": list(plan.hosts), "then_judge": judge})


async def preflight_route(request: web.Request) -> web.Response:
    form = form_of(await request.post())
    try:
        job = await asyncio.to_thread(
            start_preflight, request.app[JOBS_KEY], form.get("config", "")
        )
    except TouchstoneError as exc:
        return _json({"error": str(exc)}, 400 if isinstance(exc, UsageError) else 502)
    return _json({"job": job})


async def preflight_state_route(request: web.Request) -> web.Response:
    job_id = request.match_info["job"]
    try:
        data = await asyncio.to_thread(preflight_state, request.app[JOBS_KEY], job_id)
    except (TouchstoneError, RuntimeError) as exc:
        data = {"status": "unknown", "models": {}, "problems": [], "error": str(exc)}
    return _json(data)


def setup(app: web.Application, jobs: Jobs) -> None:
    """Give ``app`` the start flow's routes (register them before ``/jobs/{job}``) and the
    ticker that starts chained judge jobs."""
    app[JOBS_KEY] = jobs
    app.cleanup_ctx.append(ticker("chained judge", lambda app: app[JOBS_KEY].chain, CHAIN_TICK_S))
    app.add_routes(
        [
            web.get("/jobs/choices", choices_route),
            web.get("/jobs/plan", plan_route),
            web.post("/jobs/preflight", preflight_route),
            web.get("/jobs/preflight/{job}", preflight_state_route),
        ]
    )
