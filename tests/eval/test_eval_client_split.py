"""The client actor splits an endpoint over worker processes above STREAMS_PER_PROCESS: the
split arithmetic, and 64 streams against the simulator in a real Ray (records complete, every
stamp checked against the server's own send times)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ray_env import LocalRay

from touchstone_ray.config import ModelSpec
from touchstone_ray.fleet import Cell
from touchstone_ray.fleet.client_actor import spawn_client
from touchstone_ray.fleet.stream_worker import (
    STREAMS_PER_PROCESS,
    max_stream_workers,
    split_streams,
)
from touchstone_ray.sim import SimConfig, SimServer
from touchstone_ray.sim._text import request_key


@pytest.mark.parametrize(
    ("concurrency", "per", "shares"),
    [
        (1, 16, [1]),
        (16, 16, [16]),
        (17, 16, [9, 8]),
        (40, 16, [14, 13, 13]),
        (64, 16, [16, 16, 16, 16]),
        (65, 16, [13, 13, 13, 13, 13]),
        (100, 32, [25, 25, 25, 25]),
        (3, 1, [1, 1, 1]),
    ],
)
def test_split_arithmetic(concurrency: int, per: int, shares: list[int]) -> None:
    assert split_streams(concurrency, per) == shares
    assert sum(shares) == concurrency and max(shares) <= per


def test_split_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="concurrency 0 and per_process 16 must be ≥ 1"):
        split_streams(0, 16)
    with pytest.raises(ValueError, match="concurrency 4 and per_process 0 must be ≥ 1"):
        split_streams(4, 0)


@pytest.mark.parametrize(
    ("cores", "workers"), [(None, 1), (2, 1), (7, 1), (8, 2), (16, 4), (64, 16)]
)
def test_workers_a_host_gives_a_split(cores: int | None, workers: int) -> None:
    assert max_stream_workers(cores) == workers


def test_default_threshold_splits_64_streams() -> None:
    assert len(split_streams(64)) == 64 // STREAMS_PER_PROCESS


SCHEDULE = {"ttft_ms": 80, "tps": 100, "answer_tokens": 40}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig(models=["m"], **SCHEDULE)) as server:
        yield server


def _cells(n: int, tag: str) -> list[Cell]:
    return [
        Cell(
            key=f"{tag}-{i}",
            model="m",
            variant="v",
            system_prompt=None,
            category="c",
            prompt_id=f"p{i}",
            prompt=f"{tag} frage {i}",
            repeat=0,
            max_tokens=None,
        )
        for i in range(n)
    ]


def _niceness(pid: int) -> int:
    """A process's niceness as the kernel reports it (/proc/PID/stat, field 19)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[16])


EXPECTED_NICE = 0 if os.geteuid() == 0 else 15
"""Ray starts workers at niceness 15; a client process lowers it to 0 where allowed (root)."""


def _run(sim: SimServer, concurrency: int, tag: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    import ray

    spec = ModelSpec(
        id="m", engine="openai", base_url=sim.url + "/v1", concurrency=concurrency, timeout_s=60
    )
    node = ray.get_runtime_context().get_node_id()
    actor = spawn_client("local", node, {"m": spec}, pack_id="p", pack_version=1, max_workers=4)
    try:
        facts = ray.get(actor.ready.remote(), timeout=60)
        facts["nice"] = _niceness(facts["client_pid"])
        pids = ray.get(actor.split.remote(), timeout=60)
        refs = [actor.run_cell.remote(cell, False) for cell in _cells(concurrency, tag)]
        records = ray.get(refs, timeout=120)
        harness = ray.get(actor.harness_pids.remote(), timeout=30)
        ray.get(actor.close.remote(), timeout=30)
    finally:
        ray.kill(actor)
    # the footprint counts the workers' processes too
    assert harness == [facts["client_pid"], *[pid for pid, _ in pids["m"]]]
    return {"client_pid": facts["client_pid"], "nice": facts["nice"], "workers": pids["m"]}, records


def _truth(sim: SimServer) -> dict[str, dict[str, Any]]:
    traces = httpx.get(sim.url + "/sim/trace", params={"limit": 10_000}).json()["traces"]
    return {t["key"]: t for t in traces}


def test_64_streams_split_over_workers_with_true_stamps(
    ray_local: LocalRay, sim: SimServer
) -> None:
    procs, records = _run(sim, 64, "split")
    pids = [pid for pid, _ in procs["workers"]]
    assert len(pids) == 64 // STREAMS_PER_PROCESS
    assert len(set(pids)) == len(pids) and procs["client_pid"] not in pids
    assert [nice for _, nice in procs["workers"]] == [EXPECTED_NICE] * len(pids)
    assert procs["nice"] == EXPECTED_NICE
    truth = _truth(sim)
    assert len(records) == 64 and all(r["ok"] for r in records), [r["error"] for r in records]
    for rec in records:
        trace = truth[request_key("m", [{"role": "user", "content": rec_prompt(rec)}])]
        sent = [t for t, ch in trace["chunks"] if ch in ("content", "reasoning")]
        first_true = sent[0]
        assert rec["completion_tokens"] == SCHEDULE["answer_tokens"]
        assert rec["token_count_source"] == "server"
        # the clock starts at the send, before the server received the request
        assert rec["t_start"] <= trace["t_received"] + 0.001
        # the first token is stamped close to the server's write of it; the server marks a
        # chunk after its write returned, which on a loaded 2-core machine can be a few
        # tens of ms after the client read it, and 4 workers + the server share 2 cores
        # (bounds for plausibility; the precision figures are bench_client_overhead's)
        got = rec["t_start"] + rec["ttft_s"]
        assert first_true - 0.05 <= got < first_true + 0.5, (got - first_true, rec["key"])
        assert rec["ttft_s"] >= SCHEDULE["ttft_ms"] / 1000  # the server waits that long
        assert rec["t_end"] >= sent[-1] - 0.05  # after the last token was written
        assert -0.05 <= rec["t_end"] - trace["t_end"] < 0.5  # the end marker, as written


def rec_prompt(rec: dict[str, Any]) -> str:
    return f"{rec['key'].split('-')[0]} frage {rec['key'].split('-')[1]}"


def test_records_have_the_same_shape_split_or_not(ray_local: LocalRay, sim: SimServer) -> None:
    procs, records = _run(sim, 4, "single")
    assert procs["workers"] == []
    _, split_records = _run(sim, STREAMS_PER_PROCESS + 1, "two")
    assert len(split_records) == STREAMS_PER_PROCESS + 1
    assert all(r["ok"] for r in records + split_records)
    assert {tuple(sorted(r)) for r in records} == {tuple(sorted(r)) for r in split_records}
    assert {r["node_id"] for r in records} == {r["node_id"] for r in split_records}
