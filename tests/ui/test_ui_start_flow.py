"""The start flow in the headless Chromium against real simulator endpoints (issue 31, item 1).

A ``touchstone-ray sim-server`` serves ``m-one`` and ``m-two`` over the OpenAI protocol; the
fleet config lists them and ``m-gone``, which that server does not serve. On the Jobs page one
picks the config, sees what each endpoint serves right now (the hosts preflight, run as a Ray
job on the UI's own head), ticks models and variants, sets ``--limit``, chains a judge config
and sees the exact command; the eval runs as a Ray job and the judge job follows it. Bad input
(no model ticked, a limit ≤ 0, a config that fails to load) is one line in the form and starts
nothing. A real eval killed with SIGKILL gets a Resume button on its result page that resumes
it as a job; the resumed, unjudged bundle gets a Judge button whose judge config is picked from
the files under ``--runs`` and the packs folder."""

from __future__ import annotations

import copy
import html
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from procs import stop_group
from test_ui_jobs_run import JUDGE, job_log, wait_done
from test_ui_live import PACK, PROMPTS
from ui_helpers import REPO, UiServer, free_port, shot, ui_server

TWO_VARIANTS: dict[str, Any] = copy.deepcopy(PACK)
TWO_VARIANTS["prompt_variants"].append({"id": "none", "system_prompt": None})
SERVED = ("m-one", "m-two")
SLOW_SIM = {"ttft_ms": 100, "tps": 10, "answer_tokens": 30}
"""A simulated model slow enough (about 3 s a cell) to be killed in the middle of a run."""
TIMEOUT_MS = 240_000


def fleet(port: int) -> dict[str, Any]:
    """The fleet config: three models on the simulator at ``port``, one of them not served."""
    url = f"http://127.0.0.1:{port}/v1"
    models = [{"id": m, "engine": "openai", "base_url": url} for m in (*SERVED, "m-gone")]
    return {
        "ray": {"include_dashboard": False},
        "models": models,
        "scheduling": {"warmup": False, "max_attempts": 1},
        "monitor": {"interval_s": 0.5},
    }


@pytest.fixture(scope="module")
def sim() -> Iterator[int]:
    """A real ``touchstone-ray sim-server`` on a free port, serving only :data:`SERVED`."""
    port = free_port()
    cmd = [sys.executable, "-m", "touchstone_ray.cli", "sim-server", "--api", "openai"]
    cmd += ["--port", str(port), "--models", ",".join(SERVED), "--ttft-ms", "5", "--tps", "2000"]
    cmd += ["--answer-tokens", "20"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1.0)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout
                time.sleep(0.2)
        yield port
    finally:
        stop_group(proc)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, sim: int) -> tuple[Path, Path]:
    """``(runs, packs)``: the pack with two variants, the fleet, a fleet that does not load,
    a slow simulated fleet (for the killed run) and a judge config under ``--runs``."""
    base = tmp_path_factory.mktemp("start")
    runs, packs = base / "runs", base / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "two.yaml").write_text(yaml.safe_dump(TWO_VARIANTS, allow_unicode=True), "utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(fleet(sim)), encoding="utf-8")
    (packs / "broken-fleet.yaml").write_text("models: [{id: x, engine: warp}]\n", "utf-8")
    slow = {
        "ray": {"include_dashboard": False},
        "models": [{"id": "m-slow", "engine": "simulated", "sim": SLOW_SIM}],
        "scheduling": {"warmup": False},
        "monitor": {"interval_s": 0.5},
    }
    (packs / "slow.yaml").write_text(yaml.safe_dump(slow), encoding="utf-8")
    (runs / "judge.yaml").write_text(yaml.safe_dump(JUDGE), encoding="utf-8")
    return runs.resolve(), packs.resolve()


@pytest.fixture(scope="module")
def server(folders: tuple[Path, Path]) -> Iterator[UiServer]:
    """The UI over :func:`folders`, with its own local Ray head once a job starts."""
    runs, packs = folders
    with ui_server(runs, packs) as ui:
        yield ui


def job_rows(server: UiServer) -> dict[str, tuple[str, str]]:
    """Job id → (kind, status), as the jobs page lists them."""
    html = httpx.get(server.url + "/jobs", timeout=60).text
    found = re.findall(
        r'<tr data-job="([^"]+)">.*?</td><td>([a-z]+)</td><td class="status">([A-Z]+)</td>', html
    )
    return {job: (kind, status) for job, kind, status in found}


def pick(page: Any, server: UiServer, packs: Path, config: str) -> None:
    """Open the Jobs page, choose the pack and type the fleet config's name."""
    page.goto(server.url + "/jobs")
    page.select_option('#start-eval select[name="pack"]', str(packs / "two.yaml"))
    page.fill('#start-eval input[name="config"]', config)


def refused(page: Any, server: UiServer, line: str) -> None:
    """The form shows ``line`` and a click on start sends nothing; the same form posted
    without the page's script is refused by the server with that line (HTTP 400)."""
    page.wait_for_function(
        "t => document.getElementById('start-error').textContent === t", arg=line
    )
    page.click('#start-eval button[type="submit"]')
    time.sleep(1.0)
    assert page.url == server.url + "/jobs"
    assert page.locator("#start-error").inner_text() == line
    form = page.evaluate(
        "() => new URLSearchParams(new FormData(document.getElementById('start-eval'))).toString()"
    )
    resp = httpx.post(
        server.url + "/jobs/start",
        content=form,
        headers={"Origin": server.url, "Content-Type": "application/x-www-form-urlencoded"},
        timeout=60,
        follow_redirects=False,
    )
    assert resp.status_code == 400
    assert f'<p id="job-message" class="err">{html.escape(line)}</p>' in resp.text


def test_bad_input_is_one_line_and_starts_nothing(
    server: UiServer, folders: tuple[Path, Path], page: Any
) -> None:
    _, packs = folders
    page.set_default_timeout(TIMEOUT_MS)
    pick(page, server, packs, "broken-fleet.yaml")
    line = page.locator("#start-error")
    page.wait_for_function("() => document.getElementById('start-error').textContent !== ''")
    text = line.inner_text()
    assert "broken-fleet.yaml" in text and "\n" not in text
    refused(page, server, text)
    assert page.locator("#start-models .choice").count() == 0
    assert job_rows(server) == {}  # nothing started: not even the UI's Ray head
    # a good config: the models come, and ticking none is refused
    pick(page, server, packs, "fleet.yaml")
    page.locator("#start-models .choice").nth(2).wait_for()
    for box in page.locator('#start-models input[type="checkbox"]').all():
        box.uncheck()
    refused(page, server, "models: tick at least one of m-one, m-two, m-gone")
    pick(page, server, packs, "fleet.yaml")
    page.locator("#start-models .choice").nth(2).wait_for()
    page.fill("#start-limit", "0")
    refused(page, server, "limit '0': expected a whole number of prompts ≥ 1")
    # only the preflight jobs of the good config ran; no eval
    assert {kind for kind, _ in job_rows(server).values()} <= {"hosts"}


def test_start_with_picked_models_variants_limit_and_a_chained_judge(
    server: UiServer, folders: tuple[Path, Path], page: Any
) -> None:
    runs, packs = folders
    page.set_default_timeout(TIMEOUT_MS)
    pick(page, server, packs, "fleet.yaml")
    served = page.locator('#start-models .choice[data-value="m-one"] .served')
    page.wait_for_function(
        "() => /serves/.test(document.querySelector("
        "'#start-models .choice[data-value=\"m-one\"] .served')?.textContent || '')"
    )
    assert served.inner_text() == "serves m-one, m-two"
    gone = page.locator('#start-models .choice[data-value="m-gone"] .served')
    page.wait_for_function(
        "() => /not served/.test(document.querySelector("
        "'#start-models .choice[data-value=\"m-gone\"] .served')?.textContent || '')"
    )
    assert gone.inner_text() == "not served (the server lists m-one, m-two)"
    assert page.locator("#preflight-problems li").all_inner_texts() == [
        "local: m-gone: not served (server lists ['m-one', 'm-two'])"
    ]
    preflight_job = page.locator("#preflight-state").get_attribute("data-job")
    # ``hosts`` exits 1 when a configured model is not served
    assert wait_done(server, preflight_job) == {preflight_job: "FAILED"}
    page.wait_for_function(
        "() => document.getElementById('preflight-state').textContent === 'preflight job: FAILED'"
    )
    variants = page.locator("#start-variants .choice").all_inner_texts()
    assert [v.strip() for v in variants] == ["baseline", "none"]
    page.uncheck('#start-models input[value="m-gone"]')
    page.uncheck('#start-variants input[value="none"]')
    page.fill("#start-limit", "2")
    page.select_option("#start-then-judge", str(runs / "judge.yaml"))
    expected = (
        f"touchstone-ray eval --pack {packs / 'two.yaml'} --config {packs / 'fleet.yaml'} "
        f"--out {runs} --models m-one,m-two --variants baseline --limit 2"
    )
    page.wait_for_function(
        "t => document.getElementById('start-command').textContent === t", arg=expected
    )
    assert page.locator("#start-error").inner_text() == ""
    shot(page, "start-form")
    page.click('#start-eval button[type="submit"]')
    page.wait_for_url("**/jobs/touchstone-eval-*")
    eval_id = page.url.rsplit("/", 1)[1]
    # the job runs the command the form showed; the chain is in the job's metadata, so a
    # reloaded page still names it
    page.goto(server.url + "/jobs")
    row = page.locator(f'tr[data-job="{eval_id}"]')
    assert row.locator("code").inner_text() == expected
    assert row.locator(".then-judge").inner_text() == "then judge: judge.yaml"
    assert wait_done(server, eval_id) == {eval_id: "SUCCEEDED"}, job_log(server, eval_id)
    bundle = Path(job_log(server, eval_id).strip().splitlines()[-1])
    judge_id = f"{eval_id}-judge"
    deadline = time.monotonic() + 60
    while judge_id not in job_rows(server) and time.monotonic() < deadline:
        time.sleep(1.0)
    assert wait_done(server, judge_id) == {judge_id: "SUCCEEDED"}, job_log(server, judge_id)
    assert job_rows(server)[judge_id][0] == "judge"
    card = json.loads((bundle / "scorecard.json").read_text(encoding="utf-8"))
    rows = sorted((r["model"], r["variant"]) for r in card["rows"])
    assert rows == [("m-one", "baseline"), ("m-two", "baseline")]
    keys = sorted(
        json.loads(line)["key"]
        for shard in (bundle / "responses").glob("*.jsonl")
        for line in shard.read_text(encoding="utf-8").splitlines()
    )
    assert keys == [f"{m}|baseline|A{i}|1" for m in SERVED for i in (1, 2)]
    # exactly one judge job however often the page is reloaded
    page.reload()
    assert [k for k, _ in job_rows(server).values()].count("judge") == 1


def kill_mid_run(runs: Path, packs: Path) -> Path:
    """A real eval of the slow fleet, killed with SIGKILL (its process group, its local Ray
    with it) once its first answer is on disk; its bundle."""
    out = runs / "killed"
    ray_tmp = tempfile.mkdtemp(prefix="uikill", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "HOME": ray_tmp}
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(name, None)
    args = ["eval", "--pack", str(packs / "two.yaml"), "--config", str(packs / "slow.yaml")]
    run = subprocess.Popen(
        [sys.executable, "-m", "touchstone_ray.cli", *args, "--out", str(out), "--limit", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            shards = list(out.glob("*/responses/*.jsonl"))
            if shards and shards[0].read_text(encoding="utf-8").strip():
                break
            time.sleep(0.2)
        assert run.poll() is None, run.stdout.read() if run.stdout else ""
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
    finally:
        stop_group(run)
    [bundle] = list(out.iterdir())
    return bundle


def test_resume_a_killed_run_then_judge_it_from_its_result_page(
    server: UiServer, folders: tuple[Path, Path], page: Any
) -> None:
    runs, packs = folders
    page.set_default_timeout(TIMEOUT_MS)
    bundle = kill_mid_run(runs, packs)
    manifest = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "running"  # no driver left to say otherwise
    # the run is crashed once its files are older than the staleness window (90 s): age them
    old = time.time() - 600
    for path in bundle.rglob("*"):
        os.utime(path, (old, old))
    rel = bundle.relative_to(runs).as_posix()
    page.goto(f"{server.url}/run/{rel}")
    assert page.locator("#judge-button").count() == 0
    note = page.locator("#resume-run .muted").inner_text()
    assert note == (
        f"runs touchstone-ray eval --pack {bundle / 'pack.yaml'} --config "
        f"{bundle / 'config.yaml'} --resume {bundle} --limit 2 as a job"
    )
    page.click("#resume-button")
    page.wait_for_url("**/jobs/touchstone-eval-*")
    resume_id = page.url.rsplit("/", 1)[1]
    assert wait_done(server, resume_id) == {resume_id: "SUCCEEDED"}, job_log(server, resume_id)
    manifest = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "done"
    oks = [
        json.loads(line)
        for line in (bundle / "responses" / "m-slow.jsonl").read_text().splitlines()
        if json.loads(line)["ok"]
    ]
    assert len({r["key"] for r in oks}) == 2 * 2  # 2 prompts × 2 variants, none lost
    # done and unjudged: Judge, with the judge configs under --runs and the packs folder
    page.goto(f"{server.url}/run/{rel}")
    assert page.locator("#resume-button").count() == 0
    options = page.locator("#judge-config option").evaluate_all("els => els.map(e => e.value)")
    assert options == [str(runs / "judge.yaml")]
    page.click("#judge-button")
    page.wait_for_url("**/jobs/touchstone-judge-*")
    judge_id = page.url.rsplit("/", 1)[1]
    assert wait_done(server, judge_id) == {judge_id: "SUCCEEDED"}, job_log(server, judge_id)
    assert (bundle / "scorecard.json").is_file()
    page.goto(f"{server.url}/run/{rel}")
    assert page.locator("#run-actions").count() == 0  # judged: nothing left to do
    assert PROMPTS == 4
