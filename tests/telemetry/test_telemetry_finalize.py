"""The finalize merge over hand-made samples, and on a real tmp bundle."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.records import EvalResponse, GpuSample, HostSample
from touchstone_ray.storage import JsonlWriter, read_jsonl
from touchstone_ray.telemetry import finalize
from touchstone_ray.telemetry.finalize import (
    RESOURCE_FIELDS,
    finalize_bundle,
    pick_baseline,
    resources_for,
)

T0 = 1_700_000_000.0


def hs(
    dt: float,
    used: float | None = 1000.0,
    *,
    swap: float | None = 0.0,
    pressure: str | None = "normal",
    thr: int | None = None,
    gpus: list[tuple[float | None, list[str] | None]] | None = None,
    baseline: bool = False,
    model: str | None = None,
    host: str = "gpu-a",
) -> HostSample:
    """A sample at T0+dt; ``gpus`` as (mem_used_mb, throttle_reasons) pairs."""
    gs = None
    if gpus is not None:
        gs = [
            GpuSample(
                index=i,
                mem_used_mb=m,
                util_pct=10.0 * (i + 1),
                temp_c=50.0 + i,
                power_w=100.0,
                throttle_reasons=r,
            )
            for i, (m, r) in enumerate(gpus)
        ]
    return HostSample(
        ts=T0 + dt,
        host=host,
        sys_used_mb=used,
        swap_used_mb=swap,
        mem_pressure=pressure,
        cpu_throttle_count=thr,
        gpus=gs,  # type: ignore[arg-type]
        baseline=baseline,
        model=model,
    )


def resp(start: float | None, end: float | None, **kw: Any) -> dict[str, Any]:
    return {
        "t_start": None if start is None else T0 + start,
        "t_end": None if end is None else T0 + end,
    } | kw


def test_peak_delta_and_worst_pressure() -> None:
    samples = [
        hs(-1.0, 9999.0, pressure="critical"),  # before the window
        hs(0.0, 1200.0, swap=5.0),
        hs(0.5, 1800.0, swap=7.0, pressure="warn"),
        hs(1.0, 1500.0, swap=6.0),
        hs(3.0, 9999.0),
    ]  # after it
    base = hs(-10.0, 1000.0, swap=2.0, baseline=True, model="m")
    r = resources_for(resp(0.2, 1.2), samples, base)
    assert r["n_samples"] == 3
    assert r["sys_used_mb"] == 1800.0
    assert r["sys_used_baseline_mb"] == 1000.0
    assert r["sys_used_delta_mb"] == 800.0
    assert r["swap_delta_mb"] == 5.0
    assert r["mem_pressure_max"] == "warn"
    assert r["throttled"] is None  # neither CPU counters nor GPUs measured
    assert r["gpu_mem_used_mb"] is None and r["gpu_throttle_reasons"] is None


def test_window_edges_are_half_a_second() -> None:
    samples = [hs(-0.5, 1.0), hs(2.5, 2.0), hs(2.51, 3.0), hs(-0.51, 4.0)]
    r = resources_for(resp(0.0, 2.0), samples, None)
    assert r["n_samples"] == 2 and r["sys_used_mb"] == 2.0
    assert r["sys_used_baseline_mb"] is None and r["sys_used_delta_mb"] is None


def test_nearest_sample_fallback() -> None:
    samples = [hs(-5.0, 100.0), hs(4.0, 200.0)]
    r = resources_for(resp(0.0, 1.0), samples, None)  # 4.5 s to the left, 2.5 s to the right
    assert r["n_samples"] == 1 and r["sys_used_mb"] == 200.0
    far = resources_for(resp(0.0, 1.0), [hs(-finalize.NEAREST_MAX_S - 5, 100.0)], None)
    assert far == dict.fromkeys(RESOURCE_FIELDS)


def test_host_without_samples_gives_nulls_not_zeros() -> None:
    base = hs(-10.0, 1000.0, baseline=True, model="m")
    r = resources_for(resp(0.0, 1.0), [], base)
    assert set(r) == set(RESOURCE_FIELDS)
    assert all(v is None for v in r.values()), r
    assert resources_for(resp(None, None), [hs(0.0)], base) == dict.fromkeys(RESOURCE_FIELDS)


def test_cpu_throttle_increase_counts_from_sample_before_window() -> None:
    steady = [hs(-0.6, thr=7), hs(0.0, thr=7), hs(0.5, thr=7)]
    assert resources_for(resp(0.0, 0.5), steady, None)["throttled"] is False
    rising = [hs(-0.6, thr=7), hs(0.0, thr=8)]  # the increase happened inside the window
    assert resources_for(resp(0.0, 0.5), rising, None)["throttled"] is True
    single = [hs(0.0, thr=7)]
    assert resources_for(resp(0.0, 0.5), single, None)["throttled"] is None


def test_gpu_rollup_and_throttle_reasons() -> None:
    base = hs(-10.0, gpus=[(500.0, ["gpu_idle"]), (500.0, ["gpu_idle"])], baseline=True, model="m")
    idle = [hs(0.0, gpus=[(1000.0, ["gpu_idle"]), (2000.0, ["gpu_idle"])])]
    r = resources_for(resp(0.0, 0.2), idle, base)
    assert r["gpu_mem_used_mb"] == 3000.0 and r["gpu_mem_delta_mb"] == 2000.0
    assert r["gpu_util_pct"] == 20.0 and r["gpu_temp_c_max"] == 51.0
    assert r["gpu_power_w"] == 200.0  # both GPUs' draw
    assert r["gpu_throttle_reasons"] == ["gpu_idle"] and r["throttled"] is False
    hot = [*idle, hs(0.4, gpus=[(1500.0, ["sw_power_cap", "hw_thermal"]), (None, None)])]
    r = resources_for(resp(0.0, 0.2), hot, base)
    assert r["gpu_mem_used_mb"] == 3000.0  # peak of the per-sample sums
    assert r["gpu_throttle_reasons"] == ["gpu_idle", "hw_thermal", "sw_power_cap"]
    assert r["throttled"] is True


def test_pick_baseline_latest_at_or_before_start() -> None:
    ticks = [
        hs(-100.0, baseline=True, model="m"),
        hs(-5.0, baseline=True, model="m"),
        hs(50.0, baseline=True, model="m"),
    ]
    assert pick_baseline(ticks, T0) is ticks[1]
    assert pick_baseline(ticks, T0 - 5.0) is ticks[1]
    assert pick_baseline(ticks, T0 - 200.0) is None
    assert pick_baseline(ticks, None) is None


def _response(
    model: str, prompt: str, start: float, end: float, host: str = "gpu-a"
) -> dict[str, Any]:
    return EvalResponse(
        key=f"{model}|v|{prompt}|1",
        pack_id="p",
        pack_version=1,
        model=model,
        engine="simulated",
        host=host,
        variant="v",
        category="A",
        prompt_id=prompt,
        repeat=1,
        ok=True,
        t_start=T0 + start,
        t_end=T0 + end,
    ).model_dump(mode="json")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    with JsonlWriter(tmp_path / "hosts" / "gpu-a.jsonl") as w:
        w.write(hs(-20.0, 1000.0, baseline=True, model="m1"))
        for i in range(10):
            w.write(hs(i * 0.5, 1100.0 + 10 * i))
        w.write(hs(30.0, 3000.0, baseline=True, model="m2"))
        for i in range(4):
            w.write(hs(31.0 + i * 0.5, 3500.0))
    with JsonlWriter(tmp_path / "responses" / "m1.jsonl") as w:
        w.write(_response("m1", "A1", 0.0, 1.0))
        w.write(_response("m1", "A2", 2.0, 4.0))
        w.write(_response("m1", "A3", 2.0, 4.0, host="mac"))  # a host with no samples
    with JsonlWriter(tmp_path / "responses" / "m2.jsonl") as w:
        w.write(_response("m2", "A1", 31.0, 32.0))
    with open(tmp_path / "responses" / "m1.jsonl", "ab") as fh:
        fh.write(b"{not json\n")  # a malformed middle line ...
        fh.write(_response_line("m1", "A4"))
        fh.write(b'{"key": "m1|v|A5|1", "tor')  # ... and a torn tail: both kept verbatim
    return tmp_path


def _response_line(model: str, prompt: str) -> bytes:
    import json

    return (json.dumps(_response(model, prompt, 3.0, 4.0)) + "\n").encode()


def test_finalize_bundle_rewrites_atomically(bundle: Path) -> None:
    m2 = bundle / "responses" / "m2.jsonl"
    with pytest.warns(UserWarning, match="malformed"):
        before = read_jsonl(bundle / "responses" / "m1.jsonl").records
    assert all(r["n_samples"] is None for r in before)
    assert finalize_bundle(bundle) == 5
    assert not list((bundle / "responses").glob(".*.tmp"))
    raw = (bundle / "responses" / "m1.jsonl").read_bytes()
    assert b"\n{not json\n" in raw and raw.endswith(b'{"key": "m1|v|A5|1", "tor')
    with pytest.warns(UserWarning, match="malformed"):
        rows = {r["prompt_id"]: r for r in read_jsonl(bundle / "responses" / "m1.jsonl").records}
    a1 = EvalResponse.model_validate(rows["A1"])
    assert a1.n_samples == 4 and a1.sys_used_mb == 1130.0
    assert a1.sys_used_baseline_mb == 1000.0 and a1.sys_used_delta_mb == 130.0
    assert rows["A3"]["n_samples"] is None and rows["A3"]["sys_used_mb"] is None
    r2 = read_jsonl(m2).records[0]
    assert r2["sys_used_baseline_mb"] == 3000.0 and r2["sys_used_delta_mb"] == 500.0


def test_finalize_bundle_only_keys(bundle: Path) -> None:
    m2 = bundle / "responses" / "m2.jsonl"
    m2_before = (m2.read_bytes(), os.stat(m2).st_ino)
    m1 = bundle / "responses" / "m1.jsonl"
    assert finalize_bundle(bundle, only_keys={"m1|v|A2|1"}) == 1
    assert (m2.read_bytes(), os.stat(m2).st_ino) == m2_before  # untouched shard not rewritten
    with pytest.warns(UserWarning):
        rows = {r["prompt_id"]: r for r in read_jsonl(m1).records}
    assert rows["A2"]["n_samples"] == 7  # 1.5 … 4.5 s
    assert rows["A1"]["n_samples"] is None  # not in only_keys


def test_failed_rename_leaves_shard_intact(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m2 = bundle / "responses" / "m2.jsonl"
    before = m2.read_bytes()

    def boom(*a: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr("touchstone_ray.storage.os.replace", boom)
    with pytest.raises(OSError, match="disk gone"):
        finalize_bundle(bundle, only_keys={"m2|v|A1|1"})
    assert m2.read_bytes() == before
