"""One host's telemetry tick: :class:`HostSampler` → :class:`~touchstone_ray.records.HostSample`.

Sources and units (SPEC §7 HostSample; memory MB = 2**20 bytes, epoch seconds):

=====================  =====================================================================
``sys_used_mb``        psutil ``virtual_memory``: total − available (what new allocations
                       cannot get without reclaim; comparable on Linux and macOS)
``sys_available_mb``   psutil ``virtual_memory().available`` (host, not cgroup)
``swap_used_mb``       psutil ``swap_memory().used`` (0 is a real reading when no swap exists)
``cpu_pct``            psutil ``cpu_percent()``: all CPUs, since the previous tick
``psi_mem_some_avg10`` ``/proc/pressure/memory`` (Linux ≥ 4.20)
``mem_pressure``       see :mod:`touchstone_ray.telemetry.linux` (PSI, available, macOS sysctl)
``cgroup_mem_*``       cgroup v2 / v1 memory controller of the node's container
``cpu_throttle_count`` Σ ``/sys/devices/system/cpu/cpu*/thermal_throttle/core_throttle_count``
``temp_c_max``         hottest psutil ``sensors_temperatures()`` entry (°C)
``gpus``               :mod:`touchstone_ray.telemetry.nvml`
``engines``            :mod:`touchstone_ray.telemetry.engines` (per endpoint's process tree)
``foreign_cpu_pct``    :mod:`touchstone_ray.telemetry.engines` (% of one core)
=====================  =====================================================================

Every field is probed once (:meth:`HostSampler.probe`); an unsupported field is ``None`` in
every sample (never 0) and its capability says why. A reader that fails on one tick makes that
field ``None`` for that tick. Nothing here raises into the caller.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psutil

from touchstone_ray.records import HostSample, MemPressure
from touchstone_ray.telemetry import linux
from touchstone_ray.telemetry.engines import EngineTarget, EngineTracker
from touchstone_ray.telemetry.linux import MB, SysRoot
from touchstone_ray.telemetry.nvml import GpuMode, NvmlReader

HOST_FIELDS = (
    "sys_used_mb",
    "sys_available_mb",
    "swap_used_mb",
    "cpu_pct",
    "psi_mem_some_avg10",
    "mem_pressure",
    "cgroup_mem_used_mb",
    "cgroup_mem_limit_mb",
    "cpu_throttle_count",
    "temp_c_max",
    "gpus",
    "foreign_cpu_pct",
)
"""The measured :class:`HostSample` fields (capability keys, with ``gpu.<field>``)."""

_UNSET: Any = object()


def _cap(supported: bool, reason: str | None = None, source: str | None = None) -> dict[str, Any]:
    return {"supported": supported, "reason": reason, "source": source}


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class HostSampler:
    """Samples one host. Cheap: a few small file reads and psutil calls per tick.

    ``temps`` overrides ``psutil.sensors_temperatures`` (tests), ``platform`` ``sys.platform``.
    ``engines`` are the endpoints served from this host whose processes each tick samples;
    ``own_pids`` returns touchstone's pids here (left out of the foreign CPU).
    """

    def __init__(
        self,
        host: str,
        node_id: str | None,
        interval_s: float = 0.5,
        gpu_mode: GpuMode = "auto",
        root: SysRoot = SysRoot(),  # noqa: B008 - frozen dataclass, safe default
        *,
        temps: Callable[[], dict[str, Any]] | None = _UNSET,
        platform: str | None = None,
        engines: Iterable[EngineTarget] = (),
        own_pids: Callable[[], set[int]] | None = None,
    ) -> None:
        self.host = host
        self.node_id = node_id
        self.interval_s = interval_s
        self.root = root
        self.platform = platform or sys.platform
        self.nvml = NvmlReader(gpu_mode)
        self._temps = getattr(psutil, "sensors_temperatures", None) if temps is _UNSET else temps
        self._caps: dict[str, dict[str, Any]] | None = None
        self._cgroup_version: int | None = None
        self._throttle: list[Path] = []
        self._darwin_sysctl = False
        self._lock = threading.Lock()
        self._engine_targets = list(engines)
        self._own_pids = own_pids or (lambda: set())
        self._tracker: EngineTracker | None = None

    def engine_status(self) -> dict[str, dict[str, Any]]:
        """Per endpoint ``{"pid", "found_by", "reason"}`` (see :class:`EngineTracker`)."""
        self.probe()
        with self._lock:
            return self._tracker.status() if self._tracker is not None else {}

    def harness_cpu(self) -> tuple[dict[int, float], float | None]:
        """Harness pid → CPU s over the ticks so far, and their span (s)
        (:meth:`~touchstone_ray.telemetry.engines.EngineTracker.harness_cpu`); ``({}, None)``
        before the probe or where the CPU readings are not supported."""
        with self._lock:
            return self._tracker.harness_cpu() if self._tracker is not None else ({}, None)

    # -- probe -----------------------------------------------------------------------------
    def probe(self) -> dict[str, dict[str, Any]]:
        """Capabilities ``{field: {"supported": bool, "reason": str|None, "source": str|None}}``.

        Runs the probe on first call (NVML init included) and caches it.
        """
        with self._lock:
            if self._caps is None:
                self._caps = self._probe()
            return {k: dict(v) for k, v in self._caps.items()}

    def _probe(self) -> dict[str, dict[str, Any]]:
        caps: dict[str, dict[str, Any]] = {}
        try:
            psutil.virtual_memory()
            vm_cap = _cap(True, source="psutil.virtual_memory")
        except Exception as exc:
            vm_cap = _cap(False, _err(exc))
        caps["sys_used_mb"] = vm_cap | {"source": "psutil: total − available"}
        caps["sys_available_mb"] = dict(vm_cap)
        try:
            swap = psutil.swap_memory()
            note = " (no swap configured)" if swap.total == 0 else ""
            caps["swap_used_mb"] = _cap(True, source=f"psutil.swap_memory{note}")
        except Exception as exc:
            caps["swap_used_mb"] = _cap(False, _err(exc))
        try:
            psutil.cpu_percent(None)  # primes the counter: the first tick is then meaningful
            caps["cpu_pct"] = _cap(True, source="psutil.cpu_percent")
        except Exception as exc:
            caps["cpu_pct"] = _cap(False, _err(exc))
        caps["psi_mem_some_avg10"] = self._probe_psi()
        caps.update(self._probe_cgroup())
        caps["mem_pressure"] = self._probe_pressure(caps)
        caps["cpu_throttle_count"] = self._probe_throttle()
        caps["temp_c_max"] = self._probe_temps()
        caps.update(self.nvml.probe())
        try:
            self._tracker = EngineTracker(
                self._engine_targets, self._own_pids, self.nvml.process_memory
            )
            self._tracker.sample()  # primes the CPU counters: the first tick is meaningful
            caps["foreign_cpu_pct"] = _cap(True, source="psutil.cpu_times − engines − own")
        except Exception as exc:
            self._tracker = None
            caps["foreign_cpu_pct"] = _cap(False, _err(exc))
        return caps

    def _probe_psi(self) -> dict[str, Any]:
        if self.platform != "linux":
            return _cap(False, f"PSI is Linux-only (platform {self.platform})")
        try:
            linux.read_psi_some_avg10(self.root)
        except FileNotFoundError:
            return _cap(False, f"no {self.root.psi_memory} (kernel < 4.20 or booted with psi=0)")
        except Exception as exc:
            return _cap(False, _err(exc))
        return _cap(True, source=str(self.root.psi_memory))

    def _probe_cgroup(self) -> dict[str, dict[str, Any]]:
        if self.platform != "linux":
            off = _cap(False, f"cgroups are Linux-only (platform {self.platform})")
            return {"cgroup_mem_used_mb": off, "cgroup_mem_limit_mb": dict(off)}
        version = linux.cgroup_version(self.root)
        if version is None:
            off = _cap(False, f"no cgroup memory controller under {self.root.cgroup}")
            return {"cgroup_mem_used_mb": off, "cgroup_mem_limit_mb": dict(off)}
        try:
            reading = linux.read_cgroup_memory(self.root, version)
        except Exception as exc:
            off = _cap(False, _err(exc))
            return {"cgroup_mem_used_mb": off, "cgroup_mem_limit_mb": dict(off)}
        self._cgroup_version = version
        src = f"cgroup v{version}"
        limit = _cap(True, source=src)
        if reading.limit_mb is None:
            limit = _cap(False, f"no cgroup memory limit set ({src})")
        return {"cgroup_mem_used_mb": _cap(True, source=src), "cgroup_mem_limit_mb": limit}

    def _probe_pressure(self, caps: dict[str, dict[str, Any]]) -> dict[str, Any]:
        if self.platform == "darwin":
            try:
                linux.darwin_pressure()
                self._darwin_sysctl = True
                return _cap(True, source="sysctl kern.memorystatus_vm_pressure_level")
            except Exception as exc:
                if caps["sys_available_mb"]["supported"]:
                    return _cap(True, source=f"available memory (sysctl failed: {exc})")
        parts = []
        if caps["psi_mem_some_avg10"]["supported"]:
            parts.append("PSI some avg10")
        if caps["sys_available_mb"]["supported"]:
            limit = " vs cgroup headroom" if caps["cgroup_mem_limit_mb"]["supported"] else ""
            parts.append(f"available memory{limit}")
        if not parts:
            return _cap(False, "neither PSI nor psutil memory readable")
        return _cap(
            True,
            source=" and ".join(parts)
            if len(parts) == 1
            else f"worse of {parts[0]} and {parts[1]}",
        )

    def _probe_throttle(self) -> dict[str, Any]:
        files = linux.throttle_files(self.root) if self.platform == "linux" else []
        if not files:
            where = self.root.sys / "devices/system/cpu/cpu*/thermal_throttle"
            return _cap(False, f"no {where} (non-x86, VM, or no therm_throt driver)")
        try:
            linux.read_throttle_count(files)
        except Exception as exc:
            return _cap(False, _err(exc))
        self._throttle = files
        return _cap(True, source=f"Σ core_throttle_count over {len(files)} CPUs")

    def _probe_temps(self) -> dict[str, Any]:
        if self._temps is None:
            return _cap(False, "psutil.sensors_temperatures() not available on this platform")
        try:
            if linux.read_temp_c_max(self._temps) is None:
                return _cap(False, "psutil.sensors_temperatures() found no sensors")
        except Exception as exc:
            return _cap(False, _err(exc))
        return _cap(True, source="psutil.sensors_temperatures")

    # -- sample ----------------------------------------------------------------------------
    def sample(self, baseline: bool = False, model: str | None = None) -> HostSample:
        """One tick now; unsupported or failing fields are ``None``. Never raises."""
        caps = self.probe()
        ok = {k for k, v in caps.items() if v["supported"]}
        with self._lock:
            return self._sample(ok, baseline, model)

    def _sample(self, ok: set[str], baseline: bool, model: str | None) -> HostSample:
        v: dict[str, Any] = {}

        def read(name: str, fn: Callable[[], Any]) -> Any:
            if name not in ok:
                return None
            try:
                return fn()
            except Exception:
                return None

        vm = read("sys_used_mb", psutil.virtual_memory)
        if vm is not None:
            v["sys_used_mb"] = (vm.total - vm.available) / MB
            v["sys_available_mb"] = vm.available / MB
        v["swap_used_mb"] = read("swap_used_mb", lambda: psutil.swap_memory().used / MB)
        v["cpu_pct"] = read("cpu_pct", lambda: float(psutil.cpu_percent(None)))
        v["psi_mem_some_avg10"] = read(
            "psi_mem_some_avg10", lambda: linux.read_psi_some_avg10(self.root)
        )
        cg = read(
            "cgroup_mem_used_mb",
            lambda: linux.read_cgroup_memory(self.root, self._cgroup_version or 0),
        )
        if cg is not None:
            v["cgroup_mem_used_mb"] = cg.used_mb
            v["cgroup_mem_limit_mb"] = cg.limit_mb
        v["cpu_throttle_count"] = read(
            "cpu_throttle_count", lambda: linux.read_throttle_count(self._throttle)
        )
        v["temp_c_max"] = read("temp_c_max", lambda: linux.read_temp_c_max(self._temps))
        if "mem_pressure" in ok:
            v["mem_pressure"] = self._pressure(vm, v)
        try:
            v["gpus"] = self.nvml.sample()
        except Exception:
            v["gpus"] = None
        if self._tracker is not None:
            try:
                engines, v["foreign_cpu_pct"] = self._tracker.sample(advance=not baseline)
                v["engines"] = engines if self._engine_targets else None
            except Exception:
                pass
        return HostSample(
            ts=time.time(),
            host=self.host,
            node_id=self.node_id,
            baseline=baseline,
            model=model,
            **v,
        )

    def _pressure(self, vm: Any, v: dict[str, Any]) -> MemPressure | None:
        """Worse of PSI and available-memory levels (macOS: the kernel's level)."""
        if self._darwin_sysctl:
            try:
                return linux.darwin_pressure()
            except Exception:
                pass
        level: MemPressure | None = None
        if v.get("psi_mem_some_avg10") is not None:
            level = linux.psi_level(v["psi_mem_some_avg10"])
        if vm is not None:
            avail, total = vm.available / MB, vm.total / MB
            limit, used = v.get("cgroup_mem_limit_mb"), v.get("cgroup_mem_used_mb")
            if limit is not None and used is not None and limit - used < avail:
                avail, total = max(limit - used, 0.0), limit
            level = linux.worse(level, linux.available_level(avail, total))
        return level

    def close(self) -> None:
        """Release NVML."""
        self.nvml.close()
