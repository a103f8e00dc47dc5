"""Eval, perf and judge runs started through the UI's jobs endpoint run for real as Ray jobs
on the local head the UI starts (``ray start --head``, dashboard on 127.0.0.1): the eval's
bundle completes, then a perf run of a simulated fleet and a judge run with a simulated judge
go at once (a judge holds no host) and write ``summary.json`` and ``scorecard.json``; the judge
job's page links the judges' live page of its bundle. Each
bundle records the dashboard of the cluster it ran on, which is the UI's head, and the live
page links it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from test_ui_live import PACK, PROMPTS
from ui_helpers import UiServer, ui_server

from touchstone_ray.perf.plan import runs_at

FLEET: dict[str, Any] = {
    "ray": {"include_dashboard": False},
    "models": [
        {
            "id": "sim-run",
            "engine": "simulated",
            "concurrency": 2,
            "sim": {"ttft_ms": 5, "tps": 2000, "answer_tokens": 20},
        }
    ],
    "scheduling": {"warmup": False},
    "monitor": {"interval_s": 0.5},
}
JUDGE: dict[str, Any] = {
    "judges": [
        {
            "id": "sim-judge",
            "engine": "simulated",
            "model": "sim-judge",
            "concurrency": 2,
            "sim": {"ttft_ms": 1, "tps": 20000},
        }
    ]
}
PERF_CONTEXTS, PERF_CONCURRENCY, PERF_RUNS = (1024, 4096), (1, 2, 4), 8
"""What a perf job from the page runs: ``touchstone-ray perf``'s defaults."""
DONE = ("SUCCEEDED", "FAILED", "STOPPED")


def start(server: UiServer, **form: str) -> str:
    """POST the start form; returns the job id the UI redirected to."""
    resp = httpx.post(
        server.url + "/jobs/start",
        data=form,
        headers={"Origin": server.url},
        timeout=300,
        follow_redirects=False,
    )
    assert resp.status_code == 303, resp.text[-2000:]
    location = resp.headers["Location"]
    assert location.startswith(f"/jobs/touchstone-{form['kind']}-")
    return location.rsplit("/", 1)[1]


def statuses(server: UiServer) -> dict[str, str]:
    """Job id → status, as the jobs page lists them."""
    html = httpx.get(server.url + "/jobs", timeout=60).text
    return dict(re.findall(r'<tr data-job="([^"]+)">.*?<td class="status">([A-Z]+)</td>', html))


def wait_done(server: UiServer, *job_ids: str, timeout: float = 240) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        now = statuses(server)
        if all(now.get(j) in DONE for j in job_ids) or time.monotonic() > deadline:
            return {j: now.get(j, "missing") for j in job_ids}
        time.sleep(1.0)


def job_log(server: UiServer, job_id: str) -> str:
    """The job's final log from its event stream (``end`` carries the whole log)."""
    with httpx.stream("GET", f"{server.url}/jobs/{job_id}/events", timeout=60) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                last = json.loads(line[6:])
    return str(last["logs"])


def one(runs: Path, pattern: str) -> Path:
    [found] = list(runs.glob(pattern))
    return found


def test_perf_and_judge_jobs_from_the_page_run_on_ray(tmp_path: Path, page: Any) -> None:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(PACK, allow_unicode=True), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    (packs / "judge.yaml").write_text(yaml.safe_dump(JUDGE), encoding="utf-8")
    with ui_server(runs, packs) as server:
        eval_id = start(server, kind="eval", pack="live.yaml", config="fleet.yaml")
        assert wait_done(server, eval_id) == {eval_id: "SUCCEEDED"}, job_log(server, eval_id)
        eval_bundle = one(runs, "*_eval_livepack")
        assert job_log(server, eval_id).strip().splitlines()[-1] == str(eval_bundle)

        perf_id = start(server, kind="perf", config="fleet.yaml")
        judge_id = start(server, kind="judge", bundle=str(eval_bundle), judge_config="judge.yaml")
        finished = wait_done(server, perf_id, judge_id)
        assert finished == {perf_id: "SUCCEEDED", judge_id: "SUCCEEDED"}, (
            job_log(server, perf_id)[-2000:] + job_log(server, judge_id)[-2000:]
        )

        page.goto(f"{server.url}/jobs/{perf_id}")
        assert page.locator("#judges-live").count() == 0
        page.goto(f"{server.url}/jobs/{judge_id}")
        page.locator("#judges-live").click()
        page.wait_for_url(f"**/judge-live/{eval_bundle.name}")
        card = page.locator('.judge-card[data-judge="sim-judge"]')
        assert card.locator(".progress").inner_text() == f"{PROMPTS}/{PROMPTS} answers"
        assert card.locator(".calibration").inner_text() == "calibration: none in the pack"
        assert page.locator("#judge-state").inner_text() == "done"

        perf_bundle = one(runs, "*_perf_fleet")
        assert job_log(server, perf_id).strip().splitlines()[-1] == str(perf_bundle)
        summary = json.loads((perf_bundle / "summary.json").read_text(encoding="utf-8"))
        points = {(p["context"], p["concurrency"]): p for p in summary["points"]}
        expected = {(str(c), n) for c in PERF_CONTEXTS for n in PERF_CONCURRENCY}
        expected |= {(f"{c}-cached", 1) for c in PERF_CONTEXTS}
        assert set(points) == expected
        for (_, conc), p in points.items():
            assert p["n"] == p["n_ok"] == runs_at(PERF_RUNS, conc)
        assert json.loads((perf_bundle / "bundle.json").read_text())["status"] == "done"

        card = json.loads((eval_bundle / "scorecard.json").read_text(encoding="utf-8"))
        assert card["judges"] == ["sim-judge"]
        assert [(r["model"], r["variant"]) for r in card["rows"]] == [("sim-run", "baseline")]
        assert card["rows"][0]["n_scored"] + card["rows"][0]["n_unscored"] == PROMPTS
        verdicts = (eval_bundle / "judgements" / "sim-judge" / "verdicts.jsonl").read_text()
        assert len(verdicts.splitlines()) == PROMPTS

        # the dashboard of the cluster the jobs ran on: the UI's own head
        jobs_html = httpx.get(server.url + "/jobs", timeout=60).text
        head = re.search(r'<p>Ray dashboard: <a href="(http://127\.0\.0\.1:\d+)">', jobs_html)
        assert head, jobs_html[:2000]
        for bundle in (eval_bundle, perf_bundle):
            manifest = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
            assert manifest["ray"]["dashboard_url"] == head[1]
            assert manifest["ray"]["embedded"] is False
        page.goto(f"{server.url}/live/{eval_bundle.name}")
        link = page.locator("#ray-dashboard")
        assert link.get_attribute("href") == head[1]
        assert link.inner_text() == "Ray dashboard"
        assert httpx.get(head[1], timeout=30).status_code == 200  # it is the live dashboard
