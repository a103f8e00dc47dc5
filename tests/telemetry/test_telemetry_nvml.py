"""NVML through a fake ``pynvml`` module (no driver exists here: the only mock in this suite)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from touchstone_ray.telemetry.nvml import NvmlReader, decode_throttle_reasons
from touchstone_ray.telemetry.sampler import HostSampler

FN_FIELDS = {
    "nvmlDeviceGetName": ["name"],
    "nvmlDeviceGetMemoryInfo": ["mem_used_mb", "mem_total_mb"],
    "nvmlDeviceGetUtilizationRates": ["util_pct"],
    "nvmlDeviceGetTemperature": ["temp_c"],
    "nvmlDeviceGetPowerUsage": ["power_w"],
    "nvmlDeviceGetCurrentClocksEventReasons": ["throttle_reasons"],
}


class NVMLError(Exception):
    def __init__(self, value: int, text: str) -> None:
        super().__init__(text)
        self.value = value


class NVMLError_NotSupported(NVMLError):
    def __init__(self) -> None:
        super().__init__(3, "Not Supported")


class NVMLError_LibraryNotFound(NVMLError):
    def __init__(self) -> None:
        super().__init__(12, "NVML Shared Library Not Found")


def fake_pynvml(
    n_gpus: int = 2,
    not_supported: tuple[str, ...] = (),
    init_error: Exception | None = None,
    old_api: bool = False,
    mask: int = 0x1 | 0x4 | 0x40,
) -> types.ModuleType:
    """A module with pynvml's names; ``failing`` (a set) makes functions raise on demand."""
    mod = types.ModuleType("pynvml")
    state: dict[str, Any] = {"init": 0, "shutdown": 0, "failing": set()}
    mod.state = state  # type: ignore[attr-defined]
    mod.NVMLError = NVMLError  # type: ignore[attr-defined]
    mod.NVMLError_NotSupported = NVMLError_NotSupported  # type: ignore[attr-defined]
    mod.NVMLError_LibraryNotFound = NVMLError_LibraryNotFound  # type: ignore[attr-defined]

    def init() -> None:
        state["init"] += 1
        if init_error is not None:
            raise init_error

    def fn(name: str, value: Any) -> Any:
        def call(handle: int, *args: Any) -> Any:
            if name in not_supported:
                raise NVMLError_NotSupported()
            if name in state["failing"]:
                raise NVMLError(15, "GPU is lost")
            return value(handle) if callable(value) else value

        return call

    mod.nvmlInit = init  # type: ignore[attr-defined]
    mod.nvmlShutdown = lambda: state.__setitem__("shutdown", state["shutdown"] + 1)  # type: ignore[attr-defined]
    mod.nvmlDeviceGetCount = lambda: n_gpus  # type: ignore[attr-defined]
    mod.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    mem = types.SimpleNamespace
    funcs: dict[str, Any] = {
        "nvmlDeviceGetName": lambda h: f"NVIDIA Fake {h}".encode(),
        "nvmlDeviceGetMemoryInfo": lambda h: mem(used=(h + 1) * 1024 * 2**20, total=80 * 2**30),
        "nvmlDeviceGetUtilizationRates": lambda h: mem(gpu=40 + h, memory=10),
        "nvmlDeviceGetTemperature": lambda h: 60 + h,
        "nvmlDeviceGetPowerUsage": lambda h: 250_500 + h * 1000,
        "nvmlDeviceGetCurrentClocksEventReasons": mask,
        "nvmlDeviceGetComputeRunningProcesses": [],  # (pid, usedGpuMemory) entries per GPU
    }
    if old_api:
        funcs["nvmlDeviceGetCurrentClocksThrottleReasons"] = funcs.pop(
            "nvmlDeviceGetCurrentClocksEventReasons"
        )
    for name, value in funcs.items():
        setattr(mod, name, fn(name, value))
    return mod


def install(monkeypatch: pytest.MonkeyPatch, mod: types.ModuleType | None) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", mod)


def test_all_fields_with_units(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, fake_pynvml())
    reader = NvmlReader()
    caps = reader.probe()
    assert all(c["supported"] for c in caps.values()), caps
    gpus = reader.sample()
    assert gpus is not None and [g.index for g in gpus] == [0, 1]
    g1 = gpus[1]
    assert g1.name == "NVIDIA Fake 1"
    assert (g1.mem_used_mb, g1.mem_total_mb) == (2048.0, 81920.0)
    assert (g1.util_pct, g1.temp_c, g1.power_w) == (41.0, 61.0, 251.5)
    assert g1.throttle_reasons == ["gpu_idle", "hw_thermal", "sw_power_cap"]
    reader.close()
    assert sys.modules["pynvml"].state["shutdown"] == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("fn", list(FN_FIELDS))
def test_not_supported_field_by_field(monkeypatch: pytest.MonkeyPatch, fn: str) -> None:
    install(monkeypatch, fake_pynvml(not_supported=(fn,)))
    sampler = HostSampler("h", None, gpu_mode="auto")
    caps = sampler.probe()
    assert caps["gpus"]["supported"]
    for field in FN_FIELDS[fn]:
        assert not caps[f"gpu.{field}"]["supported"]
        assert "NOT_SUPPORTED" in caps[f"gpu.{field}"]["reason"]
    for _ in range(3):  # samples keep flowing
        gpus = sampler.sample().gpus
        assert gpus is not None and len(gpus) == 2
        for g in gpus:
            for other in (f for fs in FN_FIELDS.values() for f in fs):
                value = getattr(g, other)
                assert (value is None) == (other in FN_FIELDS[fn]), (other, value)


@pytest.mark.parametrize(
    ("mod", "reason"),
    [
        (
            lambda: fake_pynvml(init_error=NVMLError_LibraryNotFound()),
            "NVML Shared Library Not Found",
        ),
        (lambda: fake_pynvml(init_error=NVMLError(9, "Driver Not Loaded")), "Driver Not Loaded"),
        (lambda: None, "not importable"),
        (lambda: fake_pynvml(n_gpus=0), "no NVIDIA GPU found"),
    ],
    ids=["library-not-found", "no-driver", "import-error", "zero-gpus"],
)
def test_gpu_sampling_disabled_with_reason(
    monkeypatch: pytest.MonkeyPatch, mod: Any, reason: str
) -> None:
    install(monkeypatch, mod())
    sampler = HostSampler("h", None, gpu_mode="auto")
    caps = sampler.probe()
    assert not caps["gpus"]["supported"] and reason in caps["gpus"]["reason"]
    assert not caps["gpu.util_pct"]["supported"]
    for _ in range(2):
        s = sampler.sample()
        assert s.gpus is None and s.sys_used_mb is not None


def test_gpu_off_by_config_never_touches_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = fake_pynvml()
    install(monkeypatch, mod)
    reader = NvmlReader("off")
    assert reader.probe()["gpus"] == {
        "supported": False,
        "reason": "disabled by config",
        "source": None,
    }
    assert reader.sample() is None
    assert mod.state["init"] == 0  # type: ignore[attr-defined]


def test_transient_error_nulls_one_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = fake_pynvml(n_gpus=1)
    install(monkeypatch, mod)
    reader = NvmlReader()
    reader.probe()
    mod.state["failing"].add("nvmlDeviceGetUtilizationRates")  # type: ignore[attr-defined]
    gpus = reader.sample()
    assert gpus is not None and gpus[0].util_pct is None and gpus[0].temp_c == 60.0
    mod.state["failing"].clear()  # type: ignore[attr-defined]
    gpus = reader.sample()
    assert gpus is not None and gpus[0].util_pct == 40.0


def test_older_throttle_api(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, fake_pynvml(n_gpus=1, old_api=True, mask=0x8 | 0x80))
    gpus = NvmlReader().sample()
    assert gpus is not None and gpus[0].throttle_reasons == ["hw_power_brake", "hw_slowdown"]


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0, []),
        (0x1, ["gpu_idle"]),
        (0x2 | 0x10 | 0x20, ["applications_clocks", "sw_thermal", "sync_boost"]),
        (0x4 | 0x8 | 0x40 | 0x80, ["hw_power_brake", "hw_slowdown", "hw_thermal", "sw_power_cap"]),
        (0x100 | 0x1000, ["bit_0x1000", "display_clocks"]),
    ],
)
def test_decode_throttle_reasons(mask: int, names: list[str]) -> None:
    assert decode_throttle_reasons(mask) == names


def test_gpu_inventory_for_the_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    from touchstone_ray.fleet.host_facts import gpu_inventory

    install(monkeypatch, fake_pynvml(n_gpus=2))
    assert gpu_inventory() == [
        {"index": 0, "name": "NVIDIA Fake 0", "mem_total_mb": 81920.0},
        {"index": 1, "name": "NVIDIA Fake 1", "mem_total_mb": 81920.0},
    ]
    install(monkeypatch, None)  # ImportError: no NVML bindings at all
    assert gpu_inventory() == []
