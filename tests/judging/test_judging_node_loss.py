"""A judge host removed mid-run, on a real two-node Ray cluster (head + a worker labelled
``touchstone.host=box``): the judge pinned there ends its pending answers as judge errors with
the reason and is aborted; the judge on the head finishes and the scorecard counts it."""

from __future__ import annotations

import concurrent.futures
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from judging_factories import cells, make_pack, response, write_bundle
from ray_env import ray_cluster

from touchstone_ray.judging.runner import run_judge
from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """Head + ``box`` worker; yields the Cluster, the box node handle and both node ids."""
    with ray_cluster(["box"], head_cpus=2) as rc:
        box = rc.nodes["box"]
        yield {
            "cluster": rc.cluster,
            "box": box,
            "box_id": box.node_id,
            "head_id": rc.cluster.head_node.node_id,
        }


def _verdicts(bundle: Path, judge: str) -> list[dict[str, Any]]:
    path = bundle / "judgements" / judge / "verdicts.jsonl"
    return read_jsonl(path).records if path.exists() else []


def test_judge_host_removed_mid_run(cluster: dict[str, Any], tmp_path: Path) -> None:
    pack = make_pack()
    responses = [
        response(p, model=m, variant=v, repeat=r, response_text=f"Antwort {m} {v} {p}")
        for m, v, p, r in cells(pack, ("m",))
    ]
    bundle = write_bundle(tmp_path / "bundle", pack, responses)
    fleet = {
        "ray": {"include_dashboard": False},
        "hosts": {"box": {"label": "box"}},
        "models": [{"id": "m", "engine": "simulated"}],
    }
    (bundle / "config.yaml").write_text(yaml.safe_dump(fleet), encoding="utf-8")
    judges = {
        "judges": [
            # ~1.5 s per verdict, one at a time: most answers are still pending at the cut
            {"id": "slow", "engine": "simulated", "model": "sj", "host": "box",
             "sim": {"ttft_ms": 1500, "tps": 20000}},
            {"id": "fast", "engine": "simulated", "model": "fj",
             "sim": {"ttft_ms": 1, "tps": 20000}},
        ]
    }  # fmt: skip
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump(judges), encoding="utf-8")
    box_id = cluster["box_id"]
    out = io.StringIO()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(run_judge, bundle, config, None, None, out)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not future.done():
            if _verdicts(bundle, "slow"):
                break
            time.sleep(0.05)
        assert _verdicts(bundle, "slow"), f"the slow judge never wrote a verdict: {out.getvalue()}"
        cluster["cluster"].remove_node(cluster["box"])
        code = future.result(timeout=120)

    printed = out.getvalue()
    assert code == 1, printed
    keys = sorted(r.key for r in responses)
    reasons = {
        f"judge actor on node {box_id[:8]} died: ActorDiedError",
        f"node {box_id[:8]} of judge slow is dead",
    }
    slow = _verdicts(bundle, "slow")
    assert sorted(v["key"] for v in slow) == keys  # every answer once: none dropped
    scored = [v for v in slow if v["status"] == "scored"]
    lost = [v for v in slow if v["status"] != "scored"]
    assert 1 <= len(scored) < len(keys) and lost, printed
    reason = lost[0]["error"]
    assert reason in reasons, reason
    for v in lost:
        assert (v["status"], v["score"], v["call_failed"], v["error"]) == (
            "judge_error",
            None,
            True,
            reason,
        )
    assert f"judge slow: aborted: {reason}; stored verdicts kept, rerun to resume" in printed
    start = f"Judge slow: abgebrochen ({reason}): "  # the pack's language: German
    summary = next((line for line in printed.splitlines() if line.startswith(start)), None)
    assert summary is not None, printed
    assert summary.startswith(f"{start}{len(scored)} bewertet, ")
    assert f"{len(lost)} Judge-Fehler" in summary

    # the other judge finished: every answer scored, every row reported, and it is counted
    fast = _verdicts(bundle, "fast")
    assert sorted(v["key"] for v in fast) == keys
    assert {v["status"] for v in fast} == {"scored"}
    reports = read_jsonl(bundle / "judgements" / "fast" / "reports.jsonl").records
    assert sorted((r["model"], r["variant"]) for r in reports) == [
        ("m", "baseline"),
        ("m", "none"),
    ]
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["judges"] == ["fast"]
    assert printed.splitlines()[-1] == str(bundle / "scorecard.json")
