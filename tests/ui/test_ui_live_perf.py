"""The live page of a perf bundle: a real ``touchstone-ray perf`` subprocess (its own local
Ray) against a simulated fleet of two models on one host, one failing every request; the page
follows it through server-sent events, and ``live_state`` gives exactly the requests the plan
implies, done and failed. A copy cut mid-run (the points shard torn after the first point of
the second model, the event log cut there) shows the partial counts, the point in flight and
``running`` or ``crashed`` as the overview says."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from procs import stop_group
from ui_helpers import REPO, UiServer, first_bundle_rel, packs_folder, shot, ui_server

from touchstone_ray.bundle import STALE_AFTER_S, Bundle
from touchstone_ray.config import load_config
from touchstone_ray.errors import BundleError
from touchstone_ray.perf.plan import plan_points, runs_at
from touchstone_ray.ui.live import live_state

CONTEXTS, CONCURRENCY, RUNS = [256], [1, 2], 2
SLO = "ttft=1,tpot=0.2"
"""The capacity search's SLO: met up to the 2 slots (a third stream waits 1.6 s for its first
token), never by the failing model."""
FLEET: dict[str, Any] = {
    "ray": {"include_dashboard": False},
    "models": [
        {
            "id": "sim-broken",
            "engine": "simulated",
            "sim": {"ttft_ms": 5, "tps": 1000, "answer_tokens": 400, "fail_rate": 1.0},
        },
        {  # 16 tokens at 10 tok/s: 1.6 s a request; a stream beyond the 2 slots waits one
            "id": "sim-steady",
            "engine": "simulated",
            "sim": {"ttft_ms": 20, "tps": 10, "answer_tokens": 400, "slots": 2},
        },
    ],
    "scheduling": {"warmup": False, "max_attempts": 1},
    "monitor": {"interval_s": 0.3},
}


def planned(config: Path) -> dict[tuple[str, str, int], int]:
    """``(model, context label, concurrency)`` → requests planned, from the perf plan."""
    plans = plan_points(load_config(config), CONTEXTS, CONCURRENCY, RUNS)
    return {
        (p.model, p.context_label, p.concurrency): p.runs
        for models in plans.values()
        for m in models
        for p in m.points
    }


@pytest.fixture(scope="module")
def perf_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiServer, Any, Path]]:
    """The UI over a runs folder and a perf run writing into it (started, not awaited)."""
    tmp = Path(tmp_path_factory.mktemp("liveperf"))
    runs = tmp / "runs"
    runs.mkdir()
    fleet = tmp / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({**FLEET, "out": str(runs)}), encoding="utf-8")
    ray_tmp = tempfile.mkdtemp(prefix="uipf", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "HOME": ray_tmp}
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(name, None)
    args = ["perf", "--config", str(fleet), "--contexts", "256", "--concurrency", "1,2"]
    args += ["--runs", str(RUNS), "--output-tokens", "16", "--capacity", "--slo", SLO]
    with ui_server(runs, packs_folder(tmp)) as server:
        run = subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO,
        )
        try:
            yield server, run, fleet
        finally:
            stop_group(run, timeout_s=30)  # SIGKILL if SIGTERM did not end it


def extra_requests(bundle: Path) -> int:
    """Requests the capacity search ran beyond the plan: each concurrency it tried that the
    plan does not have, ``runs_at(RUNS, c)`` requests (from ``bundle.json`` ``capacity``)."""
    manifest = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    return sum(
        runs_at(RUNS, p["concurrency"])
        for entry in manifest["capacity"].values()
        for p in entry["points"]
        if p["concurrency"] not in CONCURRENCY
    )


def finished_bundle(run: Any) -> Path:
    """The bundle of the perf run once it exited (1: the broken model's requests failed)."""
    out, _ = run.communicate(timeout=240)
    assert run.returncode == 1, out
    bundle = Path(out.strip().splitlines()[-1])
    assert f"perf failed: {6 + extra_requests(bundle)} ok, 6 failed, 0 points reused" in out
    return bundle


def server_runs(server: UiServer) -> Path:
    """The runs folder the UI serves (from its command line)."""
    args = server.proc.args
    assert isinstance(args, list)
    return Path(args[args.index("--runs") + 1])


def _progress(page: Any) -> tuple[int, int, int, int]:
    """``(finished, planned, ok, failed)`` of the only host card."""
    text = page.locator(".host-card .progress").inner_text()
    m = re.fullmatch(r"(\d+)/(\d+) requests \((\d+) ok, (\d+) failed\)", text)
    assert m, text
    return int(m[1]), int(m[2]), int(m[3]), int(m[4])


def test_live_page_follows_a_running_perf(perf_run: tuple[UiServer, Any, Path], page: Any) -> None:
    """Runs first in this module: it must see the run before it ends."""
    server, run, fleet = perf_run
    total = sum(planned(fleet).values())
    assert total == 12  # 2 models × (256-cached, 256 × 1, 256 × 2) × 2 runs
    rel = first_bundle_rel(server, run)
    page.goto(f"{server.url}/live/{rel}")
    assert page.locator("p.err").count() == 0
    assert page.locator("a[href^='/run/']").get_attribute("href") == f"/run/{rel}"
    page.locator(".host-card").wait_for(timeout=60_000)
    assert page.locator(".host-card h3").inner_text() == "local"
    # the broken model runs first: its 6 requests fail with http_5xx
    page.wait_for_function(
        "() => /6 failed/.test(document.querySelector('.host-card .failed')?.textContent || '')",
        timeout=60_000,
    )
    first = _progress(page)
    assert first[1] == total and first[3] == 6 and first[0] < total
    assert page.locator(".host-card .failure-kinds").inner_text() == "failures: http_5xx × 6"
    assert page.locator(".host-card .failures li").count() == 5  # the last five
    shot(page, "live-perf")
    page.wait_for_function(
        "() => document.getElementById('live-state')?.textContent === 'failed'",
        timeout=120_000,
    )
    assert _progress(page) == (total, total, 6, 6)
    extra = extra_requests(server_runs(server) / rel)
    assert extra >= 2  # the search went beyond the planned concurrency 2
    assert page.locator(".host-card .extra").inner_text() == (
        f"+{extra} requests beyond the plan (capacity search)"
    )
    assert page.locator(".host-card .in-flight").inner_text() == "0"
    assert page.locator(".host-card svg.spark").count() >= 1
    assert page.locator("#ray-dashboard").count() == 0  # the config turned it off
    # ended (summary.json is written before the final status): the perf report's sections
    page.goto(f"{server.url}/run/{rel}")
    assert page.locator("p.err").count() == 0
    headings = page.locator(".report h2").all_inner_texts()
    assert headings[:2] == ["TTFT vs context", "Throughput per user vs total throughput"]
    assert "Points" in headings
    assert page.locator("table#points tbody tr").count() == len(
        json.loads((server_runs(server) / rel / "summary.json").read_text("utf-8"))["points"]
    )


def test_result_page_of_a_running_perf_says_so(tmp_path: Path) -> None:
    """``/run/<perf bundle>`` of a run still writing: one line, not the loader's error."""
    from touchstone_ray.ui.result import perf_result_html

    root = tmp_path / "perf-x"
    root.mkdir()
    (root / "bundle.json").write_text(json.dumps({"kind": "perf", "status": "running"}), "utf-8")
    with pytest.raises(BundleError) as err:
        perf_result_html(root)
    assert str(err.value) == (
        "perf-x: the perf run is still going; its result is shown here when it ends"
    )


def test_live_state_counts_the_plan_and_a_cut_copy(
    perf_run: tuple[UiServer, Any, Path], tmp_path: Path
) -> None:
    _, run, fleet = perf_run
    bundle = finished_bundle(run)
    plan = planned(fleet)
    total = sum(plan.values())
    live = live_state(bundle)
    assert live.state == "failed"
    [hp] = live.hosts
    extra = extra_requests(bundle)
    assert (hp.host, hp.planned, hp.ok, hp.failed, hp.extra) == ("local", total, 6, 6, extra)
    assert hp.failures_by_kind == {"http_5xx": 6}
    broken = (bundle / "points" / "sim-broken.jsonl").read_text(encoding="utf-8").splitlines()
    assert [f["key"] for f in hp.last_failures] == [json.loads(x)["key"] for x in broken][-5:]
    assert {f["error_kind"] for f in hp.last_failures} == {"http_5xx"}
    assert (hp.in_flight, hp.current_model, hp.current_point, hp.eta_s) == (0, None, None, None)
    assert hp.series["ram"] and all(v > 0 for v in hp.series["ram"])

    # a copy cut after the steady model's first point (the cached one): its shard keeps that
    # point's two requests and a torn half line, the event log ends at that point_done
    cut = tmp_path / bundle.name
    shutil.copytree(bundle, cut)
    manifest = json.loads((cut / "bundle.json").read_text(encoding="utf-8"))
    manifest.update(status="running", finished_at=None)
    (cut / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    shard = cut / "points" / "sim-steady.jsonl"
    lines = shard.read_text(encoding="utf-8").splitlines(keepends=True)
    assert [json.loads(x)["key"] for x in lines[:2]] == [
        "sim-steady|local|256-cached|1|1",
        "sim-steady|local|256-cached|1|2",
    ]
    shard.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2], encoding="utf-8")
    events = (cut / "events.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(
        i
        for i, x in enumerate(events)
        if json.loads(x).get("point") == "sim-steady|local|256-cached|1"
    )
    (cut / "events.jsonl").write_text("".join(events[: at + 1]), encoding="utf-8")
    t0 = next(json.loads(x)["ts"] for x in events if json.loads(x)["event"] == "model_start")
    last = Bundle(cut).last_write()
    assert last is not None

    now = last + 1.0
    live = live_state(cut, now=now)
    assert live.state == "running"
    [hp] = live.hosts
    done = 6 + plan[("sim-steady", "256-cached", 1)]
    assert (hp.planned, hp.ok, hp.failed) == (total, 2, 6)
    assert hp.ok + hp.failed == done == 8
    assert hp.current_model == "sim-steady"
    assert hp.current_point == "context 256 · concurrency 1"
    assert hp.in_flight == 1
    assert hp.eta_s == pytest.approx((total - done) / (done / (now - t0)))

    live = live_state(cut, now=last + STALE_AFTER_S + 1.0)
    assert live.state == "crashed"
    [hp] = live.hosts
    assert (hp.planned, hp.ok, hp.failed) == (total, 2, 6)
    assert (hp.in_flight, hp.current_model, hp.current_point, hp.eta_s) == (0, None, None, None)

    # without the recorded points the plan is made again from config.yaml and settings
    del manifest["points"]
    (cut / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    [hp] = live_state(cut, now=last + 1.0).hosts
    assert (hp.planned, hp.ok, hp.failed) == (total, 2, 6)

    # cut after the steady model's planned points: its capacity search is in flight, how
    # many requests it has out is not known; after its capacity event nothing is planned
    shard.write_text("".join(lines[:6]), encoding="utf-8")
    assert {json.loads(x)["key"].rsplit("|", 1)[0] for x in lines[:6]} == {
        f"sim-steady|local|{c}|{n}" for (m, c, n) in plan if m == "sim-steady"
    }
    last_point = next(
        i for i, x in enumerate(events) if json.loads(x).get("point") == "sim-steady|local|256|2"
    )
    (cut / "events.jsonl").write_text("".join(events[: last_point + 1]), encoding="utf-8")
    [hp] = live_state(cut, now=time.time()).hosts
    assert (hp.ok, hp.failed, hp.extra, hp.eta_s) == (6, 6, 0, None)
    assert (hp.current_model, hp.current_point, hp.in_flight) == (
        "sim-steady",
        "capacity search",
        None,
    )
    searched = next(
        i
        for i, x in enumerate(events)
        if json.loads(x)["event"] == "capacity" and json.loads(x)["model"] == "sim-steady"
    )
    (cut / "events.jsonl").write_text("".join(events[: searched + 1]), encoding="utf-8")
    [hp] = live_state(cut, now=time.time()).hosts
    assert (hp.current_model, hp.current_point, hp.in_flight) == ("sim-steady", None, 0)

    # a line that is not a perf request: one line naming the bundle
    with open(shard, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"key": "sim-steady|local|256|9|1", "ok": True}) + "\n")
    with pytest.raises(BundleError) as exc:
        live_state(cut)
    assert str(exc.value).startswith(f"{cut}: a request line is not a perf record: ")
