"""A partitioned host: a Ray worker in its own network namespace, joined to the head over a
veth pair, loses its link while cells run on it. Its in-flight cells end as ``node_lost`` (or
``timeout``) well within their deadline, the other host finishes, the run exits 1 with a
summary; once the link is back (and the host has a node again) ``--resume`` completes.

Topology, all on this machine (needs root and iproute2; skipped otherwise):

- a namespace ``tsr<n>`` and a veth pair: ``tsrh<n>`` in the root namespace with
  ``10.201.<k>.1/30``, ``tsrw<n>`` inside with ``10.201.<k>.2/30`` (private addresses made here,
  ``<k>`` from the pid so parallel runs do not collide);
- the head (``Cluster``) listens on the veth address ``10.201.<k>.1``, with a worker labelled
  ``solid`` beside it; the worker labelled ``part`` is ``ray start --block`` inside the
  namespace with ``--node-ip-address 10.201.<k>.2``;
- Ray's own health-check knobs (``RAY_health_check_*``) are shortened for this cluster, so the
  GCS declares the cut node dead after ~5 s instead of ~68 s; touchstone needs no knob: its
  driver polls node liveness every ``LIVENESS_INTERVAL_S`` (2 s).

Teardown kills exactly the processes inside the namespace (``ip netns pids``), shuts the
cluster down and deletes the veth pair and the namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import all_keys, cli, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster, ray_cluster
from rel_helpers import fault_when, line_count, read_log, start_cli, wait_for

from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.fleet.dispatch import LIVENESS_INTERVAL_S, call_deadline_s
from touchstone_ray.fleet.hosts import HOST_LABEL

pytestmark = pytest.mark.slow

HEALTH_CHECK = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}
"""Ray's GCS health check of this test's cluster: a silent node is dead after ~3-6 s."""
SLOW = {"ttft_ms": 50, "tps": 20, "answer_tokens": 20}  # ~1 s per cell
CELL_TIMEOUT_S = 30.0


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _kill_namespace(ns: str) -> None:
    """SIGKILL every process inside ``ns`` (only this test's processes live there)."""
    for pid in _ip("netns", "pids", ns, check=False).stdout.split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


@dataclass
class Partition:
    """The namespace, its link, and the cluster around it."""

    ns: str
    link: str
    head_ip: str
    worker_ip: str
    env: dict[str, str]
    rc: RayCluster
    worker: subprocess.Popen[bytes] | None = None

    def start_worker(self, log: Path) -> None:
        """``ray start --block`` inside the namespace, labelled ``part``."""
        cmd = [
            "ip", "netns", "exec", self.ns, sys.executable, "-m", "ray.scripts.scripts",
            "start", "--block", "--address", self.rc.address,
            "--node-ip-address", self.worker_ip, "--num-cpus", "1",
            "--labels", json.dumps({HOST_LABEL: "part"}),
        ]  # fmt: skip
        with open(log, "w") as fh:
            self.worker = subprocess.Popen(
                cmd, stdout=fh, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )
        wait_for(lambda: "part" in RayCluster.node_ids_by_host(), 90, "the part node", 0.2)

    def link_down(self) -> None:
        _ip("link", "set", self.link, "down")

    def link_up(self) -> None:
        _ip("link", "set", self.link, "up")

    def kill_namespace(self) -> None:
        """SIGKILL the namespace's processes (the worker node) and wait until they are gone."""
        _kill_namespace(self.ns)
        if self.worker is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.worker.wait(timeout=10)
        wait_for(lambda: not _ip("netns", "pids", self.ns, check=False).stdout.split(), 30, "ns")


@contextlib.contextmanager
def partition_cluster() -> Iterator[Partition]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 for a network namespace")
    n = os.getpid() % 100_000
    k = os.getpid() % 250 + 1
    ns, host_end, ns_end = f"tsr{n}", f"tsrh{n}", f"tsrw{n}"
    head_ip, worker_ip = f"10.201.{k}.1", f"10.201.{k}.2"
    if _ip("netns", "add", ns, check=False).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    part: Partition | None = None
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        _ip("link", "set", ns_end, "netns", ns)
        _ip("addr", "add", f"{head_ip}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("netns", "exec", ns, "ip", "addr", "add", f"{worker_ip}/30", "dev", ns_end)
        _ip("netns", "exec", ns, "ip", "link", "set", ns_end, "up")
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        on_veth = {"node_ip_address": head_ip}
        with ray_cluster(["solid"], head_args=on_veth, node_args=on_veth, env=HEALTH_CHECK) as rc:
            part = Partition(ns, host_end, head_ip, worker_ip, dict(os.environ), rc)
            try:
                yield part
            finally:
                part.link_up()
                part.kill_namespace()
    finally:
        _kill_namespace(ns)  # a start that failed half-way
        _ip("link", "del", host_end, check=False)
        _ip("netns", "del", ns, check=False)


def test_partitioned_host_ends_node_lost_and_resumes(tmp_path: Path) -> None:
    pack_data = tiny_pack(4, pack_id="part")  # 8 cells per model
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    models: list[dict[str, Any]] = [
        {"id": "mp", "engine": "simulated", "host": "part", "concurrency": 2, "sim": SLOW},
        {"id": "ms", "engine": "simulated", "host": "solid", "concurrency": 1, "sim": SLOW},
    ]
    for m in models:
        m["timeout_s"] = CELL_TIMEOUT_S
    fleet = write_yaml(
        tmp_path / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "hosts": {"part": {"label": "part"}, "solid": {"label": "solid"}},
            "models": models,
            "monitor": {"interval_s": 0.5, "gpu": "off"},
        },
    )
    settings = EngineSettings(base_url="http://unused:1", timeout_s=CELL_TIMEOUT_S, max_attempts=3)
    deadline_s = call_deadline_s(settings)  # the driver's own deadline of these cells
    out = tmp_path / "runs"
    with partition_cluster() as part:
        part.start_worker(tmp_path / "worker1.log")
        old_node = RayCluster.node_ids_by_host()["part"]
        args = ["--pack", str(pack), "--config", str(fleet), "--address", part.rc.address]
        proc = start_cli(["eval", *args, "--out", str(out)], tmp_path / "eval")
        t_cut = fault_when(
            proc,
            lambda: line_count(list(out.glob("*/responses/mp.jsonl"))) >= 1,
            "a record from the part host",
            tmp_path / "eval",
            part.link_down,
            timeout_s=120,
            exit_timeout_s=120,
        )
        t_exit = time.time()
        stdout, stderr = read_log(tmp_path / "eval")
        assert proc.returncode == 1, (stdout, stderr)
        assert "Traceback" not in stderr, stderr
        bundle = next(out.glob("*/bundle.json")).parent
        lines = stdout.splitlines()
        assert lines[-1] == str(bundle)
        assert lines[-2].startswith("eval failed: ") and "node_lost" in lines[-2], stdout

        records = shard_lines(bundle)
        keys = Counter(r["key"] for r in records)
        assert set(keys) == all_keys(pack_data, ["mp", "ms"]) and set(keys.values()) == {1}
        lost = [r for r in records if not r["ok"]]
        assert lost and {r["model"] for r in lost} == {"mp"}, lost
        for r in lost:
            assert r["error_kind"] in ("node_lost", "timeout"), r
            assert r["host"] == "part" and r["node_id"] == old_node
            assert r["t_end"] - t_cut < deadline_s  # ended within its deadline …
            assert r["t_end"] - t_cut < 60  # … and, with the node declared dead, soon
        assert all(r["ok"] for r in records if r["model"] == "ms")  # the other host finished
        assert t_exit - t_cut < 90, "the run should end soon after the node is lost"
        n_lost = Counter(r["error_kind"] for r in lost)
        summary = ", ".join(f"{k} {n}" for k, n in sorted(n_lost.items()))
        assert f"{len(lost)} failed ({summary})" in lines[-2]
        events = [json.loads(e) for e in (bundle / "events.jsonl").read_text().splitlines()]
        assert [e["host"] for e in events if e["event"] == "node_lost"] == ["part"]
        manifest = json.loads((bundle / "bundle.json").read_text())
        assert manifest["status"] == "failed"
        assert manifest["hosts"]["part"]["monitoring_lost_at"] is not None
        assert manifest["hosts"]["solid"].get("monitoring_lost_at") is None
        assert LIVENESS_INTERVAL_S < 10

        # the link comes back: the old raylet learns it was declared dead and exits; the host
        # gets a node again, and the resume runs exactly the lost cells there
        part.link_up()
        part.kill_namespace()
        part.start_worker(tmp_path / "worker2.log")
        new_node = RayCluster.node_ids_by_host()["part"]
        assert new_node != old_node
        resumed = cli("eval", *args, "--resume", str(bundle), timeout=180)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.splitlines()[0] == (
            f"{len(keys) - len(lost)} reused, {len(lost)} to run"
        )
        after = [r for r in shard_lines(bundle) if r not in records]
        assert sorted(r["key"] for r in after) == sorted(r["key"] for r in lost)
        assert all(r["ok"] and r["node_id"] == new_node for r in after)
        assert json.loads((bundle / "bundle.json").read_text())["status"] == "done"
