"""``touchstone-ray queue run`` on ``ray start`` processes (a head and two workers labelled
gpu-a and gpu-b) with the real llama.cpp server behind gpu-b: four entries, two sharing
gpu-a one after another and the others beside them (from the log's timestamps), the reset on
gpu-a's node, the real server's answers pinned to gpu-b, and the summary."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_server import MODEL_ALIAS, LlamaServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fleet"))
from fleet_helpers import (
    Fleet,
    fleet_env,
    start_head,
    start_worker,
    tiny_pack,
    write_yaml,
)

pytestmark = pytest.mark.slow

HOSTS = ("gpu-a", "gpu-b")
SIM = {"ttft_ms": 150, "tps": 2000, "answer_tokens": 8}
"""A cell of about 0.15 s: an 8-cell entry runs for a second or more."""


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with fleet_env() as handle:
        start_head(handle)
        for host in HOSTS:
            start_worker(handle, host)
        handle.nodes_seen = handle.wait_for_nodes(1 + len(HOSTS))
        yield handle


def _config(tmp: Path, name: str, model: dict[str, Any]) -> str:
    write_yaml(
        tmp / f"{name}.yaml",
        {
            "ray": {"include_dashboard": False},
            "hosts": {h: {"label": h} for h in HOSTS},
            "models": [model],
            "scheduling": {"warmup": False, "max_attempts": 1},
            "monitor": {"interval_s": 0.5, "gpu": "off"},
        },
    )
    return f"{name}.yaml"


def _sim(model: str, host: str | None) -> dict[str, Any]:
    return {"id": model, "engine": "simulated", "sim": SIM} | ({"host": host} if host else {})


def test_four_entries_lease_hosts_on_ray_start_nodes_with_the_real_server(
    fleet: Fleet, real_server: LlamaServer
) -> None:
    tmp = fleet.tmp / "queue"
    pack = tiny_pack("night", 5)  # 10 cells per model
    for category in pack["categories"]:
        for prompt in category["prompts"]:
            prompt["max_tokens"] = 16  # the real server's answers stay short on 2 busy cores
    write_yaml(tmp / "pack.yaml", pack)
    gemma = {"id": MODEL_ALIAS, "engine": "llamacpp", "host": "gpu-b"}
    gemma |= {"base_url": real_server.base_url}
    entries = [
        {"name": "a1", "config": _config(tmp, "fa1", _sim("ma", "gpu-a"))},
        {"name": "b1", "config": _config(tmp, "fb1", gemma), "limit": 1},
        {"name": "a2", "config": _config(tmp, "fa2", _sim("ma2", "gpu-a"))},
        {"name": "l1", "config": _config(tmp, "fl1", _sim("ml", None))},
    ]
    resets = tmp / "resets.txt"
    queue = write_yaml(
        tmp / "night.yaml",
        {
            "hosts": {"gpu-a": {"reset_command": f'echo "$TOUCHSTONE_NODE_ID" >> {resets}'}},
            "entries": [{"kind": "eval", "pack": "pack.yaml"} | e for e in entries],
        },
    )
    done = fleet.cli("queue", "run", str(queue), "--address", fleet.address, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp / "night-queue"
    log = [json.loads(line) for line in (folder / "queue-state.jsonl").read_text().splitlines()]

    def at(event: str, entry: str) -> float:
        return float(next(e["ts"] for e in log if e["event"] == event and e["entry"] == entry))

    assert at("entry_started", "a2") >= at("entry_ended", "a1")
    for other in ("b1", "l1"):
        assert at("entry_started", other) < at("entry_ended", "a1")
    node_of = {n["Labels"]["touchstone.host"]: n["NodeID"] for n in fleet.nodes_seen
               if "touchstone.host" in n["Labels"]}  # fmt: skip
    assert resets.read_text().split() == [node_of["gpu-a"]] * 2
    ended = {e["entry"]: e for e in log if e["event"] == "entry_ended"}
    assert {n: e["state"] for n, e in ended.items()} == {
        n: "done" for n in ("a1", "b1", "a2", "l1")
    }
    b1 = Path(ended["b1"]["bundle"])
    records = [json.loads(line) for line in (b1 / "responses").glob("*.jsonl").__next__()
               .read_text().splitlines()]  # fmt: skip
    # --limit 1: the first prompt of each category (A1, E1) under both variants
    assert sorted(r["key"] for r in records) == sorted(
        f"{MODEL_ALIAS}|{v}|{p}|1" for v in ("baseline", "none") for p in ("A1", "E1")
    )
    for r in records:
        assert (r["ok"], r["engine"], r["host"]) == (True, "llamacpp", "gpu-b"), r["error"]
        assert r["node_id"] == node_of["gpu-b"]
        assert r["server_timings"]["predicted_n"] == r["completion_tokens"]
    summary = (folder / "summary.md").read_text()
    for name in ("a1", "b1", "a2", "l1"):
        assert f"| `{name}` | eval | done |" in summary
    assert (b1 / "rating-task.md").is_file()  # no judge: the report stage wrote the task
