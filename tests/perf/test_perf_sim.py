"""``touchstone-ray perf`` end to end against simulated servers that queue (``slots``) and
slow down with the batch: the perf bundle (SPEC §7b), the capacity search finding exactly the
concurrency the simulator's parameters imply, bad flags, and SIGKILL then ``--resume``."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from procs import sigint_default

from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.perf.summary import counts_for_slo

REPO = Path(__file__).resolve().parents[2]
TPS = 100.0
SLOTS = 4
TTFT_SLO = 0.15
TPOT_SLO = 0.035
MODELS = {  # label → batch_slowdown
    "sim-tpot": 1.0,  # decoding limits it: (1 + 1.0 (c − 1)) / 100 ≤ 0.035 up to c = 3
    "sim-slots": 0.05,  # the 4 slots limit it: a 5th stream waits a whole request
}


def implied_capacity(slowdown: float) -> int:
    """Highest c with TPOT = (1 + x (c − 1)) / tps within the SLO, capped by the slots (a
    request beyond the slots waits a request's duration, far over the TTFT target)."""
    by_tpot = math.floor(1 + (TPS * TPOT_SLO - 1) / slowdown)
    return min(SLOTS, by_tpot)


def fleet(tmp: Path, models: dict[str, float], tps: float = TPS) -> Path:
    config = {
        "ray": {"include_dashboard": False},
        "models": [
            {
                "id": label,
                "engine": "simulated",
                "sim": {
                    "ttft_ms": 20,
                    "tps": tps,
                    "answer_tokens": 400,
                    "slots": SLOTS,
                    "batch_slowdown": x,
                },
            }
            for label, x in models.items()
        ],
        "scheduling": {"warmup": True},
        "monitor": {"interval_s": 0.5},
        "out": str(tmp / "runs"),
    }
    path = tmp / "simfleet.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    out = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    ray_tmp = tempfile.mkdtemp(prefix="trp", dir="/tmp")  # short: socket path limit
    out.update(HOME=str(home), RAY_TMPDIR=ray_tmp)
    return out


def cli(tmp: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "perf", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(tmp),
        cwd=REPO,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def capacity_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    tmp = Path(tmp_path_factory.mktemp("perfcap"))
    config = fleet(tmp, MODELS)
    done = cli(
        tmp,
        "--config",
        str(config),
        "--contexts",
        "64",
        "--concurrency",
        "1,2",
        "--output-tokens",
        "16",
        "--runs",
        "3",
        "--capacity",
        "--slo",
        f"ttft={TTFT_SLO},tpot={TPOT_SLO}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bundle = Path(done.stdout.strip().splitlines()[-1])
    yield bundle, done.stdout, done.stderr


def test_capacity_is_what_the_simulator_implies(capacity_run: tuple[Path, str, str]) -> None:
    bundle, stdout, _ = capacity_run
    summary = json.loads((bundle / "summary.json").read_text())
    for label, slowdown in MODELS.items():
        expected = implied_capacity(slowdown)
        entry = summary["capacity"][f"{label}|local"]
        assert entry["capacity"] == expected, entry["tried"]
        line = (
            f"{label} on local: {expected} users at once with TTFT < {TTFT_SLO:g} s and "
            f"≥ {1 / TPOT_SLO:g} tok/s for 90 %"
        )
        assert line in stdout.splitlines()
        tried = {int(c): share for c, share in entry["tried"].items()}
        assert tried[expected] >= 0.9 and tried[expected + 1] < 0.9
    assert implied_capacity(MODELS["sim-tpot"]) == 3  # the two limits differ
    assert implied_capacity(MODELS["sim-slots"]) == 4


def test_capacity_points_listed_in_bundle_json(capacity_run: tuple[Path, str, str]) -> None:
    """Each probed concurrency with its SLO-hit share and whether it met the 90 %, in the
    order the search tried them, in ``bundle.json`` and ``summary.json`` alike; each share is
    the one its point's stored requests give."""
    bundle, _, _ = capacity_run
    manifest = json.loads((bundle / "bundle.json").read_text())
    summary = json.loads((bundle / "summary.json").read_text())
    requests = [r for label in MODELS for r in lines(bundle / "points" / f"{label}.jsonl")]
    for label, slowdown in MODELS.items():
        expected = implied_capacity(slowdown)
        entry = manifest["capacity"][f"{label}|local"]
        assert entry == summary["capacity"][f"{label}|local"]
        assert entry["capacity"] == expected and entry["context"] == 64
        probed = [p["concurrency"] for p in entry["points"]]
        # doubling from 1 until a point fails, then bisection between the last good and it
        assert probed == ([1, 2, 3, 4] if expected == 3 else [1, 2, 4, 5, 6, 8])
        for p in entry["points"]:
            assert p["point"] == f"{label}|local|64|{p['concurrency']}"
            mine = [r for r in requests if r["key"].rsplit("|", 1)[0] == p["point"]]
            assert len(mine) == max(3, p["concurrency"])
            met = sum(r["ok"] and r["ttft_s"] <= TTFT_SLO and r["tpot_s"] <= TPOT_SLO for r in mine)
            assert p["slo_share"] == pytest.approx(met / len(mine))
            assert p["meets_slo"] is (p["slo_share"] >= 0.9)
            assert p["meets_slo"] is (p["concurrency"] <= expected)


def test_perf_bundle_layout(capacity_run: tuple[Path, str, str]) -> None:
    bundle, _, stderr = capacity_run
    assert "warning: --runs 3 is under 8: percentiles and CV % of so few requests are noisy" in (
        stderr
    )
    assert bundle.name.endswith("_perf_simfleet")
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["kind"] == "perf" and manifest["status"] == "done"
    assert manifest["ray"]["dashboard_url"] is None  # the config turns the dashboard off
    planned = {(p["model"], p["context"], p["concurrency"]) for p in manifest["points"]}
    assert planned == {
        (m, c, n) for m in MODELS for c, n in (("64-cached", 1), ("64", 1), ("64", 2))
    }
    assert (bundle / "config.yaml").is_file() and (bundle / "hosts" / "local.jsonl").is_file()
    events = [e["event"] for e in lines(bundle / "events.jsonl")]
    assert events[0] == "run_start" and events.count("model_done") == 2
    for label in MODELS:
        records = lines(bundle / "points" / f"{label}.jsonl")
        keys = [r["key"] for r in records]
        assert len(keys) == len(set(keys))
        assert {"sim-tpot|local|64|2|1", "sim-tpot|local|64|2|3"} <= set(keys) or label != (
            "sim-tpot"
        )
        for r in records:
            model, host, context, conc, run = r["key"].split("|")
            assert (model, host, context, int(conc), int(run)) == (
                label,
                "local",
                r["context"],
                r["concurrency"],
                r["run"],
            )
            assert r["ok"] and r["completion_tokens"] == 16
            assert r["output_forced"] is False  # the simulator cannot be told to ignore EOS
            assert r["sent_at"] == r["t_start"]
            assert r["send_lateness_s"] == pytest.approx(r["sent_at"] - r["scheduled_at"])
            assert 0 <= r["send_lateness_s"] < 0.5
            assert r["n_samples"] is not None  # finalize joined the host samples
    summary = json.loads((bundle / "summary.json").read_text())
    point = next(
        p
        for p in summary["points"]
        if (p["model"], p["context"], p["concurrency"]) == ("sim-tpot", "64", 2)
    )
    assert point["n"] == 3 and point["n_ok"] == 3
    # every counted request meets the SLO; a request on a host other processes loaded does not
    # count, and a point with none counted has no share
    requests = [
        PerfResponse.model_validate(r)
        for r in lines(bundle / "points" / "sim-tpot.jsonl")
        if r["key"].startswith("sim-tpot|local|64|2|")
    ]
    assert point["slo_share"] == (1.0 if any(map(counts_for_slo, requests)) else None)
    assert point["total_tps"] > 0


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    config = fleet(tmp_path, {"sim-a": 0.0})
    cases = {
        ("--capacity",): "error: --capacity needs --slo (e.g. --slo ttft=0.5,tpot=0.05)",
        ("--contexts", "1k,x"): "error: --contexts: 'x' is not a positive count (e.g. 256, 1k, "
        "16k)",
        ("--slo", "ttft=-1"): "error: --slo: ttft must be > 0 s, not -1.0",
        ("--models", "nope"): "error: --models: unknown model 'nope'; the config has ['sim-a']",
        ("--embed", "--embed-batch", "0"): "error: --embed-batch: must be ≥ 1, not 0",
        ("--embed-chunks", "-1"): "error: --embed-chunks: must be ≥ 1, not -1",
    }
    for args, message in cases.items():
        done = cli(tmp_path, "--config", str(config), *args, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip().splitlines()[-1] == message
    assert not (tmp_path / "runs").exists()


def start_perf(tmp: Path, args: list[str]) -> subprocess.Popen[bytes]:
    """``touchstone-ray perf ARGS`` in its own session (so a signal can reach its group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "touchstone_ray.cli", "perf", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(tmp),
        cwd=REPO,
        start_new_session=True,
        preexec_fn=sigint_default,  # Ctrl-C reaches it in a background run too
    )


@pytest.mark.slow
def test_sigkill_then_resume_reuses_finished_points(tmp_path: Path) -> None:
    config = fleet(tmp_path, {"sim-a": 0.0}, tps=40.0)  # ~0.4 s a request
    args = [
        "--config",
        str(config),
        "--contexts",
        "64",
        "--concurrency",
        "1,2,3,4",
        "--output-tokens",
        "16",
        "--runs",
        "3",
    ]
    proc = start_perf(tmp_path, args)
    try:
        deadline = time.monotonic() + 120
        events: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            found = list((tmp_path / "runs").glob("*/events.jsonl"))
            if found:
                events = [e for e in lines(found[0]) if e["event"] == "point_done"]
                if len(events) >= 2:
                    break
            time.sleep(0.1)
        assert len(events) >= 2
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    [bundle] = list((tmp_path / "runs").iterdir())
    finished = {e["point"] for e in lines(bundle / "events.jsonl") if e["event"] == "point_done"}
    shard = bundle / "points" / "sim-a.jsonl"
    before = {r["key"]: r for r in lines(shard)}
    assert len(finished) < 5
    done = cli(tmp_path, *args, "--resume", str(bundle))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{len(finished)} points reused" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == str(bundle)
    after = lines(shard)
    keys = [r["key"] for r in after]
    assert len(keys) == len(set(keys))  # nothing ran twice
    prefixes = {k.rsplit("|", 1)[0] for k in keys}
    assert prefixes == {f"sim-a|local|{c}" for c in ("64-cached|1", "64|1", "64|2", "64|3", "64|4")}
    for r in after:  # the finished points' requests are the ones from before the kill
        if r["key"].rsplit("|", 1)[0] in finished:
            assert r["t_start"] == before[r["key"]]["t_start"]
    unfinalized = [r["key"] for r in after if not isinstance(r["n_samples"], int)]
    assert unfinalized == []  # the requests from before the kill got resources too
    rerun = [e["point"] for e in lines(bundle / "events.jsonl") if e["event"] == "point_done"]
    assert sorted(rerun) == sorted(set(rerun))  # each point finished once
    assert json.loads((bundle / "bundle.json").read_text())["status"] == "done"

    changed = fleet(tmp_path, {"sim-a": 0.5}, tps=40.0)  # other simulator knobs
    refused = cli(tmp_path, *args[:1], str(changed), *args[2:], "--resume", str(bundle))
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: {bundle}: model sim-a: sim changed since the bundle was started (")
    )
    assert [r["key"] for r in lines(shard)] == keys  # nothing was written


@pytest.mark.slow
def test_ctrl_c_finalizes_the_requests_written_so_far(tmp_path: Path) -> None:
    config = fleet(tmp_path, {"sim-a": 0.0}, tps=40.0)  # ~0.4 s a request
    args = ["--config", str(config), "--contexts", "64", "--concurrency", "1,2,3,4"]
    args += ["--output-tokens", "16", "--runs", "3"]
    proc = start_perf(tmp_path, args)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = list((tmp_path / "runs").glob("*/events.jsonl"))
            if found and sum(e["event"] == "point_done" for e in lines(found[0])) >= 2:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    [bundle] = list((tmp_path / "runs").iterdir())
    assert proc.returncode == 1, err.decode()[-3000:]
    assert f"error: interrupted; resume with --resume {bundle}" in err.decode()
    written = lines(bundle / "points" / "sim-a.jsonl")
    assert len(written) >= 6  # two finished points, 3 runs each
    assert [r["key"] for r in written if not isinstance(r["n_samples"], int)] == []
    assert json.loads((bundle / "bundle.json").read_text())["status"] == "failed"


def test_report_on_a_perf_bundle(capacity_run: tuple[Path, str, str]) -> None:
    bundle, _, _ = capacity_run
    done = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "report", "--bundle", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(bundle / "report.md"), str(bundle / "report.html")]
    charts = sorted(p.stem for p in (bundle / "report-charts").glob("*.svg"))
    assert charts == ["pareto", "tpot-concurrency", "ttft-concurrency", "ttft-context"]
    html = (bundle / "report.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 4 and 'src="http' not in html and "<link" not in html
    assert 'id="capacity"' in html and 'id="points"' in html
    md = (bundle / "report.md").read_text(encoding="utf-8")
    assert "closed loop (each stream sends when its last request ended)" in md
    summary = json.loads((bundle / "summary.json").read_text())
    from touchstone_ray.doc import escape_text

    for entry in summary["capacity"].values():
        assert escape_text(entry["line"]) in md
    svg = (bundle / "report-charts" / "ttft-concurrency.svg").read_text()
    fair = [p for p in summary["points"] if not p["cached"] and p["ttft_s"]["p50"] is not None]
    # on a busy machine every request may be contended: then no figure, and the chart says so
    assert ("SLO TTFT" in svg) if fair else ("no fair measurement" in svg)


@pytest.mark.slow
def test_compare_joins_perf_capacity_onto_eval_rows(capacity_run: tuple[Path, str, str]) -> None:
    """An eval of one model of the same fleet, then ``compare EVAL PERF``: the eval row gets
    the users at once its (model, host) reached in the perf bundle; the other model, only in
    the perf bundle, still gets a row: no pack, variant or quality, its single-user speed
    from ``summary.json``, its users at once. ``compare PERF`` alone lists both that way."""
    perf_bundle, _, _ = capacity_run
    tmp = perf_bundle.parents[1]
    sys.path.insert(0, str(REPO / "tests" / "eval"))
    from eval_helpers import tiny_pack

    pack = tmp / "pack.yaml"
    pack.write_text(yaml.safe_dump(tiny_pack(3), allow_unicode=True), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "touchstone_ray.cli",
            "eval",
            "--pack",
            str(pack),
            "--config",
            str(tmp / "simfleet.yaml"),
            "--variants",
            "baseline",
            "--models",
            "sim-tpot",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(tmp),
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    eval_bundle = done.stdout.strip().splitlines()[-1]
    out = tmp / "cmp"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "touchstone_ray.cli",
            "compare",
            eval_bundle,
            str(perf_bundle),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import csv

    with open(out / "compare.csv", encoding="utf-8") as fh:
        rows = {r["model"]: r for r in csv.DictReader(fh)}
    slo = f"ttft={TTFT_SLO:g},tpot={TPOT_SLO:g}"
    for label, slowdown in MODELS.items():
        assert rows[label]["users_at_slo"] == str(implied_capacity(slowdown))
        assert rows[label]["users_slo"] == slo
    assert f"| {implied_capacity(MODELS['sim-tpot'])} ({slo}) |" in (
        (out / "compare.md").read_text(encoding="utf-8")
    )
    assert list(rows) == ["sim-tpot", "sim-slots"]  # eval rows first
    assert rows["sim-tpot"]["bundle"] == Path(eval_bundle).name
    assert rows["sim-tpot"]["quality_pct"] == ""  # unjudged
    assert rows["sim-tpot"]["variant"] == "baseline"
    summary = json.loads((perf_bundle / "summary.json").read_text())
    requests = lines(perf_bundle / "points" / "sim-slots.jsonl")
    single = next(
        p
        for p in summary["points"]
        if (p["model"], p["context"], p["concurrency"]) == ("sim-slots", "64", 1)
    )
    perf_only = rows["sim-slots"]
    assert perf_only["bundle"] == perf_bundle.name
    assert (perf_only["pack"], perf_only["variant"]) == ("–", "–")
    assert perf_only["hosts"] == "local: no GPU"
    assert (perf_only["quality_pct"], perf_only["ko_passed"]) == ("", "")
    assert perf_only["ttft_p50_s"] == (
        "" if single["ttft_s"]["p50"] is None else str(single["ttft_s"]["p50"])
    )
    assert perf_only["decode_tps_median"] == (
        "" if single["decode_tps_median"] is None else str(single["decode_tps_median"])
    )
    engine = [r["engine_rss_mb"] for r in requests if r["engine_rss_mb"] is not None]
    system = [r["sys_used_mb"] for r in requests if r["sys_used_mb"] is not None]
    assert perf_only["memory_mb"] == str(max(engine) if engine else max(system))
    assert perf_only["memory_source"] == ("engine" if engine else "system")
    assert perf_only["simulated"] == "true"
    md_row = next(
        line
        for line in (out / "compare.md").read_text(encoding="utf-8").splitlines()
        if "| sim-slots |" in line
    )
    cells = [c.strip() for c in md_row.strip("|").split("|")]
    assert cells[0] == perf_bundle.name and cells[3:6] == ["–", "–", "–"]
    assert cells[-1] == f"{implied_capacity(MODELS['sim-slots'])} ({slo})"

    alone = tmp / "cmp-perf"
    done = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "compare", str(perf_bundle), "--out",
         str(alone)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    with open(alone / "compare.csv", encoding="utf-8") as fh:
        only = list(csv.DictReader(fh))
    assert [(r["model"], r["users_at_slo"]) for r in only] == [
        (label, str(implied_capacity(x))) for label, x in MODELS.items()
    ]
    assert {r["bundle"] for r in only} == {perf_bundle.name}


@pytest.mark.slow
def test_embed_throughput_against_the_simulator(tmp_path: Path) -> None:
    """``--embed``: 64 corpus chunks in batches of 8; the simulator answers a batch after
    ttft + words / embed_tps, and counts words as tokens."""
    from touchstone_ray.perf.embed import BATCH, CHUNK_TOKENS, N_CHUNKS, TOKENS_PER_WORD

    ttft_s, embed_tps = 0.01, 20_000.0
    config = {
        "ray": {"include_dashboard": False},
        "models": [
            {
                "id": "sim-e",
                "engine": "simulated",
                "sim": {"ttft_ms": ttft_s * 1000, "embed_tps": embed_tps},
            }
        ],
        "monitor": {"interval_s": 0.5},
        "out": str(tmp_path / "runs"),
    }
    path = tmp_path / "embedfleet.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = cli(
        tmp_path,
        "--config",
        str(path),
        "--contexts",
        "64",
        "--concurrency",
        "1",
        "--output-tokens",
        "4",
        "--runs",
        "1",
        "--embed",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bundle = Path(done.stdout.strip().splitlines()[-1])
    records = lines(bundle / "embed" / "sim-e.jsonl")
    words = round(CHUNK_TOKENS / TOKENS_PER_WORD) * BATCH
    assert len(records) == N_CHUNKS // BATCH
    for r in records:
        assert r["ok"] and r["n_inputs"] == BATCH and r["prompt_tokens"] == words
        assert ttft_s + words / embed_tps <= r["latency_s"] < ttft_s + words / embed_tps + 0.2
        assert r["sys_used_mb"] is not None  # finalize joined the host samples
    figures = json.loads((bundle / "summary.json").read_text())["embed"]["sim-e|local"]
    wall = max(r["t_end"] for r in records) - min(r["t_start"] for r in records)
    assert figures["embeddings_per_s"] == pytest.approx(N_CHUNKS / wall)
    assert figures["tokens_per_s"] == pytest.approx(words * len(records) / wall)
    assert figures["batch_latency_p95_s"] >= ttft_s + words / embed_tps
    assert any(
        line.startswith("sim-e on local: ") and "embeddings/s" in line
        for line in done.stdout.splitlines()
    )


def test_closed_loop_schedule(capacity_run: tuple[Path, str, str]) -> None:
    """Closed loop at c = 2: each stream's first request is its discarded warm-up, so the
    two first measured requests are due at two different moments (each when its stream's
    warm-up ended), and the third is due when an earlier one of the point ended."""
    bundle, _, _ = capacity_run
    recs = sorted(
        (
            r
            for r in lines(bundle / "points" / "sim-tpot.jsonl")
            if (r["context"], r["concurrency"]) == ("64", 2)
        ),
        key=lambda r: r["scheduled_at"],
    )
    assert len(recs) == 3
    first, second, later = recs
    assert first["scheduled_at"] != second["scheduled_at"]
    assert later["scheduled_at"] > max(first["sent_at"], second["sent_at"])
    ended = min((r["t_end"] for r in (first, second)), key=lambda t: abs(later["scheduled_at"] - t))
    # t_end is the engine's stream clock (perf_counter offsets from t_start), scheduled_at
    # the loop's time.time() when the call returned: the two agree to a few ms, not exactly
    assert -0.005 <= later["scheduled_at"] - ended < 0.05
    assert all(r["sent_at"] >= r["scheduled_at"] for r in recs)


@pytest.mark.slow
def test_lockstep_sends_rounds_together(tmp_path: Path) -> None:
    """``--lockstep``: runs 1..7 at c = 3 go out in rounds [1, 2, 3], [4, 5, 6], [7]; a round
    is due (one ``scheduled_at`` for all) only after every request of the round before ended;
    and the bundle says which schedule it used."""
    config = fleet(tmp_path, {"sim-tpot": 1.0})
    done = cli(
        tmp_path,
        "--config",
        str(config),
        "--contexts",
        "64",
        "--concurrency",
        "3",
        "--output-tokens",
        "8",
        "--runs",
        "7",
        "--lockstep",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bundle = Path(done.stdout.strip().splitlines()[-1])
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["settings"]["schedule"] == "lockstep"
    recs = {
        r["run"]: r
        for r in lines(bundle / "points" / "sim-tpot.jsonl")
        if (r["context"], r["concurrency"]) == ("64", 3)
    }
    assert sorted(recs) == [1, 2, 3, 4, 5, 6, 7]
    rounds = [[1, 2, 3], [4, 5, 6], [7]]
    due = []
    for batch in rounds:
        (at,) = {recs[run]["scheduled_at"] for run in batch}
        due.append(at)
        assert all(recs[run]["ok"] and recs[run]["sent_at"] >= at for run in batch)
    for before, after, at in zip(rounds, rounds[1:], due[1:], strict=False):
        assert at >= max(recs[run]["t_end"] for run in before)
        assert min(recs[run]["sent_at"] for run in after) >= at
    report = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "report", "--bundle", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    assert "lockstep (rounds of" in (bundle / "report.md").read_text(encoding="utf-8")
