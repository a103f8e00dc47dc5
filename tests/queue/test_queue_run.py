"""``touchstone-ray queue run`` on a real Ray cluster (a head and two worker nodes labelled
gpu-a and gpu-b, simulated models pinned to them): host leases from the event times, the reset
on the right node, the stage chain, a SIGKILLed driver resumed, and the watchdog stopping an
entry whose server stopped answering."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import REPO, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.sim import SimConfig, SimServer

pytestmark = pytest.mark.slow

RAY_HOSTS = ["gpu-a", "gpu-b"]
SLOW = {"ttft_ms": 150, "tps": 2000, "answer_tokens": 8}
"""A cell of about 0.15 s: an 8-cell entry runs for a second or more."""


def _fleet(tmp: Path, name: str, models: list[dict[str, Any]]) -> str:
    hosts = {m["host"]: {"label": m["host"]} for m in models if m.get("host")}
    write_yaml(
        tmp / f"{name}.yaml",
        {
            "ray": {"include_dashboard": False},
            "hosts": hosts,
            "models": models,
            "scheduling": {"warmup": False},
            "monitor": {"interval_s": 0.5, "gpu": "off"},
        },
    )
    return f"{name}.yaml"


def _sim(model: str, host: str | None, **knobs: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"id": model, "engine": "simulated", "sim": SLOW | knobs}
    return spec | ({"host": host} if host else {})


def _queue(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "queue", *args],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ), cwd=REPO,
    )  # fmt: skip


def _log(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "queue-state.jsonl").read_text().splitlines()]


def _at(log: list[dict[str, Any]], event: str, entry: str) -> float:
    return float(next(e["ts"] for e in log if e["event"] == event and e["entry"] == entry))


def test_entries_lease_hosts_reset_on_their_node_and_chain_judge_and_report(
    rc: RayCluster, tmp_path: Path
) -> None:
    write_yaml(tmp_path / "pack.yaml", tiny_pack(4))  # 8 cells per model
    judge = {"id": "js", "engine": "simulated", "model": "jm"}
    write_yaml(tmp_path / "judges.yaml", {"judges": [judge]})
    configs = {
        "a1": _fleet(tmp_path, "fa1", [_sim("ma", "gpu-a")]),
        "b1": _fleet(tmp_path, "fb1", [_sim("mb", "gpu-b")]),
        "a2": _fleet(tmp_path, "fa2", [_sim("ma2", "gpu-a")]),
        "l1": _fleet(tmp_path, "fl1", [_sim("ml", None)]),
    }
    entries = [
        {"name": n, "kind": "eval", "pack": "pack.yaml", "config": c} for n, c in configs.items()
    ]
    entries[1] |= {"judge_config": "judges.yaml"}
    resets = tmp_path / "resets.txt"
    queue = write_yaml(
        tmp_path / "night.yaml",
        {
            "hosts": {"gpu-a": {"reset_command": f'echo "$TOUCHSTONE_NODE_ID" >> {resets}'}},
            "entries": entries,
        },
    )
    done = _queue("run", str(queue), "--address", rc.address)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp_path / "night-queue"
    log = _log(folder)
    # a2 shares gpu-a with a1: it starts once a1 ended; b1 and l1 run beside a1
    assert _at(log, "entry_started", "a2") >= _at(log, "entry_ended", "a1")
    for other in ("b1", "l1"):
        assert _at(log, "entry_started", other) < _at(log, "entry_ended", "a1")
    gpu_a = rc.node_ids_by_host()["gpu-a"]
    assert resets.read_text().split() == [gpu_a, gpu_a]  # before a1 and before a2
    stages = {e["entry"]: [] for e in log}
    for e in log:
        if e["event"] == "stage_done":
            stages[e["entry"]].append(e["stage"])
    assert stages == {"a1": ["eval", "report"], "b1": ["eval", "judge", "report"],
                      "a2": ["eval", "report"], "l1": ["eval", "report"]}  # fmt: skip
    ended = {e["entry"]: e for e in log if e["event"] == "entry_ended"}
    assert {n: e["state"] for n, e in ended.items()} == dict.fromkeys(configs, "done")
    assert {n: e["stage"] for n, e in ended.items()} == dict.fromkeys(configs, "report")
    assert [(e["entry"], e["state"]) for e in log if e["event"] == "entry_pending"] == [
        (name, "pending") for name in configs
    ]
    b1 = Path(ended["b1"]["bundle"])
    assert (b1 / "scorecard.json").is_file() and (b1 / "report.html").is_file()
    assert (Path(ended["a1"]["bundle"]) / "rating-task.md").is_file()  # unjudged: the task
    assert len(shard_lines(b1)) == 8
    summary = (folder / "summary.md").read_text()
    for name in configs:
        assert f"| `{name}` | eval | done |" in summary
    assert (folder / "summary.html").is_file()
    status = _queue("status", str(queue))
    assert [line.split(",")[0] for line in status.stdout.splitlines()] == [
        f"{name}: done" for name in configs
    ]
    again = _queue("run", str(queue), "--address", rc.address)
    assert again.returncode == 0
    assert [line for line in again.stdout.splitlines() if "skipped" in line] == [
        f"entry {name}: done before, skipped" for name in configs
    ]


def test_a_sigkilled_queue_resumes_and_the_watchdog_stops_a_stalled_entry(
    rc: RayCluster, tmp_path: Path
) -> None:
    write_yaml(tmp_path / "pack.yaml", tiny_pack(6))  # 12 cells per model
    with SimServer(SimConfig(models=["hang"], stall_rate=1.0, ttft_ms=5)) as stuck:
        hang = {"id": "hang", "engine": "openai", "host": "gpu-b", "base_url": f"{stuck.url}/v1"}
        entries = [
            {"name": "k1", "kind": "eval", "pack": "pack.yaml", "limit": 1,
             "config": _fleet(tmp_path, "fk1", [_sim("mk", "gpu-a")])},
            {"name": "k2", "kind": "eval", "pack": "pack.yaml",
             "config": _fleet(tmp_path, "fk2", [_sim("mk2", "gpu-a", ttft_ms=400)])},
            {"name": "st", "kind": "eval", "pack": "pack.yaml", "limit": 1, "report": False,
             "config": _fleet(tmp_path, "fst", [hang])},
        ]  # fmt: skip
        queue = write_yaml(tmp_path / "night.yaml", {"stall_timeout_s": 12, "entries": entries})
        folder = tmp_path / "night-queue"
        driver = subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.cli", "queue", "run", str(queue),
             "--address", rc.address],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ),
            cwd=REPO, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 240
        k2_bundle: Path | None = None
        while time.monotonic() < deadline and driver.poll() is None:
            shards = list((folder / "k2").glob("*/responses/*.jsonl"))
            if shards and len(shards[0].read_text().splitlines()) >= 3:
                k2_bundle = shards[0].parents[1]
                break
            time.sleep(0.1)
        assert k2_bundle is not None, "k2 never wrote three records"
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 60  # its stages got SIGTERM: they finalize and exit
        while time.monotonic() < deadline:
            if json.loads((k2_bundle / "bundle.json").read_text())["status"] != "running":
                break
            time.sleep(0.2)
        n_before = len(shard_lines(k2_bundle))
        assert 3 <= n_before < 12
        again = _queue("run", str(queue), "--address", rc.address, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr  # st stalled
    lines = again.stdout.splitlines()
    assert "entry k1: done before, skipped" in lines
    log = _log(folder)
    ended = {e["entry"]: e for e in log if e["event"] == "entry_ended"}
    assert ended["k2"]["state"] == "done" and Path(ended["k2"]["bundle"]) == k2_bundle
    records = shard_lines(k2_bundle)
    assert len({r["key"] for r in records if r["ok"]}) == 12  # resumed, nothing lost
    assert len(records) < 12 + n_before  # the finished cells were not run again
    assert (folder / "k2" / "eval.err").read_text().count("reused") <= 1
    assert "reused" in (folder / "k2" / "eval.out").read_text()
    assert ended["st"]["state"] == "stalled" and ended["st"]["stage"] == "eval"
    skipped = [(e["entry"], e["stage"], e["state"]) for e in log if e["event"] == "stage_skipped"]
    assert skipped == []  # k2 was killed inside its eval: no stage of it had finished
    assert ended["st"]["reason"] == "no new record in its bundle for 12 s (stall_timeout_s)"
    summary = (folder / "summary.md").read_text()
    assert "| `k1` | eval | done |" in summary and "| `k2` | eval | done |" in summary
    assert "| `st` | eval | stalled |" in summary
    assert "`st` stalled: no new record in its bundle for 12 s (stall\\_timeout\\_s)" in summary


def test_check_names_every_problem_and_runs_the_reset_commands(
    rc: RayCluster, tmp_path: Path
) -> None:
    write_yaml(tmp_path / "pack.yaml", tiny_pack(2))
    entries = [
        {"name": "ok", "kind": "eval", "pack": "pack.yaml",
         "config": _fleet(tmp_path, "fa", [_sim("ma", "gpu-a")])},
        {"name": "typo", "kind": "eval", "pack": "pack.yaml", "models": ["nope"],
         "config": _fleet(tmp_path, "fb", [_sim("mb", "gpu-b")])},
    ]  # fmt: skip
    hosts = {"gpu-a": {"reset_command": "echo restarting; exit 3"}, "gpu-c": {"settle_s": 1}}
    queue = write_yaml(tmp_path / "night.yaml", {"hosts": hosts, "entries": entries})
    done = _queue("check", str(queue), "--address", rc.address)
    assert done.returncode == 2, done.stdout + done.stderr
    has = "the config has ['mb']"
    assert done.stdout.splitlines() == [
        f"problem: {queue}: entries[1] (typo): --models: unknown model 'nope'; {has}",
        f"problem: {queue}: hosts.gpu-a.reset_command: reset_command on gpu-a exited 3: restarting",
        f"problem: {queue}: hosts.gpu-c: no entry uses this host",
    ]
    assert not (tmp_path / "night-queue").exists()  # checking writes nothing
    fixed = write_yaml(tmp_path / "fixed.yaml", {"entries": entries[:1]})
    passed = _queue("check", str(fixed), "--address", rc.address)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.splitlines()[-1] == "queue ok: 1 entry on 1 host, reset commands run: 0"


def test_without_an_address_the_queue_runs_on_a_head_of_its_own(tmp_path: Path) -> None:
    write_yaml(tmp_path / "pack.yaml", tiny_pack(2))
    entry = {"name": "solo", "kind": "eval", "pack": "pack.yaml", "report": False,
             "config": _fleet(tmp_path, "f", [_sim("m", None, ttft_ms=1)])}  # fmt: skip
    queue = write_yaml(tmp_path / "night.yaml", {"entries": [entry]})
    done = _queue("run", str(queue))
    assert done.returncode == 0, done.stdout + done.stderr
    first, *_, last = done.stdout.splitlines()
    assert first.startswith("queue: started a local Ray head at 127.0.0.1:")
    assert last == f"queue: 1 entry run; summary {tmp_path / 'night-queue' / 'summary.md'}"
    # the head is gone with the queue: the suite's leak check fails a test that leaves it
