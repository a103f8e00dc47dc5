"""Host readers for Linux (procfs/sysfs) and macOS, each with an injectable root.

Every reader returns plain numbers or ``None`` and raises ``OSError``/``ValueError`` on a file
it cannot parse; :class:`~touchstone_ray.telemetry.sampler.HostSampler` turns any error into a
``None`` field for that tick. Memory is MB = 2**20 bytes (the same unit as psutil-derived and
NVML figures everywhere in the bundle).

Memory pressure (``normal|warn|critical``)
-------------------------------------------
* **Linux PSI** (``/proc/pressure/memory``, kernel ≥ 4.20, ``Documentation/accounting/psi.rst``):
  ``some avg10`` is the share (%) of the last 10 s in which at least one runnable task was
  stalled waiting for memory (reclaim, refault, swap-in). Mapped by :func:`psi_level`:

  ============  ==========  ===========================================================
  avg10 (%)     level       why
  ============  ==========  ===========================================================
  < 10          normal      a healthy host reads 0.00 to low single digits
  10 ≤ x < 40   warn        ≥ 1 s of every 10 s lost to memory stalls: visible in TTFT/ITL
  ≥ 40          critical    close to systemd-oomd's default kill limit (oomd.conf
                            ``DefaultMemoryPressureLimit=60%``), so it shows before the
                            host starts killing processes
  ============  ==========  ===========================================================

* **Available memory** (:func:`available_level`), judged against the *smaller* of host
  available (psutil ``available``) and cgroup headroom (limit − current) when a cgroup limit
  is set: < 15 % of the matching total → warn, < 5 % → critical. It catches a container near its
  limit, which host-wide PSI does not see (cgroup v1 has no per-cgroup PSI).
  The sample's ``mem_pressure`` is the worse of the two.
* **macOS**: ``sysctl kern.memorystatus_vm_pressure_level`` (1 normal, 2 warn, 4 critical),
  the kernel's own judgement, used as is.

cgroup memory (the node's container, e.g. a KubeRay pod)
---------------------------------------------------------
v2: ``/sys/fs/cgroup/memory.current`` and ``memory.max`` (``max`` = no limit).
v1: ``/sys/fs/cgroup/memory/memory.usage_in_bytes`` and ``memory.limit_in_bytes`` (a value
≥ 2**60, the kernel's ``PAGE_COUNTER_MAX`` rounded to pages, means no limit).
Current usage is reported whenever readable; the limit only when one is set.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from touchstone_ray.records import MemPressure

MB = float(1 << 20)
"""Bytes per MB (2**20) for every memory figure touchstone writes."""

PSI_WARN = 10.0
"""PSI ``some avg10`` (%) at or above which pressure is ``warn``."""
PSI_CRITICAL = 40.0
"""PSI ``some avg10`` (%) at or above which pressure is ``critical``."""
AVAIL_WARN_SHARE = 0.15
"""Available share of total below which pressure is ``warn``."""
AVAIL_CRITICAL_SHARE = 0.05
"""Available share of total below which pressure is ``critical``."""
CGROUP_V1_NO_LIMIT = 1 << 60
"""cgroup v1 limits at or above this many bytes mean "no limit"."""

PRESSURE_RANK: dict[str, int] = {"normal": 0, "warn": 1, "critical": 2}
"""Order of pressure levels; also the value of the ``touchstone_host_mem_pressure`` gauge."""
DARWIN_LEVELS: dict[int, MemPressure] = {1: "normal", 2: "warn", 4: "critical"}
"""``kern.memorystatus_vm_pressure_level`` values."""


@dataclass(frozen=True)
class SysRoot:
    """Where procfs and sysfs live (tests point these at a tmp tree)."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")

    @property
    def psi_memory(self) -> Path:
        return self.proc / "pressure" / "memory"

    @property
    def cgroup(self) -> Path:
        return self.sys / "fs" / "cgroup"


def worse(a: MemPressure | None, b: MemPressure | None) -> MemPressure | None:
    """The worse of two pressure levels (``None`` only when both are ``None``)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if PRESSURE_RANK[a] >= PRESSURE_RANK[b] else b


def read_psi_some_avg10(root: SysRoot) -> float:
    """``some avg10`` (%) from ``<proc>/pressure/memory``; raises when absent or malformed."""
    for line in root.psi_memory.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "some":
            fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            return float(fields["avg10"])
    raise ValueError(f"{root.psi_memory}: no 'some' line")


def psi_level(avg10: float) -> MemPressure:
    """Map PSI ``some avg10`` (%) to a level: < 10 normal, < 40 warn, else critical."""
    if avg10 < PSI_WARN:
        return "normal"
    if avg10 < PSI_CRITICAL:
        return "warn"
    return "critical"


def available_level(available_mb: float, total_mb: float) -> MemPressure:
    """Level from available memory: < 5 % of total critical, < 15 % warn, else normal."""
    share = available_mb / total_mb if total_mb > 0 else 0.0
    if share < AVAIL_CRITICAL_SHARE:
        return "critical"
    if share < AVAIL_WARN_SHARE:
        return "warn"
    return "normal"


@dataclass(frozen=True)
class CgroupMemory:
    """One reading of the cgroup memory controller."""

    version: int
    """1 or 2."""
    used_mb: float
    limit_mb: float | None
    """``None`` when no limit is set."""


def cgroup_version(root: SysRoot) -> int | None:
    """2 when ``memory.current`` exists, 1 when the v1 memory controller does, else ``None``."""
    if (root.cgroup / "memory.current").is_file():
        return 2
    if (root.cgroup / "memory" / "memory.usage_in_bytes").is_file():
        return 1
    return None


def read_cgroup_memory(root: SysRoot, version: int) -> CgroupMemory:
    """Current usage and limit (MB) of cgroup ``version`` (see :func:`cgroup_version`)."""
    if version == 2:
        used = int((root.cgroup / "memory.current").read_text().strip())
        max_path = root.cgroup / "memory.max"
        raw = max_path.read_text().strip() if max_path.is_file() else "max"
        limit = None if raw == "max" else int(raw)
    else:
        base = root.cgroup / "memory"
        used = int((base / "memory.usage_in_bytes").read_text().strip())
        lim = int((base / "memory.limit_in_bytes").read_text().strip())
        limit = None if lim >= CGROUP_V1_NO_LIMIT else lim
    return CgroupMemory(version, used / MB, None if limit is None else limit / MB)


def throttle_files(root: SysRoot) -> list[Path]:
    """Per-CPU ``thermal_throttle/core_throttle_count`` files (x86 with the therm driver)."""
    cpu_dir = root.sys / "devices" / "system" / "cpu"
    return sorted(cpu_dir.glob("cpu[0-9]*/thermal_throttle/core_throttle_count"))


def read_throttle_count(files: list[Path]) -> int:
    """Sum of the per-CPU core throttle counters (events since boot, monotonic)."""
    return sum(int(f.read_text().strip()) for f in files)


def read_temp_c_max(sensors: Callable[[], dict[str, Any]] | None) -> float | None:
    """Hottest ``current`` °C over ``psutil.sensors_temperatures()``; ``None`` when it has none."""
    if sensors is None:
        return None
    temps = [
        float(entry.current)
        for entries in sensors().values()
        for entry in entries
        if entry.current is not None
    ]
    return max(temps) if temps else None


def darwin_pressure(
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> MemPressure:
    """macOS level from ``sysctl -n kern.memorystatus_vm_pressure_level`` (1/2/4)."""
    proc = run(
        ["sysctl", "-n", "kern.memorystatus_vm_pressure_level"],
        capture_output=True,
        text=True,
        timeout=2.0,
        check=True,
    )
    value = int(proc.stdout.strip())
    if value not in DARWIN_LEVELS:
        raise ValueError(f"unknown kern.memorystatus_vm_pressure_level {value}")
    return DARWIN_LEVELS[value]
