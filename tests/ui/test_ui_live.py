"""The live page while a real eval of a simulated fleet runs (a ``touchstone-ray eval``
subprocess with its own local Ray): progress grows through server-sent events, the failing
model's cells show up with their ``error_kind``, and the stream ends when the run is done; a run
whose Ray served no dashboard records ``ray.dashboard_url: null`` and the page links none."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from procs import stop_group
from ui_helpers import REPO, first_bundle_rel, packs_folder, shot, ui_server

PROMPTS = 4
PACK: dict[str, Any] = {
    "id": "livepack",
    "title": "Live",
    "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
    "dimensions": [{"id": "Q1", "name": "Korrektheit", "weight": 1}],
    "ko_rule": {"dimension": "Q1"},
    "prompt_variants": [{"id": "baseline", "system_prompt": "Sei knapp."}],
    "categories": [
        {
            "id": "A",
            "name": "Alpha",
            "prompts": [
                {"id": f"A{i}", "title": "t", "prompt": f"Frage {i}: was ist zu tun?"}
                for i in range(1, PROMPTS + 1)
            ],
        }
    ],
}
FLEET: dict[str, Any] = {
    "ray": {"include_dashboard": False},
    "models": [
        {
            "id": "sim-broken",
            "engine": "simulated",
            "concurrency": 1,
            "sim": {"ttft_ms": 5, "tps": 1000, "answer_tokens": 5, "fail_rate": 1.0},
        },
        {
            "id": "sim-steady",
            "engine": "simulated",
            "concurrency": 1,
            "sim": {"ttft_ms": 300, "tps": 10, "answer_tokens": 20},
        },
    ],
    "scheduling": {"warmup": False, "max_attempts": 1},
    "monitor": {"interval_s": 0.3},
}


def _progress(page: Any) -> tuple[int, int, int]:
    """``(finished, planned, failed)`` of the only host card."""
    text = page.locator(".host-card .progress").inner_text()
    m = re.fullmatch(r"(\d+)/(\d+) cells \((\d+) ok, (\d+) failed\)", text)
    assert m, text
    return int(m[1]), int(m[2]), int(m[4])


def test_live_page_follows_a_running_eval(tmp_path: Path, page: Any) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    pack = tmp_path / "live.yaml"
    pack.write_text(yaml.safe_dump(PACK, allow_unicode=True), encoding="utf-8")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({**FLEET, "out": str(runs)}), encoding="utf-8")
    ray_tmp = tempfile.mkdtemp(prefix="uiray", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "HOME": ray_tmp}
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(name, None)
    with ui_server(runs, packs_folder(tmp_path)) as server:
        args = ["eval", "--pack", str(pack), "--config", str(fleet)]
        run = subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO,
        )
        try:
            rel = first_bundle_rel(server, run)
            page.goto(f"{server.url}/live/{rel}")
            page.locator(".host-card").wait_for(timeout=60_000)
            # the broken model runs first: its 4 cells fail with http_5xx (so the run ends
            # "failed": some cells have no ok record)
            page.wait_for_function(
                "() => /4 failed/.test(document.querySelector('.host-card .failed')"
                "?.textContent || '')",
                timeout=60_000,
            )
            first = _progress(page)
            assert first[1] == 2 * PROMPTS
            kinds = page.locator(".host-card .failure-kinds").inner_text()
            assert kinds == "failures: http_5xx × 4"
            assert page.locator(".host-card .failures li").count() == 4
            assert "sim-broken|baseline|A1|1" in page.locator(".host-card .failures").inner_text()
            shot(page, "live")
            page.wait_for_function(
                "() => document.getElementById('live-state')?.textContent === 'failed'",
                timeout=90_000,
            )
            last = _progress(page)
            assert last == (2 * PROMPTS, 2 * PROMPTS, 4)
            assert last[0] > first[0]
            assert page.locator(".host-card svg.spark").count() >= 1
            assert run.wait(timeout=60) == 1
            # the run's local Ray served no dashboard: bundle.json says so, and no link
            manifest = json.loads((runs / rel / "bundle.json").read_text(encoding="utf-8"))
            assert manifest["ray"]["dashboard_url"] is None
            page.goto(f"{server.url}/live/{rel}")
            assert page.locator("#live-state").inner_text() == "failed"
            assert page.locator("#ray-dashboard").count() == 0
            assert "Ray dashboard" not in page.content()
        finally:
            stop_group(run, timeout_s=30)  # SIGKILL if SIGTERM did not end it
