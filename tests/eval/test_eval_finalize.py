"""Finalize is complete whenever eval ends: after a SIGKILL and ``eval --resume`` the cells
from before the kill get their resource fields too, and Ctrl-C (SIGINT) finalizes what was
written before the driver exits. Real CLI subprocesses on a real Ray cluster, an OpenAI
simulator in this process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import REPO, all_keys, cli, count_lines, shard_lines, tiny_pack, write_yaml
from procs import sigint_default
from ray_env import RayCluster

from touchstone_ray.bundle import Bundle
from touchstone_ray.eval.run import busy_line
from touchstone_ray.sim import SimConfig, SimServer

pytestmark = pytest.mark.slow

SIM = SimConfig(ttft_ms=100, tps=50, answer_tokens=10)  # ~0.3 s per cell
N_PROMPTS = 16  # × 2 variants = 32 cells
KILL_AT = 8


def _args(tmp: Path, url: str, address: str) -> list[str]:
    pack = write_yaml(tmp / "pack.yaml", tiny_pack(N_PROMPTS, pack_id="fin"))
    config = write_yaml(
        tmp / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": [{"id": "fm", "engine": "openai", "base_url": f"{url}/v1", "concurrency": 2}],
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )
    return ["eval", "--pack", str(pack), "--config", str(config), "--address", address]


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(f"{log}.out", "w") as stdout, open(f"{log}.err", "w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.cli", *args],
            stdout=stdout,
            stderr=stderr,
            env=dict(os.environ),
            cwd=REPO,
            start_new_session=True,
            preexec_fn=sigint_default,  # Ctrl-C reaches it in a background run too
        )


def _stop_at(proc: subprocess.Popen[bytes], out: Path, sig: int, log: Path) -> None:
    """Send ``sig`` once the bundle under ``out`` holds :data:`KILL_AT` records; wait."""
    try:
        deadline = time.monotonic() + 120
        while _records(out) < KILL_AT and proc.poll() is None:
            assert time.monotonic() < deadline, f"no {KILL_AT} records in 120 s ({log})"
            time.sleep(0.02)
        assert proc.poll() is None, Path(f"{log}.err").read_text()
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def _bundle(out: Path) -> Path | None:
    found = sorted(out.glob("*/bundle.json"))
    return found[0].parent if found else None


def _records(out: Path) -> int:
    root = _bundle(out)
    return sum(count_lines(p) for p in (root / "responses").glob("*.jsonl")) if root else 0


def _has_resources(record: dict[str, Any]) -> bool:
    return (
        isinstance(record["n_samples"], int)
        and record["n_samples"] >= 1
        and isinstance(record["sys_used_mb"], float)
        and record["sys_used_baseline_mb"] is not None
    )


def test_sigkill_then_resume_finalizes_the_cells_from_before_the_kill(
    rc: RayCluster, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    with SimServer(SIM) as sim:
        assert sim.url is not None
        args = _args(tmp_path, sim.url, rc.address)
        proc = _start([*args, "--out", str(out)], tmp_path / "run1")
        _stop_at(proc, out, signal.SIGKILL, tmp_path / "run1")
        assert proc.returncode == -signal.SIGKILL
        root = _bundle(out)
        assert root is not None
        before = shard_lines(root)
        assert len(before) >= KILL_AT
        assert all(r["n_samples"] is None for r in before)  # the kill left them unfinalized
        assert sum(count_lines(p) for p in (root / "hosts").glob("*.jsonl")) > 0
        resumed = cli(*args, "--resume", str(root))
    assert resumed.returncode == 0, resumed.stderr
    records = shard_lines(root)
    keys = {r["key"] for r in records}
    assert keys == all_keys(tiny_pack(N_PROMPTS), ["fm"]) and len(keys) == 32
    assert [r["key"] for r in records if not _has_resources(r)] == []
    assert Bundle(root).shards.unfinalized_keys() == set()
    assert "resources_unknown" not in json.loads((root / "bundle.json").read_text())


def test_ctrl_c_finalizes_before_exit_and_resume_completes(rc: RayCluster, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    log = tmp_path / "run1"
    with SimServer(SIM) as sim:
        assert sim.url is not None
        args = _args(tmp_path, sim.url, rc.address)
        proc = _start([*args, "--out", str(out)], log)
        _stop_at(proc, out, signal.SIGINT, log)
        err = Path(f"{log}.err").read_text()
        assert proc.returncode == 1, err
        root = _bundle(out)
        assert root is not None
        assert f"error: interrupted; resume with --resume {root}" in err
        interrupted = shard_lines(root)
        assert len(interrupted) >= KILL_AT
        assert [r["key"] for r in interrupted if not _has_resources(r)] == []
        manifest = json.loads((root / "bundle.json").read_text())
        assert manifest["status"] == "failed"
        resumed = cli(*args, "--resume", str(root))
    assert resumed.returncode == 0, resumed.stderr
    records = shard_lines(root)
    assert len({r["key"] for r in records}) == 32
    assert [r["key"] for r in records if not _has_resources(r)] == []


def test_sigterm_finalizes_before_exit_and_resume_completes(rc: RayCluster, tmp_path: Path) -> None:
    """SIGTERM (what a job runner sends) takes the same abort path as Ctrl-C: every record
    written is finalized, ``run_aborted`` says why, the manifest says ``failed``, and the
    process exits 15 (the signal's number)."""
    out = tmp_path / "runs"
    log = tmp_path / "run1"
    with SimServer(SIM) as sim:
        assert sim.url is not None
        args = _args(tmp_path, sim.url, rc.address)
        proc = _start([*args, "--out", str(out)], log)
        _stop_at(proc, out, signal.SIGTERM, log)
        assert proc.returncode == 15, Path(f"{log}.err").read_text()
        root = _bundle(out)
        assert root is not None
        stopped = shard_lines(root)
        assert len(stopped) >= KILL_AT
        assert [r["key"] for r in stopped if not _has_resources(r)] == []
        events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
        assert (events[-1]["event"], events[-1]["reason"]) == (
            "run_aborted",
            "terminated (SIGTERM)",
        )
        assert json.loads((root / "bundle.json").read_text())["status"] == "failed"
        resumed = cli(*args, "--resume", str(root))
    assert resumed.returncode == 0, resumed.stderr
    assert len({r["key"] for r in shard_lines(root)}) == 32


def test_busy_line_names_what_was_flagged() -> None:
    assert busy_line(Counter(finalized=32)) is None
    assert busy_line(Counter(finalized=32, contended=5, throttled=2)) == (
        "speed: 5 contended and 2 throttled of 32 cells (the host was busy with other "
        "processes, or throttled, while they ran): their TTFT and decode tok/s are left out of "
        "the speed figures, so those read – where no cell is left; rerun on a quieter host for "
        "speed"
    )
    assert busy_line(Counter(finalized=8, throttled=1)).startswith("speed: 1 throttled of 8 cells")
