"""Telemetry against a real NVIDIA driver (skipped unless ``pynvml.nvmlInit()`` succeeds).

Run with ``tests/gpu/run.sh`` on a GPU machine (~60 s). The load is a matrix multiply in a
separate process (torch CUDA, else cupy), like a model server next to the monitor.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from procs import stop_group
from ray_env import local_ray

from touchstone_ray.records import HostSample
from touchstone_ray.telemetry.finalize import resources_for
from touchstone_ray.telemetry.nvml import GPU_FIELDS
from touchstone_ray.telemetry.sampler import HostSampler


def _nvml_unavailable() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:
        return f"NVML unavailable: {exc}"
    pynvml.nvmlShutdown()
    return None


pytestmark = pytest.mark.skipif(_nvml_unavailable() is not None, reason=str(_nvml_unavailable()))

LOAD_S = 30.0
LOAD = textwrap.dedent(
    """
    import sys, time
    seconds = float(sys.argv[1])
    try:
        import torch
        assert torch.cuda.is_available()
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
        mm, sync, lib = torch.matmul, torch.cuda.synchronize, "torch"
    except Exception:
        try:
            import cupy
            a = cupy.random.rand(8192, 8192, dtype=cupy.float32)
            b = cupy.random.rand(8192, 8192, dtype=cupy.float32)
            mm, sync, lib = cupy.matmul, cupy.cuda.Device().synchronize, "cupy"
        except Exception as exc:
            print("no CUDA array library (torch or cupy):", exc, flush=True)
            sys.exit(3)
    print("load ready", lib, flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(8):
            c = mm(a, b)
        sync()
    print("load done", flush=True)
    """
)


def test_every_field_present_or_none_with_reason() -> None:
    sampler = HostSampler("gpu-host", None, gpu_mode="auto")
    caps = sampler.probe()
    print(json.dumps({k: v for k, v in caps.items() if k.startswith("gpu")}, indent=1))
    assert caps["gpus"]["supported"], caps["gpus"]
    for _ in range(3):
        sample = sampler.sample()
        assert sample.gpus
        for g in sample.gpus:
            for field in GPU_FIELDS:
                cap = caps[f"gpu.{field}"]
                value = getattr(g, field)
                if value is None:
                    assert not cap["supported"] and cap["reason"], (g.index, field, cap)
            if g.mem_used_mb is not None and g.mem_total_mb is not None:
                assert 0 <= g.mem_used_mb <= g.mem_total_mb
            if g.util_pct is not None:
                assert 0 <= g.util_pct <= 100
            if g.temp_c is not None:
                assert 0 < g.temp_c < 130
            if g.power_w is not None:
                assert 0 < g.power_w < 2000
        time.sleep(0.5)
    print(sample.model_dump_json(indent=1))
    sampler.close()


def test_matmul_window_shows_util_and_memory_delta() -> None:
    sampler = HostSampler("gpu-host", None, gpu_mode="auto")
    assert sampler.probe()["gpus"]["supported"]
    baseline = sampler.sample(baseline=True, model="matmul")
    samples: list[HostSample] = []
    t_start = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-c", LOAD, str(LOAD_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + LOAD_S + 60
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            samples.append(sampler.sample())
            time.sleep(0.5)
        if proc.poll() is None:
            proc.kill()
        out = proc.communicate()[0]
    finally:
        stop_group(proc)
    t_end = time.time()
    print(out)
    if proc.returncode == 3:
        pytest.skip("neither torch nor cupy with CUDA is installed")
    assert proc.returncode == 0, out
    r = resources_for({"t_start": t_start, "t_end": t_end}, samples, baseline)
    print(json.dumps(r, indent=1))
    assert r["n_samples"] >= LOAD_S / 0.5 * 0.8
    assert r["gpu_util_pct"] is not None and r["gpu_util_pct"] > 50
    assert r["gpu_mem_delta_mb"] is not None and r["gpu_mem_delta_mb"] > 0
    sampler.close()


def test_monitor_actor_sees_the_gpus(tmp_path: Path) -> None:
    from touchstone_ray.fleet import MonitorSet

    with local_ray() as ray_here:
        ms = MonitorSet(tmp_path, interval_s=0.2)
        caps = ms.start({"gpu-host": ray_here.node_id})
        assert caps["gpu-host"]["gpus"]["supported"], caps["gpu-host"]["gpus"]
        time.sleep(1.0)
        ms.stop()
        rows = [json.loads(x) for x in ms.path_for("gpu-host").read_text().splitlines()]
        assert rows and all(r["gpus"] for r in rows)
