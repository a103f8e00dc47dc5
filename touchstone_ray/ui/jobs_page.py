"""The HTML of the jobs pages: the start forms (issue 31 item 1: an eval's with models, what
their endpoints serve, variants, limit, a chained judge and the command), the job list with
stop buttons, one job's log view (filled by server-sent events), and a result page's next
steps (Resume, Judge)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote

from touchstone_ray.errors import TouchstoneError
from touchstone_ray.lang import ui_labels
from touchstone_ray.ui._page import e
from touchstone_ray.ui.jobs import ACTIVE, JobInfo
from touchstone_ray.ui.packs import pack_files
from touchstone_ray.ui.start import RESUMABLE, judge_config_files, resume_plan

__all__ = ["JS_LABELS", "job_html", "jobs_html", "run_actions"]


def _options(paths: list[Path], empty: bool = False) -> str:
    blank = '<option value="">—</option>' if empty else ""
    return blank + "".join(f'<option value="{e(p)}">{e(p.name)}</option>' for p in paths)


def _datalist(paths: list[Path]) -> str:
    return "".join(f'<option value="{e(p)}">' for p in paths)


JS_LABELS = (
    "serves",
    "serves_none",
    "not_served",
    "unreachable",
    "preflight_running",
    "preflight_job",
)
"""The labels ``start.js`` writes into the form (with its ``{served}``, ``{error}``)."""


def _start_eval(packs: Path, lang: str, configs: list[Path], judge_configs: list[Path]) -> str:
    """The start form of an eval: pack, fleet config, the models with what their endpoints
    serve (filled by ``start.js`` from ``/jobs/choices`` and the hosts preflight job), the
    variants, ``--limit``, a judge config to chain, and the exact command it starts."""
    u = ui_labels(lang)
    texts = e(json.dumps({k: u[k] for k in JS_LABELS}))
    return (
        f'<form method="post" action="/jobs/start" id="start-eval" data-labels="{texts}">'
        f"<h2>{e(u['start_eval'])}</h2>"
        '<input type="hidden" name="kind" value="eval">'
        '<div style="display:flex;gap:.8rem;align-items:end;flex-wrap:wrap">'
        f'<label>{e(u["f_pack"])}<br><select name="pack">{_options(pack_files(packs))}</select>'
        f'</label><label>{e(u["f_config"])}<br><input name="config" size="60" '
        f'list="config-files" autocomplete="off"></label>'
        f'<datalist id="config-files">{_datalist(configs)}</datalist>'
        f'<label>{e(u["f_limit"])}<br><input name="limit" id="start-limit" size="6"></label>'
        f'<label>{e(u["f_then_judge"])}<br><select name="judge_config" id="start-then-judge">'
        f"{_options(judge_configs, empty=True)}</select></label></div>"
        f'<fieldset id="start-models"><legend>{e(u["models_legend"])}</legend></fieldset>'
        f'<p id="preflight-state" class="muted"></p><ul id="preflight-problems" class="err"></ul>'
        f'<fieldset id="start-variants"><legend>{e(u["variants_legend"])}</legend></fieldset>'
        f'<p id="start-error" class="err"></p>'
        f'<p>{e(u["command"])}: <code id="start-command"></code></p>'
        f'<button type="submit">{e(u["start_eval_button"])}</button></form>'
    )


def jobs_html(
    jobs: list[JobInfo],
    packs: Path,
    dashboard: str | None,
    message: str | None = None,
    token_file: Path | None = None,
    *,
    lang: str = "en",
    configs: list[Path] | None = None,
    judge_configs: list[Path] | None = None,
) -> str:
    """The jobs page body in ``lang``: the dashboard link (with the file of the token it asks
    for, when the UI's own head has one), the start forms (an eval's with its models, served
    models, variants, limit, chained judge and command; ``configs`` and ``judge_configs`` are
    the files offered), the last refusal or submission ``message``, and every touchstone job
    with its status (an eval's chained judge config beside it)."""
    u = ui_labels(lang)
    rows = []
    for j in jobs:
        stop = (
            f'<form method="post" action="/jobs/{quote(j.job_id)}/stop">'
            f'<button type="submit" class="stop">{e(u["stop"])}</button></form>'
            if j.status in ACTIVE
            else ""
        )
        started = time.strftime("%H:%M:%S", time.localtime(j.start_time)) if j.start_time else "—"
        chained = (
            f'<br><span class="then-judge muted">'
            f"{e(u['then_judge'].format(file=Path(j.then_judge).name))}</span>"
            if j.then_judge
            else ""
        )
        rows.append(
            f'<tr data-job="{e(j.job_id)}"><td><a href="/jobs/{quote(j.job_id)}">{e(j.job_id)}</a>'
            f'</td><td>{e(j.kind)}</td><td class="status">{e(j.status)}</td>'
            f"<td>{e(', '.join(j.hosts) or '—')}</td><td>{started}</td>"
            f"<td><code>{e(j.entrypoint)}</code>{chained}</td><td>{stop}</td></tr>"
        )
    note = f'<p id="job-message" class="err">{e(message)}</p>' if message else ""
    token = f" (its token: <code>{e(token_file)}</code>)" if token_file else ""
    link = (
        f'<p>{e(u["dashboard"])}: <a href="{e(dashboard)}">{e(dashboard)}</a>{token}</p>'
        if dashboard
        else ""
    )
    heads = "".join(
        f"<th>{e(u[k])}</th>"
        for k in ("h_job", "h_kind", "h_status", "h_hosts", "h_started", "h_entrypoint")
    )
    return (
        f"<h1>{e(u['jobs_title'])}</h1>"
        + link
        + note
        + _start_eval(packs, lang, configs or [], judge_configs or [])
        + f'<form method="post" action="/jobs/start" id="start-perf"><h2>{e(u["start_perf"])}'
        '</h2><input type="hidden" name="kind" value="perf">'
        f'<label>{e(u["f_config"])}<br><input name="config" size="60" list="config-files">'
        f'</label> <button type="submit">{e(u["start_perf_button"])}</button></form>'
        f'<form method="post" action="/jobs/start" id="start-judge"><h2>{e(u["start_judge"])}'
        '</h2><input type="hidden" name="kind" value="judge">'
        f'<label>{e(u["f_bundle"])}<br><input name="bundle" size="60"></label> '
        f'<label>{e(u["f_judge_config"])}<br><input name="judge_config" size="60" '
        'list="judge-files"></label>'
        f'<datalist id="judge-files">{_datalist(judge_configs or [])}</datalist> '
        f'<button type="submit">{e(u["start_judge_button"])}</button></form>'
        f'<h2>{e(u["jobs_on_cluster"])}</h2><table id="jobs"><thead><tr>{heads}<th></th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def run_actions(root: Path, runs: Path, lang: str, *bases: Path) -> str:
    """The result page's next steps for the bundle ``root`` (under ``runs``), in ``lang``: a
    Resume button for a crashed or failed run (``POST /jobs/resume``: its ``eval --resume``,
    or ``perf --resume``, as a job), a Judge button with a judge config chosen from the files
    under ``bases`` (``--runs``, the packs folder) for an eval bundle that is done or failed
    and has no scorecard (``POST /jobs/start``, kind ``judge``); empty otherwise."""
    from touchstone_ray.bundle import Bundle

    u = ui_labels(lang)
    bundle = Bundle(root)
    try:
        state, kind = bundle.run_state(), bundle.kind()
        resume = resume_plan(root).line if state in RESUMABLE else ""
    except TouchstoneError:
        return ""
    rel = e(root.relative_to(runs).as_posix())
    parts = []
    if state in RESUMABLE:
        parts.append(
            '<form method="post" action="/jobs/resume" id="resume-run">'
            f'<input type="hidden" name="bundle" value="{rel}">'
            f'<button type="submit" id="resume-button">{e(u["resume_button"])}</button> '
            f'<span class="muted">{e(u["resume_note"].format(command=resume))}</span></form>'
        )
    if (
        kind == "eval"
        and state in ("done", "failed")
        and not bundle.layout.scorecard_json.is_file()
    ):
        found = judge_config_files(*bases)
        if found:
            parts.append(
                '<form method="post" action="/jobs/start" id="judge-run">'
                '<input type="hidden" name="kind" value="judge">'
                f'<input type="hidden" name="bundle" value="{rel}">'
                f'<label>{e(u["f_judge_config"])} <select name="judge_config" '
                f'id="judge-config">{_options(found)}</select></label> '
                f'<button type="submit" id="judge-button">{e(u["judge_button"])}</button></form>'
            )
        else:
            parts.append(f'<p class="muted" id="judge-run">{e(u["no_judge_configs"])}</p>')
    if not parts:
        return ""
    return f'<section id="run-actions"><h2>{e(u["run_actions"])}</h2>{"".join(parts)}</section>'


def job_html(job_id: str, judge_live: str | None = None, lang: str = "en") -> str:
    """One job's page in ``lang``: status and logs, streamed from ``/jobs/<id>/events``; a
    judge job's links its bundle's judges live page (``judge_live``, its address)."""
    u = ui_labels(lang)
    jid = quote(job_id)
    live = (
        f' · <a id="judges-live" href="{e(judge_live)}">{e(u["judges_live"])}</a>'
        if judge_live
        else ""
    )
    return (
        f"<h1>{e(u['job_title'].format(id=job_id))}</h1>"
        f'<p><a href="/jobs">{e(u["all_jobs"])}</a>{live}</p>'
        f'<div id="job" data-events="/jobs/{jid}/events"><p>{e(u["live_status"])} '
        '<span id="job-status" class="badge">…</span></p><pre id="job-log"></pre></div>'
    )
