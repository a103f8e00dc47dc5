"""``run_perf`` on the shared dispatcher, on a real two-worker Ray cluster with simulated
servers: the points of two hosts run at once while each host keeps its plan order; a host
whose node is removed mid-run gets its models recorded as failed (the run ends, the other
host finishes, a resume completes the lost points); a host whose actor is not up within the
environment's ready timeout fails the same way instead of waiting."""

from __future__ import annotations

import concurrent.futures
import io
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))
from eval_helpers import write_yaml
from ray_env import RayCluster

from touchstone_ray.perf.options import PerfOptions
from touchstone_ray.perf.run import PerfOutcome, run_perf
from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.slow

HOSTS = ["gpu-a", "gpu-b"]
SIM = {"ttft_ms": 20, "tps": 100.0, "answer_tokens": 400}  # 16 tokens: ~0.17 s a request
PLAN = ["64-cached|1", "64|1", "64|2", "64|3"]
"""Each model's points in plan order (context and concurrency of the key)."""


RAY_HOSTS = HOSTS
"""The module's cluster (the ``rc`` fixture of tests/conftest.py): a worker per host."""


def _fleet(tmp: Path, models: dict[str, str]) -> Path:
    """Model label → host, each a simulated server."""
    return write_yaml(
        tmp / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "hosts": {h: {"label": h} for h in HOSTS},
            "models": [
                {"id": label, "engine": "simulated", "host": host, "sim": SIM}
                for label, host in models.items()
            ],
            "scheduling": {"warmup": True},
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )


def _perf(config: Path, out: Path, resume: Path | None = None) -> tuple[PerfOutcome, str]:
    opts = PerfOptions(
        config=config,
        contexts=[64],
        concurrency=[1, 2, 3],
        output_tokens=16,
        runs=3,
        out=out,
        resume=resume,
    )
    buf = io.StringIO()
    return run_perf(opts, buf), buf.getvalue()


def _lines(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path).records


def _events(bundle: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in _lines(bundle / "events.jsonl") if e["event"] == name]


def test_two_hosts_run_at_once_each_in_plan_order(rc: RayCluster, tmp_path: Path) -> None:
    config = _fleet(tmp_path, {"pa": "gpu-a", "pb": "gpu-b"})
    outcome, printed = _perf(config, tmp_path / "runs")
    assert outcome.exit_code == 0, printed
    bundle = outcome.bundle
    nodes = rc.node_ids_by_host()
    spans = {}
    for label, host in (("pa", "gpu-a"), ("pb", "gpu-b")):
        records = _lines(bundle / "points" / f"{label}.jsonl")
        assert len(records) == 3 + 3 + 3 + 3 and all(r["ok"] for r in records)
        assert {(r["host"], r["node_id"]) for r in records} == {(host, nodes[host])}
        # the points of one host ran one after another, in plan order
        prefixes = [f"{label}|{host}|{p}" for p in PLAN]
        done = [e["point"] for e in _events(bundle, "point_done") if e["point"].startswith(label)]
        assert done == prefixes
        by_point = {p: [r for r in records if r["key"].rsplit("|", 1)[0] == p] for p in prefixes}
        for before, after in itertools.pairwise(prefixes):
            assert max(r["t_end"] for r in by_point[before]) <= min(
                r["t_start"] for r in by_point[after]
            )
        spans[host] = (min(r["t_start"] for r in records), max(r["t_end"] for r in records))
    # the two hosts' points overlapped in time: neither waited for the other
    (a0, a1), (b0, b1) = spans["gpu-a"], spans["gpu-b"]
    overlap = min(a1, b1) - max(a0, b0)
    assert overlap > 0.5 * min(a1 - a0, b1 - b0), spans
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["status"] == "done"
    for host in HOSTS:
        entry = manifest["hosts"][host]
        assert entry["node_id"] == nodes[host] and isinstance(entry["client_pid"], int)
        assert entry["capabilities"]["sys_used_mb"]["supported"] is True
        assert isinstance(entry["touchstone_footprint"], dict)
    assert sorted(e["host"] for e in _events(bundle, "preflight")) == HOSTS
    assert sorted(e["host"] for e in _events(bundle, "model_done")) == HOSTS
    assert printed.splitlines()[-2] == "perf done: 24 ok, 0 failed, 0 points reused"


def test_the_environments_ready_timeout_fails_the_host_instead_of_waiting(
    rc: RayCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TOUCHSTONE_ACTOR_READY_TIMEOUT_S", "0")
    config = _fleet(tmp_path, {"pa": "gpu-a", "pa2": "gpu-a"})
    began = time.monotonic()
    outcome, printed = _perf(config, tmp_path / "runs")
    assert time.monotonic() - began < 60
    node = rc.node_ids_by_host()["gpu-a"]
    reason = f"client actor could not be scheduled on node {node[:8]} within 0 s"
    failed = [(e["host"], e["model"], e["error"]) for e in _events(outcome.bundle, "model_failed")]
    assert failed == [
        ("gpu-a", "pa", f"gpu-a: pa: {reason}"),
        ("gpu-a", "pa2", f"gpu-a: pa2: {reason}"),
    ]
    assert (outcome.exit_code, outcome.n_ok, outcome.n_failed) == (1, 0, 2)
    assert list((outcome.bundle / "points").iterdir()) == []  # no point was sent
    err = capsys.readouterr().err
    assert f"perf: gpu-a: pa: {reason}\nperf: gpu-a: pa2: {reason}\n" in err
    assert printed.splitlines()[-2] == "perf failed: 0 ok, 2 failed, 0 points reused"
    assert json.loads((outcome.bundle / "bundle.json").read_text())["status"] == "failed"
    assert (outcome.bundle / "summary.json").is_file()


def test_a_lost_host_fails_its_points_the_other_finishes_a_resume_completes(
    rc: RayCluster, tmp_path: Path
) -> None:
    config = _fleet(tmp_path, {"pa": "gpu-a", "pb": "gpu-b"})
    out = tmp_path / "runs"
    old_node = rc.node_ids_by_host()["gpu-b"]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(_perf, config, out)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not future.done():
            found = list(out.glob("*/events.jsonl"))
            if found and any(
                e["point"].startswith("pb|") for e in _events(found[0].parent, "point_done")
            ):
                break
            time.sleep(0.05)
        assert not future.done(), future.result()
        t_removed = time.time()
        rc.cluster.remove_node(rc.nodes.pop("gpu-b"))
        outcome, printed = future.result(timeout=120)  # it ends: no wait on the lost host
    bundle = outcome.bundle
    [failed] = _events(bundle, "model_failed")
    reasons = (
        f"gpu-b: pb: client actor on node {old_node[:8]} died: ActorDiedError",
        f"gpu-b: pb: node {old_node[:8]} of host gpu-b is dead",
    )
    assert (failed["host"], failed["model"]) == ("gpu-b", "pb") and failed["error"] in reasons
    assert outcome.exit_code == 1
    a = _lines(bundle / "points" / "pa.jsonl")
    assert len(a) == 12 and all(r["ok"] for r in a)  # the other host finished …
    assert max(r["t_end"] for r in a) > t_removed  # … after the loss
    b = _lines(bundle / "points" / "pb.jsonl")
    assert 1 <= len({r["key"].rsplit("|", 1)[0] for r in b}) < 4  # the lost points: none written
    assert "pb" not in {e["model"] for e in _events(bundle, "model_done")}
    assert json.loads((bundle / "bundle.json").read_text())["status"] == "failed"
    kept = len({r["key"].rsplit("|", 1)[0] for r in b})

    rc.add_host("gpu-b")
    resumed, printed = _perf(config, out, resume=bundle)
    assert resumed.exit_code == 0, printed
    assert printed.splitlines()[0] == f"{4 + kept} points reused"
    b = _lines(bundle / "points" / "pb.jsonl")
    keys = [r["key"] for r in b]
    assert len(keys) == len(set(keys)) == 12 and all(r["ok"] for r in b)
    assert json.loads((bundle / "bundle.json").read_text())["status"] == "done"
