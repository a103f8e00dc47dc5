"""Start and stop from the page as Ray jobs: the UI starts its own local Ray head (no
``--address``), an eval submitted from the form runs as a job and its bundle completes, a
second eval on the same hosts waits in the UI's queue while the first is active (no 409) and
runs as the queue job once the first ended, and a job stopped from the page ends STOPPED."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import yaml
from test_ui_live import PACK
from ui_helpers import shot, ui_server

FLEET: dict[str, Any] = {
    "ray": {"include_dashboard": False},
    "models": [
        {
            "id": "sim-job",
            "engine": "simulated",
            "concurrency": 1,
            "sim": {"ttft_ms": 200, "tps": 10, "answer_tokens": 20},
        }
    ],
    "scheduling": {"warmup": False},
    "monitor": {"interval_s": 0.5},
}


def test_eval_started_from_the_page_runs_as_a_ray_job(tmp_path: Path, page: Any) -> None:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(PACK, allow_unicode=True), encoding="utf-8")
    config = packs / "fleet.yaml"
    config.write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    with ui_server(runs, packs) as server:
        page.set_default_timeout(120_000)
        page.goto(server.url + "/jobs")
        page.select_option('#start-eval select[name="pack"]', str(packs.resolve() / "live.yaml"))
        page.fill('#start-eval input[name="config"]', "fleet.yaml")
        page.click('#start-eval button[type="submit"]')
        page.wait_for_url("**/jobs/touchstone-eval-*")
        job_id = page.url.rsplit("/", 1)[1]
        # a second eval on the same (unpinned) hosts while the first is active: queued
        second = httpx.post(
            server.url + "/jobs/start",
            data={"kind": "eval", "pack": "live.yaml", "config": "fleet.yaml"},
            headers={"Origin": server.url},
            timeout=60,
            follow_redirects=False,
        )
        assert (second.status_code, second.headers["Location"]) == (
            303,
            "/queue?queued=eval-fleet-1",
        )
        page.wait_for_function(
            "() => document.getElementById('job-status').textContent === 'SUCCEEDED'",
            timeout=150_000,
        )
        log = page.locator("#job-log").inner_text()
        assert "\x1b" not in log
        assert "eval done: 4 ok, 0 failed, 0 reused in " in log
        bundle = log.strip().splitlines()[-1]
        assert Path(bundle).parent == runs.resolve()
        shot(page, "job")
        page.goto(server.url + "/")
        row = page.locator(f'tr[data-bundle="{Path(bundle).name}"]')
        assert row.locator(".badge").inner_text() == "done"
        # the queued eval ran once the first had ended, as the queue job
        page.goto(server.url + "/queue")
        page.wait_for_function(
            "() => document.querySelector('tr[data-entry=\"eval-fleet-1\"] .badge')"
            ".textContent === 'done'",
            timeout=240_000,
        )
        log = (runs / "queue" / "queue-state.jsonl").read_text(encoding="utf-8").splitlines()
        lines = [json.loads(line) for line in log]
        assert (lines[0]["event"], lines[0]["state"]) == ("entry_pending", "pending")
        began = next(line for line in lines if line["event"] == "entry_started")
        assert began["entry"] == "eval-fleet-1"
        first = json.loads((Path(bundle) / "bundle.json").read_text(encoding="utf-8"))
        assert began["ts"] >= first["finished_at"]
        # a job stopped from the page
        page.goto(server.url + "/jobs")
        page.select_option('#start-eval select[name="pack"]', str(packs.resolve() / "live.yaml"))
        page.fill('#start-eval input[name="config"]', str(config))
        page.click('#start-eval button[type="submit"]')
        page.wait_for_url("**/jobs/touchstone-eval-*")
        stopped_id = page.url.rsplit("/", 1)[1]
        assert stopped_id != job_id
        page.goto(server.url + "/jobs")
        page.locator(f'tr[data-job="{stopped_id}"] button.stop').click()
        page.wait_for_url(f"**/jobs/{stopped_id}")
        page.wait_for_function(
            "() => document.getElementById('job-status').textContent === 'STOPPED'",
            timeout=60_000,
        )
