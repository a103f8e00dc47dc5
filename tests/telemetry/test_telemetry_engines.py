"""Finding and sampling engine processes: real subprocesses listening on loopback ports."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
import uuid
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from test_telemetry_nvml import NVMLError_NotSupported, fake_pynvml

from touchstone_ray.telemetry import engines
from touchstone_ray.telemetry.engines import (
    SIMULATED_REASON,
    EngineTarget,
    EngineTracker,
    HarnessPids,
    endpoint_of,
    is_harness,
)
from touchstone_ray.telemetry.nvml import NvmlReader
from touchstone_ray.telemetry.sampler import HostSampler

MB = 2**20

# A fake engine: listens on a free port, prints it, and (with an arg) starts a child that
# holds 64 MB and spins, like an Ollama runner.
SERVER = r"""
import socket, subprocess, sys, time
tag, with_child = sys.argv[1], sys.argv[2] == "1"
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
if with_child:
    subprocess.Popen([sys.executable, "-c",
        "import time\nb = bytearray(64 * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
        "end = time.time() + 120\nwhile time.time() < end: pass", tag])
print(s.getsockname()[1], flush=True)
time.sleep(120)
"""


class Engine:
    def __init__(self, with_child: bool = False) -> None:
        self.tag = f"fake-engine-{uuid.uuid4().hex[:12]}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, self.tag, "1" if with_child else "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}/v1"
        if with_child:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                kids = psutil.Process(self.proc.pid).children()
                if kids and kids[0].memory_info().rss > 60 * MB:
                    break
                time.sleep(0.05)

    def tree_rss_mb(self) -> float:
        root = psutil.Process(self.proc.pid)
        return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / MB

    def stop(self) -> None:
        for p in psutil.Process(self.proc.pid).children(recursive=True):
            p.kill()
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine(with_child=True)
    yield e
    e.stop()


def test_found_by_port_with_children(engine: Engine) -> None:
    tracker = EngineTracker([EngineTarget(engine.url)])
    assert tracker.status() == {
        engine.url: {"pid": engine.proc.pid, "found_by": "port", "reason": None}
    }
    tracker.sample()
    time.sleep(0.5)
    samples, foreign = tracker.sample()
    (s,) = samples
    assert s.endpoint == engine.url and s.pid == engine.proc.pid
    assert s.rss_mb == pytest.approx(engine.tree_rss_mb(), rel=0.05)
    assert s.rss_mb is not None and s.rss_mb > 64  # the child's 64 MB are counted
    assert s.cpu_pct is not None and s.cpu_pct > 10  # the spinning child
    assert s.gpu_mem_mb is None  # no NVML here
    assert foreign is not None and foreign >= 0.0


def test_found_by_engine_process_name(engine: Engine) -> None:
    tracker = EngineTracker([EngineTarget("http://127.0.0.1:1/v1", process=engine.tag)])
    st = tracker.status()["http://127.0.0.1:1/v1"]
    # the child's command line carries the tag too, but it is part of the root's tree
    assert st == {"pid": engine.proc.pid, "found_by": "engine_process", "reason": None}
    (s,) = tracker.sample()[0]
    assert s.rss_mb == pytest.approx(engine.tree_rss_mb(), rel=0.05)


def test_not_found_reasons() -> None:
    a, b = Engine(), Engine()
    try:
        dead_port = a.port
        tracker = EngineTracker(
            [
                EngineTarget("http://127.0.0.1:9/v1"),
                EngineTarget("http://192.0.2.1:8080/v1"),
                EngineTarget("http://x:1/v1", process="no-such-engine-" + uuid.uuid4().hex),
                EngineTarget("http://y:1/v1", process="fake-engine-"),
                EngineTarget("simulated:m", simulated=True),
            ]
        )
        st = {ep: v["reason"] for ep, v in tracker.status().items()}
        assert st["http://127.0.0.1:9/v1"] == (
            "nothing listens on port 9 on this host (another container or host?)"
        )
        assert st["http://192.0.2.1:8080/v1"] == "192.0.2.1 is not this host"
        assert st["http://x:1/v1"].startswith("no process matches engine_process 'no-such-engine-")
        assert st["http://y:1/v1"].startswith("engine_process 'fake-engine-' matches ")
        assert st["simulated:m"] == SIMULATED_REASON
        assert tracker.sample()[0] == []
        assert dead_port != 9
    finally:
        a.stop()
        b.stop()


def test_re_resolves_when_the_process_dies() -> None:
    a = Engine()
    tag = a.tag
    tracker = EngineTracker([EngineTarget("http://h:1/v1", process=tag)], resolve_every=1000)
    assert tracker.status()["http://h:1/v1"]["pid"] == a.proc.pid
    a.stop()
    assert tracker.sample()[0] == []
    assert (
        tracker.status()["http://h:1/v1"]["reason"] == f"no process matches engine_process {tag!r}"
    )


def test_an_endpoint_not_found_is_looked_up_again_every_resolve_every_ticks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing listens on the port: the listener scan (``psutil.net_connections``, ~15 ms of
    CPU here, far more on a server with many sockets) runs at the start and then once per
    ``resolve_every`` ticks, not on every tick."""
    lookups: list[str] = []
    real = engines.resolve_port

    def counted(endpoint: str) -> tuple[int | None, str | None]:
        lookups.append(endpoint)
        return real(endpoint)

    monkeypatch.setattr(engines, "resolve_port", counted)
    tracker = EngineTracker([EngineTarget("http://127.0.0.1:9/v1")], resolve_every=5)
    for _ in range(12):
        assert tracker.sample()[0] == []
    assert len(lookups) == 3  # at the start, after tick 5 and after tick 10
    assert tracker.status()["http://127.0.0.1:9/v1"]["reason"] == (
        "nothing listens on port 9 on this host (another container or host?)"
    )


def test_endpoint_names() -> None:
    assert endpoint_of("m", "http://a:1/v1") == "http://a:1/v1"
    assert endpoint_of("m", None) == "simulated:m"
    t = EngineTarget.from_spec("m", {"base_url": None, "engine": "simulated"})
    assert t == EngineTarget("simulated:m", None, True)


def test_foreign_cpu_counts_a_burner_but_not_own_pids() -> None:
    burner = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 20\nwhile time.time() < end: pass"]
    )
    try:
        bp = psutil.Process(burner.pid)
        own: set[int] = set()
        tracker = EngineTracker([], own_pids=lambda: set(own))
        tracker.sample()
        c0, t0 = bp.cpu_times(), time.time()
        time.sleep(1.0)
        c1, t1 = bp.cpu_times(), time.time()
        _, foreign = tracker.sample()
        burner_pct = (c1.user + c1.system - c0.user - c0.system) / (t1 - t0) * 100
        assert burner_pct > 5  # it ran
        assert foreign is not None and foreign >= 0.8 * burner_pct
    finally:
        burner.kill()
        burner.wait()


@pytest.mark.parametrize(
    ("argv", "harness"),
    [
        (["ray::ClientActor.chat"], True),
        (["/usr/lib/python3/site-packages/ray/core/src/ray/raylet/raylet", "--node"], True),
        (["/usr/bin/python", "/x/site-packages/ray/dashboard/agent.py", "--a"], True),
        (["/usr/bin/python", "/root/.local/bin/touchstone-ray", "eval"], True),
        (["llama-server", "-m", "/root/.cache/touchstone-ray/model.gguf"], False),
        (["/usr/bin/python", "-m", "pytest"], False),
        ([], False),
    ],
)
def test_is_harness(argv: list[str], harness: bool) -> None:
    assert is_harness(argv) is harness


def test_harness_pids_counts_a_ray_worker_not_a_burner() -> None:
    spin = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"
    worker = subprocess.Popen(["ray::FakeWorker", "-c", spin], executable=sys.executable)
    burner = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.2)
        pids = HarnessPids(lambda: {4242})()
        assert worker.pid in pids and burner.pid not in pids
        assert 4242 in pids
        tracker = EngineTracker([], own_pids=HarnessPids(refresh_s=0.0))
        tracker.sample()
        b0, w0, t0 = (
            psutil.Process(burner.pid).cpu_times(),
            psutil.Process(worker.pid).cpu_times(),
            time.time(),
        )
        time.sleep(1.0)
        _, foreign = tracker.sample()
        b1, w1, t1 = (
            psutil.Process(burner.pid).cpu_times(),
            psutil.Process(worker.pid).cpu_times(),
            time.time(),
        )
        burner_pct = (b1.user + b1.system - b0.user - b0.system) / (t1 - t0) * 100
        worker_pct = (w1.user + w1.system - w0.user - w0.system) / (t1 - t0) * 100
        assert burner_pct > 5 and worker_pct > 5  # both ran
        assert foreign is not None and foreign >= 0.8 * burner_pct
    finally:
        for proc in (worker, burner):
            proc.kill()
            proc.wait()


# -- per-process GPU memory through a fake pynvml ----------------------------------------------


def _fake_nvml(monkeypatch: pytest.MonkeyPatch, procs: Any) -> types.ModuleType:
    mod = fake_pynvml(n_gpus=2)
    mod.nvmlDeviceGetComputeRunningProcesses = procs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod


def test_gpu_memory_per_process(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> None:
    child = psutil.Process(engine.proc.pid).children()[0].pid
    per_gpu = {0: [(engine.proc.pid, 100 * MB)], 1: [(child, 412 * MB), (1, 7 * MB)]}
    _fake_nvml(
        monkeypatch,
        lambda h: [types.SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in per_gpu[h]],
    )
    sampler = HostSampler("h", None, engines=[EngineTarget(engine.url)])
    caps = sampler.probe()
    assert caps["engine.gpu_mem_mb"]["supported"]
    (e,) = sampler.sample().engines or []
    assert e.gpu_mem_mb == 512.0
    per_gpu[1] = [(1, 7 * MB)]  # pid 1 (init) exists here: same pid namespace, engine uses none
    (e,) = sampler.sample().engines or []
    assert e.gpu_mem_mb == 100.0
    per_gpu[0] = [(2**22 + 12345, MB)]  # a pid that does not exist here: another namespace
    (e,) = sampler.sample().engines or []
    assert e.gpu_mem_mb is None
    sampler.close()


def test_gpu_memory_per_process_not_supported(
    monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    def raise_ns(h: int) -> Any:
        raise NVMLError_NotSupported()

    _fake_nvml(monkeypatch, raise_ns)
    reader = NvmlReader()
    caps = reader.probe()
    assert caps["gpus"]["supported"] and not caps["engine.gpu_mem_mb"]["supported"]
    assert caps["engine.gpu_mem_mb"]["reason"] == (
        "not supported by this GPU/driver (NVML_ERROR_NOT_SUPPORTED)"
    )
    assert reader.process_memory() is None
    sampler = HostSampler("h", None, engines=[EngineTarget(engine.url)])
    (e,) = sampler.sample().engines or []
    assert e.rss_mb is not None and e.gpu_mem_mb is None
    sampler.close()


def test_gpu_memory_unavailable_value(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_nvml(monkeypatch, lambda h: [types.SimpleNamespace(pid=1, usedGpuMemory=None)])
    reader = NvmlReader()
    assert reader.probe()["engine.gpu_mem_mb"]["reason"] == (
        "usedGpuMemory not available for pid 1 (ValueError)"
    )


# -- the harness's CPU over the run ----------------------------------------------------------

# Burns CPU each time a line arrives on stdin (until its own CPU time has grown by the
# seconds on the line), then says so and sleeps: between bursts its CPU time stands still.
BURSTS = r"""
import sys, time
print("up", flush=True)
for line in sys.stdin:
    goal = time.process_time() + float(line)
    while time.process_time() < goal:
        pass
    print("done", flush=True)
"""


TICK = 0.011
"""The kernel's CPU-time resolution (10 ms ticks) and a rounding: ``process_time`` is finer."""


class Bursts:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BURSTS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.read() == "up"

    def read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def burn(self, seconds: float) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{seconds}\n")
        self.proc.stdin.flush()
        assert self.read() == "done"

    def cpu_s(self) -> float:
        t = psutil.Process(self.proc.pid).cpu_times()
        return float(t.user + t.system)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def test_harness_cpu_counts_a_process_started_during_the_run_from_its_start() -> None:
    tracker = EngineTracker([], own_pids=lambda: set(pids))
    pids: set[int] = set()
    tracker.sample()
    time.sleep(0.1)  # the process starts after the first tick
    b = Bursts()
    try:
        pids.add(b.proc.pid)
        b.burn(0.3)
        tracker.sample()
        cpu, span = tracker.harness_cpu()
        assert cpu[b.proc.pid] == b.cpu_s() >= 0.3 - TICK  # its whole life, on the same clock
        b.burn(0.2)
        tracker.sample(advance=False)  # a baseline tick adds nothing
        assert tracker.harness_cpu()[0][b.proc.pid] == cpu[b.proc.pid]
        tracker.sample()
        cpu2, span2 = tracker.harness_cpu()
        assert cpu2[b.proc.pid] == pytest.approx(b.cpu_s(), abs=1e-9)
        assert cpu2[b.proc.pid] - cpu[b.proc.pid] >= 0.2 - TICK
        assert span is not None and span2 is not None and span2 > span > 0
        assert os.getpid() in cpu2  # the tracker's own process is harness too
    finally:
        b.stop()


def test_harness_cpu_counts_an_older_process_from_its_first_reading() -> None:
    b = Bursts()
    try:
        b.burn(0.2)  # before the run: not the harness's CPU in this run
        tracker = EngineTracker([], own_pids=lambda: {b.proc.pid})
        assert tracker.harness_cpu() == ({}, None)
        tracker.sample()
        before = b.cpu_s()
        assert tracker.harness_cpu()[0][b.proc.pid] == 0.0
        b.burn(0.25)
        tracker.sample()
        cpu, _ = tracker.harness_cpu()
        assert cpu[b.proc.pid] == pytest.approx(b.cpu_s() - before, abs=1e-9)
        assert cpu[b.proc.pid] >= 0.25 - TICK
    finally:
        b.stop()


def test_harness_cpu_keeps_what_an_exited_process_used() -> None:
    b = Bursts()
    pid = b.proc.pid
    try:
        tracker = EngineTracker([], own_pids=lambda: {pid})
        tracker.sample()
        before = b.cpu_s()
        b.burn(0.2)
        tracker.sample()
        used = b.cpu_s() - before
    finally:
        b.stop()
    tracker.sample()
    assert tracker.harness_cpu()[0][pid] == pytest.approx(used, abs=1e-9)


def test_tree_pids_lists_the_children_of_children(engine: Engine) -> None:
    child = psutil.Process(engine.proc.pid).children()[0].pid
    kids = engines.tree_pids(engine.proc.pid)
    if kids is None:
        pytest.skip("no /proc/<pid>/task/<tid>/children on this kernel")
    assert kids == [child]
    assert engines.tree_pids(child) == []
    assert engines.child_pids(2**22 + 12345) == []  # gone: no children


def test_a_found_engine_is_not_looked_up_again_while_it_runs(
    monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    """The listener scan lists every socket of every process: once at the start, then only
    when the engine's process exits."""
    lookups: list[str] = []
    real = engines.resolve_port

    def counted(endpoint: str) -> tuple[int | None, str | None]:
        lookups.append(endpoint)
        return real(endpoint)

    monkeypatch.setattr(engines, "resolve_port", counted)
    tracker = EngineTracker([EngineTarget(engine.url)], resolve_every=2)
    for _ in range(6):
        (s,) = tracker.sample()[0]
        assert s.pid == engine.proc.pid
    assert lookups == [engine.url]


def test_harness_pids_reads_a_command_line_once_per_process() -> None:
    spin = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"
    worker = subprocess.Popen(["ray::FakeWorker", "-c", spin], executable=sys.executable)
    try:
        time.sleep(0.2)
        harness = HarnessPids(refresh_s=0.0)
        assert worker.pid in harness()
        reads: list[int] = []
        real = engines._argv

        def counted(pid: int) -> list[str] | None:
            reads.append(pid)
            return real(pid)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(engines, "_argv", counted)
            assert worker.pid in harness()
        assert worker.pid not in reads
    finally:
        worker.kill()
        worker.wait()
    assert worker.pid not in HarnessPids(refresh_s=0.0)()


def test_harness_pids_of_one_ray_session_leave_another_session_out() -> None:
    """With this node's raylet known, its children (workers, agents) and the processes that
    name its session are harness; another Ray session's processes on the machine are not."""
    session, other = "session_2026-01-01_00-00-00_123_456", "session_2026-01-01_00-00-00_9_9"
    nap = "import time\ntime.sleep(30)"
    spawn = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen(['ray::FakeWorker', '-c', {nap!r}], executable={sys.executable!r})\n"
        "print(p.pid, flush=True)\ntime.sleep(30)"
    )
    raylet = subprocess.Popen(
        ["raylet", "-c", spawn, f"--session-name={session}"],
        executable=sys.executable,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert raylet.stdout is not None
    worker = int(raylet.stdout.readline())
    monitor = "/x/ray/_private/log_monitor.py"
    ours = subprocess.Popen([sys.executable, "-c", nap, monitor, f"--session-dir=/t/{session}"])
    theirs = subprocess.Popen([sys.executable, "-c", nap, monitor, f"--session-dir=/t/{other}"])
    their_worker = subprocess.Popen(["ray::Other", "-c", nap], executable=sys.executable)
    procs = [raylet, ours, theirs, their_worker]
    try:
        time.sleep(0.3)
        pids = HarnessPids(raylet=raylet.pid, refresh_s=0.0)()
        assert {raylet.pid, worker, ours.pid} <= pids
        assert not {theirs.pid, their_worker.pid} & pids
        every = HarnessPids(refresh_s=0.0)()  # no raylet known: every Ray process counts
        assert {raylet.pid, worker, ours.pid, theirs.pid, their_worker.pid} <= every
    finally:
        psutil.Process(worker).kill()
        for proc in procs:
            proc.kill()
            proc.wait()
        assert raylet.stdout is not None
        raylet.stdout.close()
