"""The sampler on this machine: real /proc, /sys, psutil and pynvml, no fakes.

The expected None set is for the CI machine profile of ray-notes.md (PSI on, cgroup v1 without
a limit, no thermal_throttle, no temperature sensors, no NVML). The profile is checked from the
file system first; on a different machine the exact-set test is skipped with the reason.
"""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

import psutil
import pytest

from touchstone_ray.records import HostSample
from touchstone_ray.telemetry.sampler import HOST_FIELDS, HostSampler


def _nvml_missing() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return True
    pynvml.nvmlShutdown()
    return False


def _profile() -> str | None:
    """Why this machine is not the CI profile, or None if it is."""
    if sys.platform != "linux":
        return "not Linux"
    if not Path("/proc/pressure/memory").exists():
        return "no PSI"
    v1 = Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if Path("/sys/fs/cgroup/memory.current").exists() or not v1.exists():
        return "not cgroup v1"
    if int(v1.read_text()) < 2**60:
        return "cgroup v1 with a memory limit"
    if glob.glob("/sys/devices/system/cpu/cpu*/thermal_throttle"):
        return "has CPU thermal_throttle counters"
    if getattr(psutil, "sensors_temperatures", dict)():
        return "has temperature sensors"
    if not _nvml_missing():
        return "has NVML"
    return None


PROFILE = _profile()
EXPECTED_NONE = {
    "model",  # not a baseline tick
    "cgroup_mem_limit_mb",
    "cpu_throttle_count",
    "temp_c_max",
    "gpus",
    "engines",  # no endpoints given to sample
}


@pytest.mark.skipif(PROFILE is not None, reason=f"not the CI machine profile: {PROFILE}")
def test_exact_none_fields_and_reasons_here() -> None:
    sampler = HostSampler("local", "node-1", interval_s=0.5)
    caps = sampler.probe()
    assert set(caps) >= set(HOST_FIELDS)
    time.sleep(0.2)
    sample = sampler.sample()
    dumped = sample.model_dump()
    assert {k for k, v in dumped.items() if v is None} == EXPECTED_NONE
    unsupported = {
        k for k, c in caps.items() if not c["supported"] and not k.startswith(("gpu.", "engine."))
    }
    assert unsupported == EXPECTED_NONE - {"model", "engines"}
    assert caps["engine.gpu_mem_mb"]["reason"] == caps["gpus"]["reason"]
    assert caps["foreign_cpu_pct"]["supported"] and sample.foreign_cpu_pct is not None
    assert caps["gpus"]["reason"] == "NVML Shared Library Not Found (NVMLError_LibraryNotFound)"
    assert caps["cgroup_mem_limit_mb"]["reason"] == "no cgroup memory limit set (cgroup v1)"
    assert "thermal_throttle" in caps["cpu_throttle_count"]["reason"]
    assert caps["temp_c_max"]["reason"] == "psutil.sensors_temperatures() found no sensors"
    assert caps["psi_mem_some_avg10"]["source"] == "/proc/pressure/memory"
    assert "PSI" in caps["mem_pressure"]["source"]
    sampler.close()


def test_sample_here_is_consistent() -> None:
    sampler = HostSampler("local", "node-1")
    first = sampler.sample(baseline=True, model="m")
    second = sampler.sample()
    assert isinstance(first, HostSample)
    assert first.baseline and first.model == "m" and not second.baseline
    assert second.ts >= first.ts
    total_mb = psutil.virtual_memory().total / 2**20
    assert first.sys_used_mb is not None and first.sys_available_mb is not None
    assert 0 < first.sys_used_mb < total_mb
    assert first.sys_used_mb + first.sys_available_mb == pytest.approx(total_mb, rel=0.05)
    assert first.mem_pressure in {"normal", "warn", "critical"}
    caps = sampler.probe()
    for name, value in first.model_dump().items():
        if name in caps and not caps[name]["supported"]:
            assert value is None, name  # never 0 for what cannot be measured
            assert caps[name]["reason"], name
