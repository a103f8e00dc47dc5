"""Each host starts on its own (no start-up barrier over the fleet), on a real two-worker
Ray cluster: a host whose preflight is slow does not hold the other back, and with
``--strict-preflight`` a host whose endpoint is unreachable stops before its cells while the
other finishes; a later ``--resume`` runs the stopped host's cells.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from eval_helpers import all_keys, run, shard_lines, tiny_pack, write_yaml
from loopback_app import LoopbackApp
from ray_env import RayCluster

from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.slow

HOSTS = ["gpu-a", "gpu-b"]
FAST = {"ttft_ms": 5, "tps": 2000, "answer_tokens": 20}
SLOW_MODELS_S = 4.0
"""How long the slow server takes to answer ``GET /v1/models`` (the preflight's call, s)."""


class SlowPreflight(LoopbackApp):
    """An OpenAI-compatible server whose ``/v1/models`` answers after :data:`SLOW_MODELS_S`;
    its chat streams ``Ja.`` at once."""

    thread_name = "slow-preflight"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)

    async def _models(self, request: web.Request) -> web.Response:
        await asyncio.sleep(SLOW_MODELS_S)
        return web.json_response({"object": "list", "data": [{"id": "slow-m"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"content": "Ja."}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
        ]
        for chunk in chunks:
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


RAY_HOSTS = HOSTS
"""A worker per host label in this module's ``rc`` (tests/conftest.py)."""


def _fleet(tmp: Path, models: list[dict[str, Any]]) -> Path:
    config = {
        "ray": {"include_dashboard": False},
        "hosts": {h: {"label": h} for h in HOSTS},
        "models": models,
        "scheduling": {"warmup": False, "max_attempts": 1},
        "monitor": {"interval_s": 0.2, "gpu": "off"},
    }
    return write_yaml(tmp / "fleet.yaml", config)


def _events(bundle: Path) -> list[dict[str, Any]]:
    return read_jsonl(bundle / "events.jsonl").records


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_slow_preflight_does_not_hold_the_other_host_back(rc: RayCluster, tmp_path: Path) -> None:
    server = SlowPreflight()
    url = server.start()
    try:
        pack_data = tiny_pack(3)
        pack = write_yaml(tmp_path / "pack.yaml", pack_data)
        models = [
            {"id": "fast", "engine": "simulated", "host": "gpu-a", "sim": FAST},
            {"id": "slow-m", "engine": "openai", "host": "gpu-b", "base_url": url + "/v1"},
        ]
        outcome, printed = run(pack, _fleet(tmp_path, models), out=tmp_path / "runs")
    finally:
        server.stop()
    assert outcome.exit_code == 0, printed
    assert outcome.bundle is not None
    events = _events(outcome.bundle)
    slow_preflight = next(e for e in events if e["event"] == "preflight" and e["host"] == "gpu-b")
    fast_done = next(e for e in events if e["event"] == "model_done" and e["host"] == "gpu-a")
    # gpu-a ran all its cells while gpu-b's preflight was still waiting for /v1/models
    assert fast_done["ts"] < slow_preflight["ts"]
    run_start = next(e for e in events if e["event"] == "run_start")
    assert slow_preflight["ts"] - run_start["ts"] >= SLOW_MODELS_S
    records = shard_lines(outcome.bundle)
    assert sorted(r["key"] for r in records) == sorted(all_keys(pack_data, ["fast", "slow-m"]))
    assert all(r["ok"] for r in records)
    fast_cells = [r for r in records if r["model"] == "fast"]
    assert max(r["t_end"] for r in fast_cells) < slow_preflight["ts"]
    # each host's context check is its own event, after its own preflight
    contexts = {e["host"]: e for e in events if e["event"] == "context"}
    assert sorted(contexts) == HOSTS
    assert contexts["gpu-b"]["ts"] >= slow_preflight["ts"]
    assert contexts["gpu-b"]["models"]["slow-m"]["n_prompts"] == 6  # 3 prompts × 2 variants
    # the manifest has each host's facts, monitor capabilities and engine lookup
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    node_ids = rc.node_ids_by_host()
    for host in HOSTS:
        entry = manifest["hosts"][host]
        assert entry["node_id"] == node_ids[host]
        assert isinstance(entry["client_pid"], int)
        assert entry["capabilities"]["sys_used_mb"]["supported"] is True
        assert isinstance(entry["engines"], dict)
    # every model still has its baseline tick in its host's samples
    for host, model in (("gpu-a", "fast"), ("gpu-b", "slow-m")):
        samples = read_jsonl(outcome.bundle / "hosts" / f"{host}.jsonl").records
        baselines = [s for s in samples if s.get("baseline")]
        assert [s["model"] for s in baselines] == [model]


def test_strict_preflight_stops_only_the_failing_host(rc: RayCluster, tmp_path: Path) -> None:
    pack_data = tiny_pack(2)
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    dead_url = f"http://127.0.0.1:{_closed_port()}/v1"
    models = [
        {"id": "gone", "engine": "openai", "host": "gpu-a", "base_url": dead_url},
        {"id": "fine", "engine": "simulated", "host": "gpu-b", "sim": FAST},
    ]
    config = _fleet(tmp_path, models)
    outcome, printed = run(pack, config, out=tmp_path / "runs", strict_preflight=True)
    assert outcome.exit_code == 1 and outcome.bundle is not None
    assert (outcome.n_ok, outcome.n_failed) == (4, 0)
    records = shard_lines(outcome.bundle)
    assert sorted(r["key"] for r in records) == sorted(all_keys(pack_data, ["fine"]))
    events = _events(outcome.bundle)
    preflight = next(e for e in events if e["event"] == "preflight" and e["host"] == "gpu-a")
    error = preflight["result"]["gone"]["error"]
    assert preflight["result"]["gone"]["reachable"] is False and error
    reason = f"preflight failed (1 problems): gpu-a: gone: endpoint unreachable ({error})"
    stopped = [e for e in events if e["event"] == "host_stopped"]
    assert [(e["host"], e["reason"]) for e in stopped] == [("gpu-a", reason)]
    assert outcome.hosts_stopped == {"gpu-a": reason}
    assert not [e for e in events if e["event"] == "model_start" and e["host"] == "gpu-a"]
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    assert manifest["hosts"]["gpu-a"]["stopped_reason"] == reason
    assert manifest["status"] == "failed"
    assert "eval failed: 4 ok, 0 failed, 0 reused in " in printed
    assert printed.splitlines()[-2].endswith(f" s; gpu-a stopped before its cells: {reason}")
    # without --strict-preflight the cells of that host run (and fail); the resume runs them
    resumed, _ = run(pack, config, resume=outcome.bundle)
    assert (resumed.n_reused, resumed.n_ok, resumed.n_failed) == (4, 0, 4)
    gone = [r for r in shard_lines(outcome.bundle) if r["model"] == "gone"]
    assert sorted(r["key"] for r in gone) == sorted(all_keys(pack_data, ["gone"]))
    assert {(r["ok"], r["error_kind"]) for r in gone} == {(False, "connect")}
