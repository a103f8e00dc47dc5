"""HostMonitor and MonitorSet on a real local Ray (one for the module)."""

from __future__ import annotations

import errno
import itertools
import os
import statistics
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
import ray
from disk_image import ext4_mount, turn_read_only
from ray_env import LocalRay
from test_telemetry_engines import TICK, Bursts

from touchstone_ray.fleet import MonitorSet, monitor_name
from touchstone_ray.storage import read_jsonl

INTERVAL_S = 0.1


@pytest.fixture(scope="module")
def node_id(ray_local: LocalRay) -> str:
    """The module's local Ray (``ray_local``, tests/conftest.py): its node id."""
    return ray_local.node_id


def test_monitor_samples_at_interval(node_id: str, tmp_path: Path) -> None:
    ms = MonitorSet(tmp_path, interval_s=INTERVAL_S, gpu_mode="auto")
    try:
        caps = ms.start({"alpha": node_id})
        assert caps["alpha"]["sys_used_mb"]["supported"]
        assert not caps["alpha"]["gpus"]["supported"]  # no NVML here, the reason travels along
        assert caps["alpha"]["gpus"]["reason"]
        assert ray.get_actor(monitor_name("alpha")) is not None
        time.sleep(1.2)
        base = ms.baseline("alpha", "qwen3:8b")
        assert base is not None and base["baseline"] and base["model"] == "qwen3:8b"
        time.sleep(0.3)
        ms.drain()
        ms.register_pids("alpha", [os.getpid()])
        fp = ms.footprint()["alpha"]
        assert fp["node_id"] == node_id  # pinned where we asked
        assert str(os.getpid()) in fp["rss_mb"] and str(fp["monitor_pid"]) in fp["rss_mb"]
        assert fp["total_rss_mb"] > 0
    finally:
        ms.stop()
    rows = read_jsonl(ms.path_for("alpha")).records
    assert ms.path_for("alpha").name == "alpha.jsonl"
    baselines = [r for r in rows if r["baseline"]]
    assert len(baselines) == 1 and baselines[0]["ts"] == base["ts"]  # written once
    ticks = [r["ts"] for r in rows if not r["baseline"]]
    assert len(ticks) >= 10
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert statistics.median(gaps) == pytest.approx(INTERVAL_S, abs=0.03)
    assert all(r["node_id"] == node_id and r["host"] == "alpha" for r in rows)
    assert not ms.lost


def test_footprint_holds_the_cpu_a_registered_process_used(node_id: str, tmp_path: Path) -> None:
    """A registered process that burns a known CPU time while the monitor runs: the footprint
    has exactly what the kernel counted for it since the monitor first read it."""
    b = Bursts()
    ms = MonitorSet(tmp_path, interval_s=INTERVAL_S)
    try:
        ms.start({"cpu": node_id})
        ms.register_pids("cpu", [b.proc.pid])
        time.sleep(3 * INTERVAL_S)  # read while idle: its start-up is not the run's
        before = b.cpu_s()
        b.burn(0.3)
        time.sleep(3 * INTERVAL_S)
        fp = ms.footprint()["cpu"]
        assert fp["cpu_s"][str(b.proc.pid)] == pytest.approx(b.cpu_s() - before, abs=1e-9)
        assert fp["cpu_s"][str(b.proc.pid)] >= 0.3 - TICK
        assert set(fp["cpu_s"]) == set(fp["rss_mb"])  # touchstone's own processes
        assert fp["cpu_s"][str(fp["monitor_pid"])] is not None  # read on every tick
        assert fp["ray_cpu_s"], "Ray's own processes on the host are harness"
        assert not set(fp["ray_cpu_s"]) & set(fp["cpu_s"])
        total = sum(v for v in fp["cpu_s"].values() if v) + sum(fp["ray_cpu_s"].values())
        assert fp["total_cpu_s"] == pytest.approx(total)
        assert 6 * INTERVAL_S <= fp["span_s"] <= 30
        assert fp["cpu_pct_mean"] == pytest.approx(total / fp["span_s"] * 100)
    finally:
        ms.stop()
        b.stop()


def test_killed_monitor_is_reported_and_never_restarted(node_id: str, tmp_path: Path) -> None:
    ms = MonitorSet(tmp_path, interval_s=INTERVAL_S, call_timeout_s=5.0)
    try:
        ms.start({"victim": node_id, "bystander": node_id})
        time.sleep(0.5)
        written = ms.drain()["victim"]
        assert written >= 3
        t_kill = time.time()
        ray.kill(ray.get_actor(monitor_name("victim")))
        time.sleep(0.3)
        drained = ms.drain()
        assert "victim" not in drained and drained["bystander"] > 0
        assert "victim" in ms.lost and ms.lost["victim"] >= t_kill
        assert "died" in ms.lost_reason["victim"]
        assert ms.live_hosts == ["bystander"]
        assert ms.baseline("victim", "m") is None
        time.sleep(0.3)
        ms.drain()
        with pytest.raises(ValueError):  # no monitor of that name anywhere: not restarted
            ray.get_actor(monitor_name("victim"))
        ms.start({"victim": node_id})
        assert ms.live_hosts == ["bystander"]
        with pytest.raises(ValueError):  # start() does not revive a lost host either
            ray.get_actor(monitor_name("victim"))
    finally:
        ms.stop()
    assert len(read_jsonl(ms.path_for("victim")).records) == written  # drained samples kept


def test_disk_failing_under_the_background_drain_is_raised_by_stop(
    node_id: str, tmp_path: Path
) -> None:
    """The drain thread ends quietly on EROFS; stop() kills the monitor, closes the file and
    raises that error on the caller's thread; the samples written before stay."""
    escaped: list[BaseException | None] = []
    saved_hook = threading.excepthook
    threading.excepthook = lambda args: escaped.append(args.exc_value)
    try:
        with ext4_mount(tmp_path, "hostsdisk") as mnt:
            ms = MonitorSet(mnt, interval_s=INTERVAL_S, autodrain_s=0.1)
            ms.start({"ro": node_id})
            deadline = time.monotonic() + 10
            while not ms.path_for("ro").exists() or ms.path_for("ro").stat().st_size == 0:
                assert time.monotonic() < deadline, "no sample drained within 10 s"
                time.sleep(0.05)
            turn_read_only(mnt)
            deadline = time.monotonic() + 10
            while ms.write_error is None:
                assert time.monotonic() < deadline, "the drain never hit the read-only disk"
                time.sleep(0.05)
            with pytest.raises(OSError) as raised:
                ms.stop()
            assert raised.value.errno == errno.EROFS
            assert ms.live_hosts == [] and ms._writers == {}
            with pytest.raises(ValueError):  # killed
                ray.get_actor(monitor_name("ro"))
            rows = read_jsonl(ms.path_for("ro")).records
            assert rows and all(r["host"] == "ro" for r in rows)
    finally:
        threading.excepthook = saved_hook
    assert escaped == []


@ray.remote(num_cpus=0)
class Hung:
    """Stands in for a monitor whose node stopped answering (a partition, ray-notes.md)."""

    def drain(self) -> list[dict[str, object]]:
        time.sleep(60)
        return []


def test_unanswered_monitor_is_lost_after_timeout(node_id: str, tmp_path: Path) -> None:
    ms = MonitorSet(tmp_path, call_timeout_s=0.5)
    hung = Hung.remote()
    ms._actors["hung"] = hung  # as if started: MonitorSet cannot tell the difference
    t0 = time.monotonic()
    assert ms.drain() == {}
    assert time.monotonic() - t0 < 3.0
    assert ms.lost_reason["hung"] == "no answer within 0.5 s" and ms.live_hosts == []
    with pytest.raises(ray.exceptions.RayActorError):  # killed, so it cannot come back
        ray.get(hung.drain.remote(), timeout=10)
    ms.stop()


@pytest.mark.slow
def test_gauges_exported(node_id: str, tmp_path: Path) -> None:
    port = next(n["MetricsExportPort"] for n in ray.nodes() if n["NodeID"] == node_id)
    ms = MonitorSet(tmp_path, interval_s=INTERVAL_S)
    ms.start({"gauged": node_id})
    try:
        deadline, text = time.monotonic() + 20, ""
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                text = r.read().decode()
            if "ray_touchstone_host_mem_pressure{" in text and 'host="gauged"' in text:
                break
            time.sleep(0.5)
        assert "ray_touchstone_host_sys_used_mb{" in text
        assert "ray_touchstone_host_mem_pressure{" in text
    finally:
        ms.stop()


def test_monitor_samples_the_engine_process_of_each_endpoint(node_id: str, tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    from touchstone_ray.telemetry import EngineTarget

    srv = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True)\ntime.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert srv.stdout is not None
        url = f"http://localhost:{int(srv.stdout.readline())}/v1"
        with socket.socket() as probe:  # a free port nobody listens on
            probe.bind(("127.0.0.1", 0))
            dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
        targets = [EngineTarget(url), EngineTarget(dead), EngineTarget("simulated:s", None, True)]
        ms = MonitorSet(tmp_path, interval_s=INTERVAL_S)
        try:
            ms.start({"alpha": node_id}, {"alpha": targets})
            status = ms.engines()["alpha"]
            assert status[url] == {"pid": srv.pid, "found_by": "port", "reason": None}
            assert status[dead]["pid"] is None and "nothing listens" in status[dead]["reason"]
            assert status["simulated:s"]["reason"].startswith("simulated")
            time.sleep(0.6)
            base = ms.baseline("alpha", "m")
        finally:
            ms.stop()
        assert base is not None and [e["endpoint"] for e in base["engines"]] == [url]
        rows = read_jsonl(ms.path_for("alpha")).records
        engines = [e for r in rows for e in r["engines"]]
        assert len(engines) >= 5 and {e["pid"] for e in engines} == {srv.pid}
        rss = psutil.Process(srv.pid).memory_info().rss / 2**20
        assert engines[-1]["rss_mb"] == pytest.approx(rss, rel=0.05)
        assert all(r["foreign_cpu_pct"] is not None for r in rows[1:])
    finally:
        srv.kill()
        srv.wait()


def test_a_reset_monitor_starts_over_for_the_next_run(node_id: str) -> None:
    """A host agent's monitor, reused by the next run: ``reset`` stops the sampling, drops
    the buffer and the counts; ``start`` samples again, as the new host."""
    from touchstone_ray.telemetry.monitor import HostMonitor

    actor = HostMonitor.remote("first", node_id, INTERVAL_S, "off")  # type: ignore[attr-defined]
    try:
        ray.get(actor.start.remote(), timeout=30)
        time.sleep(0.5)
        assert ray.get(actor.stats.remote())["ticks"] >= 3
        ray.get(actor.reset.remote("second", node_id, INTERVAL_S, "off"), timeout=30)
        stats = ray.get(actor.stats.remote())
        assert stats == {
            "running": False, "ticks": 0, "buffered": 0, "dropped": 0, "last_error": None
        }  # fmt: skip
        ray.get(actor.start.remote(), timeout=30)
        time.sleep(0.5)
        rows = ray.get(actor.drain.remote())
        assert len(rows) >= 3 and {r["host"] for r in rows} == {"second"}
        assert ray.get(actor.stats.remote())["running"] is True
    finally:
        ray.kill(actor)
