"""Linux/macOS readers over fake procfs/sysfs trees (real files in tmp dirs)."""

from __future__ import annotations

import subprocess
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.telemetry import linux
from touchstone_ray.telemetry.linux import MB, SysRoot
from touchstone_ray.telemetry.sampler import HostSampler

Put = Callable[[Path, str], Path]


def psi_text(some_avg10: float) -> str:
    """A /proc/pressure/memory body with the given ``some avg10``."""
    return (
        f"some avg10={some_avg10:.2f} avg60=0.00 avg300=0.00 total=123\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )


@pytest.mark.parametrize(
    ("avg10", "level"),
    [
        (0.0, "normal"),
        (9.99, "normal"),
        (10.0, "warn"),
        (39.99, "warn"),
        (40.0, "critical"),
        (100.0, "critical"),
    ],
)
def test_psi_parsed_and_mapped_at_boundaries(
    fake_root: SysRoot, put: Put, avg10: float, level: str
) -> None:
    put(fake_root.psi_memory, psi_text(avg10))
    value = linux.read_psi_some_avg10(fake_root)
    assert value == pytest.approx(avg10)
    assert linux.psi_level(value) == level
    sample = HostSampler("h", None, root=fake_root, gpu_mode="off", temps=None).sample()
    assert sample.psi_mem_some_avg10 == pytest.approx(avg10)
    # available memory on this host is plentiful, so PSI decides
    assert sample.mem_pressure == level


def test_psi_missing_or_malformed(fake_root: SysRoot, put: Put) -> None:
    caps = HostSampler("h", None, root=fake_root, gpu_mode="off").probe()
    assert not caps["psi_mem_some_avg10"]["supported"]
    assert "pressure/memory" in caps["psi_mem_some_avg10"]["reason"]
    assert caps["mem_pressure"]["supported"]  # still judged on available memory
    put(fake_root.psi_memory, "full avg10=1.00\n")
    with pytest.raises(ValueError, match="no 'some' line"):
        linux.read_psi_some_avg10(fake_root)


@pytest.mark.parametrize(
    ("avail", "total", "level"),
    [
        (50, 100, "normal"),
        (15, 100, "normal"),
        (14.9, 100, "warn"),
        (5, 100, "warn"),
        (4.9, 100, "critical"),
        (0, 0, "critical"),
    ],
)
def test_available_level(avail: float, total: float, level: str) -> None:
    assert linux.available_level(avail, total) == level


def test_worse() -> None:
    assert linux.worse(None, None) is None
    assert linux.worse("warn", None) == "warn"
    assert linux.worse("normal", "critical") == "critical"


def test_cgroup_v2_with_limit(fake_root: SysRoot, put: Put) -> None:
    put(fake_root.cgroup / "memory.current", f"{980 * 2**20}\n")
    put(fake_root.cgroup / "memory.max", f"{1000 * 2**20}\n")
    put(fake_root.psi_memory, psi_text(0.0))
    assert linux.cgroup_version(fake_root) == 2
    cg = linux.read_cgroup_memory(fake_root, 2)
    assert (cg.used_mb, cg.limit_mb) == (980.0, 1000.0)
    sampler = HostSampler("h", None, root=fake_root, gpu_mode="off")
    caps = sampler.probe()
    assert caps["cgroup_mem_limit_mb"]["supported"]
    assert "cgroup headroom" in caps["mem_pressure"]["source"]
    s = sampler.sample()
    assert (s.cgroup_mem_used_mb, s.cgroup_mem_limit_mb) == (980.0, 1000.0)
    # 20 MB headroom of 1000 (2 %) is smaller than host available: critical despite PSI 0
    assert s.mem_pressure == "critical"


def test_cgroup_v2_without_limit(fake_root: SysRoot, put: Put) -> None:
    put(fake_root.cgroup / "memory.current", "1048576\n")
    put(fake_root.cgroup / "memory.max", "max\n")
    cg = linux.read_cgroup_memory(fake_root, 2)
    assert (cg.used_mb, cg.limit_mb) == (1.0, None)
    sampler = HostSampler("h", None, root=fake_root, gpu_mode="off")
    caps = sampler.probe()
    assert caps["cgroup_mem_used_mb"]["supported"]
    assert not caps["cgroup_mem_limit_mb"]["supported"]
    assert "no cgroup memory limit" in caps["cgroup_mem_limit_mb"]["reason"]
    s = sampler.sample()
    assert s.cgroup_mem_used_mb == 1.0 and s.cgroup_mem_limit_mb is None


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(9223372036854771712, None), (2**60, None), (512 * 2**20, 512.0)],
)
def test_cgroup_v1_limit_values(
    fake_root: SysRoot, put: Put, limit: int, expected: float | None
) -> None:
    put(fake_root.cgroup / "memory" / "memory.usage_in_bytes", f"{256 * 2**20}\n")
    put(fake_root.cgroup / "memory" / "memory.limit_in_bytes", f"{limit}\n")
    assert linux.cgroup_version(fake_root) == 1
    cg = linux.read_cgroup_memory(fake_root, 1)
    assert (cg.version, cg.used_mb, cg.limit_mb) == (1, 256.0, expected)


def test_no_cgroup_controller(fake_root: SysRoot) -> None:
    caps = HostSampler("h", None, root=fake_root, gpu_mode="off").probe()
    assert not caps["cgroup_mem_used_mb"]["supported"]
    assert "no cgroup memory controller" in caps["cgroup_mem_used_mb"]["reason"]


def test_throttle_counters_summed(fake_root: SysRoot, put: Put) -> None:
    cpu = fake_root.sys / "devices" / "system" / "cpu"
    for i, n in enumerate([3, 0, 7, 10]):
        put(cpu / f"cpu{i}" / "thermal_throttle" / "core_throttle_count", f"{n}\n")
    put(cpu / "cpufreq" / "thermal_throttle" / "core_throttle_count", "999\n")  # not a CPU
    files = linux.throttle_files(fake_root)
    assert len(files) == 4
    assert linux.read_throttle_count(files) == 20
    sampler = HostSampler("h", None, root=fake_root, gpu_mode="off")
    assert sampler.probe()["cpu_throttle_count"]["supported"]
    assert sampler.sample().cpu_throttle_count == 20
    put(cpu / "cpu2" / "thermal_throttle" / "core_throttle_count", "8\n")
    assert sampler.sample().cpu_throttle_count == 21


def test_reader_error_nulls_only_that_field_for_that_tick(fake_root: SysRoot, put: Put) -> None:
    put(fake_root.psi_memory, psi_text(12.0))
    sampler = HostSampler("h", None, root=fake_root, gpu_mode="off")
    assert sampler.sample().psi_mem_some_avg10 == 12.0
    put(fake_root.psi_memory, "garbage\n")
    bad = sampler.sample()
    assert bad.psi_mem_some_avg10 is None
    assert bad.sys_used_mb is not None and bad.mem_pressure is not None
    put(fake_root.psi_memory, psi_text(1.0))
    assert sampler.sample().psi_mem_some_avg10 == 1.0


Temp = namedtuple("Temp", "label current high critical")


def test_temperatures_max_over_sensors(fake_root: SysRoot) -> None:
    def temps() -> dict[str, Any]:
        return {
            "coretemp": [Temp("c0", 51.0, 90, 100), Temp("c1", 63.5, 90, 100)],
            "nvme": [Temp("", 40.0, None, None)],
        }

    sampler = HostSampler("h", None, root=fake_root, gpu_mode="off", temps=temps)
    assert sampler.probe()["temp_c_max"]["supported"]
    assert sampler.sample().temp_c_max == 63.5
    empty = HostSampler("h", None, root=fake_root, gpu_mode="off", temps=dict)
    assert empty.probe()["temp_c_max"]["reason"] == (
        "psutil.sensors_temperatures() found no sensors"
    )
    assert empty.sample().temp_c_max is None


@pytest.mark.parametrize(
    ("out", "level"), [("1\n", "normal"), ("2\n", "warn"), ("4\n", "critical")]
)
def test_darwin_pressure_levels(out: str, level: str) -> None:
    def run(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        assert args == ["sysctl", "-n", "kern.memorystatus_vm_pressure_level"]
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")

    assert linux.darwin_pressure(run) == level


def test_darwin_platform_without_sysctl_falls_back(fake_root: SysRoot) -> None:
    sampler = HostSampler("h", None, root=fake_root, gpu_mode="off", platform="darwin")
    caps = sampler.probe()
    assert not caps["psi_mem_some_avg10"]["supported"]
    assert "Linux-only" in caps["psi_mem_some_avg10"]["reason"]
    assert caps["mem_pressure"]["supported"]  # sysctl absent here: available memory decides
    s = sampler.sample()
    assert s.mem_pressure is not None and s.psi_mem_some_avg10 is None


def test_mb_unit() -> None:
    assert MB == 1048576.0
