"""Per-GPU readings through NVML (nvidia-ml-py, ``import pynvml``).

Units: memory MB (2**20 bytes, from ``nvmlDeviceGetMemoryInfo`` bytes), utilisation % (the
``gpu`` share of ``nvmlDeviceGetUtilizationRates``: time a kernel ran in the driver's last
sample period), temperature °C (``nvmlDeviceGetTemperature``, GPU die sensor), power W
(``nvmlDeviceGetPowerUsage`` mW / 1000), throttle reasons as names decoded from the
``nvmlDeviceGetCurrentClocksEventReasons`` bitmask (``...ThrottleReasons`` on older bindings).

Each field is probed once per GPU in :meth:`NvmlReader.probe`: an ``NVMLError`` there
(``NVML_ERROR_NOT_SUPPORTED`` on consumer cards, no permission, ...) makes that field ``None``
for the whole run with the reason in the capabilities. An error on a later tick makes the field
``None`` for that tick only. Per-process GPU memory (:meth:`NvmlReader.process_memory`,
``nvmlDeviceGetComputeRunningProcesses``: ``usedGpuMemory`` bytes per pid) is probed the same
way (capability ``engine.gpu_mem_mb``). No library (``NVMLError_LibraryNotFound``), no driver, an
``ImportError`` or zero GPUs disable GPU sampling with the reason; ``gpu: off`` disables it with
"disabled by config". Nothing here raises into the caller.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from touchstone_ray.records import GpuSample
from touchstone_ray.telemetry.linux import MB

GpuMode = Literal["auto", "off"]

THROTTLE_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clocks",
    0x200: "board_limit",
    0x400: "reliability",
}
"""NVML ``nvmlClocksEventReason*`` / ``nvmlClocksThrottleReason*`` bits (stable ABI) → names."""

NVML_ERROR_NOT_SUPPORTED = 3
NVML_TEMPERATURE_GPU = 0

GPU_FIELDS = (
    "name",
    "mem_used_mb",
    "mem_total_mb",
    "util_pct",
    "temp_c",
    "power_w",
    "throttle_reasons",
)
"""The :class:`~touchstone_ray.records.GpuSample` fields (besides ``index``)."""


def decode_throttle_reasons(mask: int) -> list[str]:
    """Bitmask → sorted names; unknown bits become ``bit_0x...``."""
    names = [name for bit, name in THROTTLE_BITS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_BITS)
    names += [f"bit_{1 << i:#x}" for i in range(rest.bit_length()) if rest >> i & 1]
    return sorted(names)


def _name(nv: Any, h: Any) -> dict[str, Any]:
    raw = nv.nvmlDeviceGetName(h)
    return {"name": raw.decode() if isinstance(raw, bytes) else str(raw)}


def _memory(nv: Any, h: Any) -> dict[str, Any]:
    info = nv.nvmlDeviceGetMemoryInfo(h)
    return {"mem_used_mb": info.used / MB, "mem_total_mb": info.total / MB}


def _util(nv: Any, h: Any) -> dict[str, Any]:
    return {"util_pct": float(nv.nvmlDeviceGetUtilizationRates(h).gpu)}


def _temp(nv: Any, h: Any) -> dict[str, Any]:
    return {"temp_c": float(nv.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU))}


def _power(nv: Any, h: Any) -> dict[str, Any]:
    return {"power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0}


def _throttle(nv: Any, h: Any) -> dict[str, Any]:
    fn = (
        getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    return {"throttle_reasons": decode_throttle_reasons(int(fn(h)))}


_READERS: dict[str, tuple[Callable[[Any, Any], dict[str, Any]], tuple[str, ...]]] = {
    "name": (_name, ("name",)),
    "memory": (_memory, ("mem_used_mb", "mem_total_mb")),
    "util": (_util, ("util_pct",)),
    "temp": (_temp, ("temp_c",)),
    "power": (_power, ("power_w",)),
    "throttle": (_throttle, ("throttle_reasons",)),
}


def nvml_reason(exc: BaseException) -> str:
    """A short human reason for an NVML (or other) error."""
    if getattr(exc, "value", None) == NVML_ERROR_NOT_SUPPORTED:
        return "not supported by this GPU/driver (NVML_ERROR_NOT_SUPPORTED)"
    text = str(exc) or type(exc).__name__
    return f"{text} ({type(exc).__name__})"


@dataclass
class _Device:
    index: int
    handle: Any
    unsupported: dict[str, str] = field(default_factory=dict)
    """reader group → reason, from the probe."""
    name: str | None = None


class NvmlReader:
    """All GPUs of this host through NVML; see the module docstring for units and failures."""

    def __init__(self, mode: GpuMode = "auto") -> None:
        self.mode: GpuMode = mode
        self.reason: str | None = None
        """Why GPU sampling is disabled (``None`` while enabled or not yet probed)."""
        self._nv: Any = None
        self._devices: list[_Device] = []
        self._probed = False
        self.process_reason: str | None = None
        """Why per-process GPU memory is unknown (``None`` while it is known)."""

    @property
    def enabled(self) -> bool:
        return self._probed and self._nv is not None

    def probe(self) -> dict[str, dict[str, Any]]:
        """Initialise NVML once and probe every field per GPU; returns capabilities.

        Keys: ``gpus`` and ``gpu.<field>``, each ``{"supported", "reason", "source"}``.
        """
        if not self._probed:
            self._probed = True
            self._init()
        if self._nv is None:
            off = {"supported": False, "reason": self.reason, "source": None}
            keys = [f"gpu.{f}" for f in GPU_FIELDS] + ["engine.gpu_mem_mb"]
            return {"gpus": off} | {k: dict(off) for k in keys}
        caps: dict[str, dict[str, Any]] = {
            "gpus": {
                "supported": True,
                "reason": None,
                "source": f"NVML, {len(self._devices)} GPU(s)",
            }
        }
        for group, (_, fields) in _READERS.items():
            reasons = [
                f"gpu {d.index}: {d.unsupported[group]}"
                for d in self._devices
                if group in d.unsupported
            ]
            cap = {"supported": not reasons, "reason": "; ".join(reasons) or None, "source": "NVML"}
            for f in fields:
                caps[f"gpu.{f}"] = dict(cap)
        caps["engine.gpu_mem_mb"] = {
            "supported": self.process_reason is None,
            "reason": self.process_reason,
            "source": "NVML nvmlDeviceGetComputeRunningProcesses",
        }
        return caps

    def _init(self) -> None:
        if self.mode == "off":
            self.reason = "disabled by config"
            return
        try:
            nv = importlib.import_module("pynvml")
        except Exception as exc:  # ImportError, or a broken install
            self.reason = f"nvidia-ml-py (pynvml) not importable: {exc}"
            return
        try:
            nv.nvmlInit()
        except Exception as exc:
            self.reason = nvml_reason(exc)
            return
        try:
            count = int(nv.nvmlDeviceGetCount())
            devices = [_Device(i, nv.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        except Exception as exc:
            self.reason = nvml_reason(exc)
            self._shutdown(nv)
            return
        if not devices:
            self.reason = "no NVIDIA GPU found (nvmlDeviceGetCount() = 0)"
            self._shutdown(nv)
            return
        for dev in devices:
            for group, (reader, _) in _READERS.items():
                try:
                    values = reader(nv, dev.handle)
                except Exception as exc:
                    dev.unsupported[group] = nvml_reason(exc)
                else:
                    if group == "name":
                        dev.name = values["name"]
        self._nv, self._devices = nv, devices
        try:
            self._read_processes()
        except Exception as exc:
            self.process_reason = nvml_reason(exc)

    def _read_processes(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for dev in self._devices:
            for proc in self._nv.nvmlDeviceGetComputeRunningProcesses(dev.handle):
                used = getattr(proc, "usedGpuMemory", None)
                if used is None:  # NVML_VALUE_NOT_AVAILABLE (e.g. no permission, WDDM)
                    raise ValueError("usedGpuMemory not available for pid " + str(proc.pid))
                out[int(proc.pid)] = out.get(int(proc.pid), 0.0) + used / MB
        return out

    def process_memory(self) -> dict[int, float] | None:
        """``{pid: MB}`` of GPU memory per process, summed over GPUs; ``None`` when GPU
        sampling is off or per-process memory is unsupported (:attr:`process_reason`), or
        this tick's reading failed. A pid absent from the map uses no GPU memory. Never
        raises."""
        if not self._probed:
            self.probe()
        if self._nv is None or self.process_reason is not None:
            return None
        try:
            return self._read_processes()
        except Exception:
            return None

    def sample(self) -> list[GpuSample] | None:
        """One reading per GPU; ``None`` when GPU sampling is disabled. Never raises."""
        if not self._probed:
            self.probe()
        nv = self._nv
        if nv is None:
            return None
        out: list[GpuSample] = []
        for dev in self._devices:
            values: dict[str, Any] = {"index": dev.index, "name": dev.name}
            for group, (reader, _) in _READERS.items():
                if group == "name" or group in dev.unsupported:
                    continue
                with contextlib.suppress(Exception):  # this tick only: the field stays None
                    values.update(reader(nv, dev.handle))
            out.append(GpuSample(**values))
        return out

    def close(self) -> None:
        """Shut NVML down (idempotent)."""
        nv, self._nv = self._nv, None
        if nv is not None:
            self.reason = "closed"
            self._shutdown(nv)

    @staticmethod
    def _shutdown(nv: Any) -> None:
        with contextlib.suppress(Exception):
            nv.nvmlShutdown()
