"""The HTML of the jobs pages: the start form, the job list with stop buttons, one job's
log view (filled by server-sent events)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from touchstone_ray.ui._page import e
from touchstone_ray.ui.jobs import ACTIVE, JobInfo
from touchstone_ray.ui.packs import pack_files

__all__ = ["job_html", "jobs_html"]


def _options(paths: list[Path]) -> str:
    return "".join(f'<option value="{e(p)}">{e(p.name)}</option>' for p in paths)


def jobs_html(
    jobs: list[JobInfo],
    packs: Path,
    dashboard: str | None,
    message: str | None = None,
    token_file: Path | None = None,
) -> str:
    """The jobs page body: the dashboard link (with the file of the token it asks for, when
    the UI's own head has one), the start form, the last refusal or submission ``message``,
    and every touchstone job with its status."""
    rows = []
    for j in jobs:
        stop = (
            f'<form method="post" action="/jobs/{quote(j.job_id)}/stop">'
            '<button type="submit" class="stop">stop</button></form>'
            if j.status in ACTIVE
            else ""
        )
        started = time.strftime("%H:%M:%S", time.localtime(j.start_time)) if j.start_time else "—"
        rows.append(
            f'<tr data-job="{e(j.job_id)}"><td><a href="/jobs/{quote(j.job_id)}">{e(j.job_id)}</a>'
            f'</td><td>{e(j.kind)}</td><td class="status">{e(j.status)}</td>'
            f"<td>{e(', '.join(j.hosts) or '—')}</td><td>{started}</td>"
            f"<td><code>{e(j.entrypoint)}</code></td><td>{stop}</td></tr>"
        )
    note = f'<p id="job-message" class="err">{e(message)}</p>' if message else ""
    token = f" (its token: <code>{e(token_file)}</code>)" if token_file else ""
    link = (
        f'<p>Ray dashboard: <a href="{e(dashboard)}">{e(dashboard)}</a>{token}</p>'
        if dashboard
        else ""
    )
    return (
        "<h1>Jobs</h1>"
        + link
        + '<form method="post" action="/jobs/start" id="start-eval"><h2>Start an eval</h2>'
        '<input type="hidden" name="kind" value="eval">'
        f'<label>pack<br><select name="pack">{_options(pack_files(packs))}</select></label> '
        "<label>fleet config (under --runs or the packs folder)<br>"
        '<input name="config" size="60"></label> '
        '<button type="submit">start eval</button></form>'
        '<form method="post" action="/jobs/start" id="start-perf"><h2>Start a perf run</h2>'
        '<input type="hidden" name="kind" value="perf">'
        '<label>fleet config<br><input name="config" size="60"></label> '
        '<button type="submit">start perf</button></form>'
        '<form method="post" action="/jobs/start" id="start-judge"><h2>Start a judge run</h2>'
        '<input type="hidden" name="kind" value="judge">'
        '<label>bundle<br><input name="bundle" size="60"></label> '
        '<label>judge config<br><input name="judge_config" size="60"></label> '
        '<button type="submit">start judge</button></form>'
        + note
        + '<h2>Jobs on the cluster</h2><table id="jobs"><thead><tr><th>job</th><th>kind</th>'
        "<th>status</th><th>hosts</th><th>started</th><th>entrypoint</th><th></th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def job_html(job_id: str, judge_live: str | None = None) -> str:
    """One job's page: status and logs, streamed from ``/jobs/<id>/events``; a judge job's
    links its bundle's judges live page (``judge_live``, its address)."""
    jid = quote(job_id)
    live = f' · <a id="judges-live" href="{e(judge_live)}">judges live</a>' if judge_live else ""
    return (
        f'<h1>Job {e(job_id)}</h1><p><a href="/jobs">all jobs</a>{live}</p>'
        f'<div id="job" data-events="/jobs/{jid}/events"><p>status '
        '<span id="job-status" class="badge">…</span></p><pre id="job-log"></pre></div>'
    )
