"""``run_eval`` on a real multi-node Ray cluster (head + gpu-a/gpu-b/gpu-c workers on this
machine): pinning, the buero pack, the per-endpoint concurrency bound, a node lost mid-run.

One cluster for the whole module; the node-loss test replaces gpu-c's node and runs last.
"""

from __future__ import annotations

import concurrent.futures
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import ray
from eval_helpers import (
    BUERO_PACK,
    SIM_FLEET,
    all_keys,
    count_lines,
    run,
    shard_lines,
    sim_keys,
    sim_stats,
    tiny_pack,
    warmup_key,
    write_yaml,
)
from ray_env import RayCluster

from touchstone_ray.bundle import Bundle
from touchstone_ray.pack import load_pack
from touchstone_ray.records import EvalResponse
from touchstone_ray.sim import SimConfig, SimServer
from touchstone_ray.storage import read_jsonl, slug

pytestmark = pytest.mark.slow

HOSTS = ["gpu-a", "gpu-b", "gpu-c"]
FAST = {"ttft_ms": 5, "tps": 2000, "answer_tokens": 20}


RAY_HOSTS = HOSTS
"""A worker per host label in this module's ``rc`` (tests/conftest.py)."""


def _fleet(models: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "ray": {"include_dashboard": False},
        "hosts": {h: {"label": h} for h in HOSTS},
        "models": models,
        "monitor": {"interval_s": 0.2, "gpu": "off"},
        **extra,
    }


def test_cells_are_pinned_to_their_hosts_nodes(rc: RayCluster, tmp_path: Path) -> None:
    pack_data = tiny_pack(4)
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    models: list[dict[str, Any]] = [
        {"id": "sa", "engine": "simulated", "host": "gpu-a", "concurrency": 2, "sim": FAST},
        {"id": "sb", "engine": "simulated", "host": "gpu-b", "concurrency": 2, "sim": FAST},
        {"id": "sc", "engine": "simulated", "host": "gpu-c", "concurrency": 2, "sim": FAST},
        # the same id on two hosts: labels twin@gpu-b / twin@gpu-c, one shard each
        {"id": "twin", "engine": "simulated", "host": "gpu-b", "sim": FAST},
        {"id": "twin", "engine": "simulated", "host": "gpu-c", "sim": FAST},
    ]
    config = write_yaml(tmp_path / "fleet.yaml", _fleet(models))
    outcome, printed = run(pack, config, out=tmp_path / "runs")

    assert outcome.exit_code == 0, printed
    assert outcome.bundle is not None
    assert printed.splitlines()[-1] == str(outcome.bundle)
    host_of = {"sa": "gpu-a", "sb": "gpu-b", "sc": "gpu-c", "twin@gpu-b": "gpu-b"}
    host_of["twin@gpu-c"] = "gpu-c"
    node_of = rc.node_ids_by_host()
    assert len(set(node_of.values())) == 3
    records = shard_lines(outcome.bundle)
    assert sorted(r["key"] for r in records) == sorted(all_keys(pack_data, list(host_of)))
    for r in records:
        assert r["ok"], r
        assert r["host"] == host_of[r["model"]]
        assert r["node_id"] == node_of[r["host"]], r["key"]
        assert r["engine"] == "simulated" and r["engine_version"] == "sim"
    assert sorted(p.name for p in (outcome.bundle / "responses").iterdir()) == sorted(
        f"{slug(label)}.jsonl" for label in host_of
    )
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    assert manifest["status"] == "done" and manifest["simulated"] is True
    assert {h: manifest["hosts"][h]["node_id"] for h in HOSTS} == node_of
    # each host's monitor ran on that host's node too
    for host in HOSTS:
        samples = read_jsonl(outcome.bundle / "hosts" / f"{host}.jsonl").records
        assert samples, host
        assert {s["node_id"] for s in samples} == {node_of[host]}
        assert {s["host"] for s in samples} == {host}


def test_buero_pack_on_the_simulated_fleet(rc: RayCluster, tmp_path: Path) -> None:
    outcome, printed = run(BUERO_PACK, SIM_FLEET, out=tmp_path / "runs")
    assert outcome.exit_code == 0, printed
    assert outcome.bundle is not None and outcome.n_ok == 128 and outcome.n_failed == 0
    pack = load_pack(BUERO_PACK)
    expected = {
        f"{m}|{v.id}|{p.id}|{r}"
        for m in ("sim-fast", "sim-slow")
        for v in pack.prompt_variants
        for _, p in pack.all_prompts()
        for r in range(1, p.repeats + 1)
    }
    driver_node = ray.get_runtime_context().get_node_id()
    fields = set(EvalResponse.model_fields)
    for model in ("sim-fast", "sim-slow"):
        shard = outcome.bundle / "responses" / f"{model}.jsonl"
        records = [json.loads(line) for line in shard.read_text().splitlines()]
        assert len(records) == 64
        assert all(r["ok"] is True and r["error_kind"] is None for r in records)
        assert {r["key"] for r in records} == {k for k in expected if k.startswith(model + "|")}
        for r in records:
            assert set(r) == fields, set(r) ^ fields
            assert r["host"] == "local" and r["node_id"] == driver_node
            assert r["finish_reason"] == "stop" and r["token_count_source"] == "server"
    # buero is German: so is the run's last line
    assert "eval fertig: 128 ok, 0 fehlgeschlagen, 0 wiederverwendet in " in printed


def test_in_flight_requests_never_exceed_concurrency(rc: RayCluster, tmp_path: Path) -> None:
    """Asserted from the simulator's own counters: concurrency 3 reaches exactly 3 in flight,
    concurrency 1 stays at 1, and the two models on one host run one after the other."""
    pack_data = tiny_pack(6)  # 12 cells per model
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    with SimServer(SimConfig(ttft_ms=60, tps=200, answer_tokens=20)) as sim:
        assert sim.url is not None
        models = [
            {"id": "par", "engine": "openai", "base_url": f"{sim.url}/v1", "concurrency": 3},
            {"id": "ser", "engine": "openai", "base_url": f"{sim.url}/v1", "concurrency": 1},
        ]
        config = write_yaml(tmp_path / "fleet.yaml", _fleet(models))
        outcome, printed = run(pack, config, out=tmp_path / "runs")
        stats = sim_stats(sim.url)
    assert outcome.exit_code == 0, printed
    assert outcome.bundle is not None
    assert stats["max_in_flight"] == {"par": 3, "ser": 1}
    assert stats["requests"] == {"par": 13, "ser": 13}  # 12 cells + 1 warm-up each
    for model in ("par", "ser"):
        wanted = Counter(dict.fromkeys(sim_keys(pack_data, model), 1))
        wanted[warmup_key(model)] = 1
        got = {k: n for k, n in stats["requests_by_key"].items() if k in wanted}
        assert got == dict(wanted), model
    records = shard_lines(outcome.bundle)
    driver_node = ray.get_runtime_context().get_node_id()
    assert {(r["host"], r["node_id"]) for r in records} == {("local", driver_node)}
    assert all(r["ok"] and r["engine"] == "openai" for r in records)
    by_model: dict[str, list[dict[str, Any]]] = {"par": [], "ser": []}
    for r in records:
        by_model[r["model"]].append(r)
    # models_per_host 1: the second model's cells start after the first model's last one
    assert max(r["t_end"] for r in by_model["par"]) <= min(r["t_start"] for r in by_model["ser"])


def test_node_removed_mid_run_then_resumed(rc: RayCluster, tmp_path: Path) -> None:
    pack_data = tiny_pack(4)  # 8 cells per model
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    slow_c = {"ttft_ms": 50, "tps": 20, "answer_tokens": 20}  # ~1 s per cell
    slow_b = {"ttft_ms": 50, "tps": 40, "answer_tokens": 24}  # ~0.65 s per cell, serial
    models: list[dict[str, Any]] = [
        {"id": "fa", "engine": "simulated", "host": "gpu-a", "concurrency": 2, "sim": FAST},
        {"id": "fb", "engine": "simulated", "host": "gpu-b", "concurrency": 1, "sim": slow_b},
        {"id": "fc", "engine": "simulated", "host": "gpu-c", "concurrency": 2, "sim": slow_c},
    ]
    config = write_yaml(tmp_path / "fleet.yaml", _fleet(models))
    old_node = rc.node_ids_by_host()["gpu-c"]
    out = tmp_path / "runs"

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(run, pack, config, out)
        deadline = time.monotonic() + 90
        shard: Path | None = None
        while time.monotonic() < deadline and not future.done():
            found = list(out.glob("*/responses/fc.jsonl"))
            if found and count_lines(found[0]) >= 1:
                shard = found[0]
                break
            time.sleep(0.05)
        assert shard is not None, "gpu-c never wrote a record"
        t_removed = time.time()
        rc.cluster.remove_node(rc.nodes.pop("gpu-c"))
        outcome, printed = future.result(timeout=120)

    assert outcome.exit_code == 1
    assert outcome.bundle is not None
    summary = printed.splitlines()[-2]
    assert summary.startswith("eval failed: ") and "node_lost" in summary, printed
    records = shard_lines(outcome.bundle)
    keys = [r["key"] for r in records]
    assert sorted(keys) == sorted(all_keys(pack_data, ["fa", "fb", "fc"]))  # once each
    lost = [r for r in records if r["model"] == "fc" and not r["ok"]]
    assert lost, "no gpu-c cell was lost"
    for r in records:
        if r["model"] == "fc":
            assert r["host"] == "gpu-c" and r["node_id"] == old_node
            assert r["ok"] or r["error_kind"] == "node_lost", r
        else:
            assert r["ok"], r  # the rest of the fleet finished
    assert outcome.failures_by_kind == {"node_lost": len(lost)}
    assert f"{len(lost)} failed (node_lost {len(lost)})" in summary
    # gpu-b kept running after gpu-c was gone
    assert max(r["t_end"] for r in records if r["model"] == "fb") > t_removed
    events = [json.loads(line) for line in (outcome.bundle / "events.jsonl").open()]
    assert [e["host"] for e in events if e["event"] == "node_lost"] == ["gpu-c"]
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["hosts"]["gpu-c"].get("monitoring_lost_at") is not None

    # a new node with the same label; resume runs exactly the lost cells there
    rc.add_host("gpu-c")
    new_node = rc.node_ids_by_host()["gpu-c"]
    assert new_node != old_node
    outcome2, printed2 = run(pack, config, resume=outcome.bundle)
    assert outcome2.exit_code == 0, printed2
    assert printed2.splitlines()[0] == f"{24 - len(lost)} reused, {len(lost)} to run"
    assert outcome2.n_ok == len(lost) and outcome2.n_reused == 24 - len(lost)
    records2 = shard_lines(outcome.bundle)
    new = records2[len(records) :]
    assert {r["key"] for r in new} == {r["key"] for r in lost}
    assert all(r["ok"] and r["node_id"] == new_node for r in new)
    final = {r["key"]: r for r in Bundle(outcome.bundle).responses()}
    assert set(final) == set(keys) and all(r["ok"] for r in final.values())
    assert json.loads((outcome.bundle / "bundle.json").read_text())["status"] == "done"


def test_unschedulable_client_actor_ends_as_node_lost_records(
    rc: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose client actor is not up within the deadline (here the environment's
    ready timeout, 0 s): its cells are recorded ``node_lost`` (never waited on forever), the
    run exits 1, and a resume completes them."""
    pack_data = tiny_pack(2)
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    models = [{"id": "su", "engine": "simulated", "host": "gpu-a", "sim": FAST}]
    config = write_yaml(tmp_path / "fleet.yaml", _fleet(models))
    monkeypatch.setenv("TOUCHSTONE_ACTOR_READY_TIMEOUT_S", "0")
    outcome, printed = run(pack, config, out=tmp_path / "runs")
    assert outcome.exit_code == 1 and outcome.bundle is not None
    records = shard_lines(outcome.bundle)
    assert sorted(r["key"] for r in records) == sorted(all_keys(pack_data, ["su"]))
    node = rc.node_ids_by_host()["gpu-a"]
    for r in records:
        assert (r["ok"], r["error_kind"], r["node_id"]) == (False, "node_lost", node)
        assert r["error"] == (f"client actor could not be scheduled on node {node[:8]} within 0 s")
    assert f"0 ok, {len(records)} failed (node_lost {len(records)})" in printed
    monkeypatch.undo()
    resumed, _ = run(pack, config, resume=outcome.bundle)
    assert resumed.exit_code == 0 and resumed.n_ok == len(records)
