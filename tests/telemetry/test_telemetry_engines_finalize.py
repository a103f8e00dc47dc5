"""The engine-footprint and contention fields of the finalize merge, over hand-made samples."""

from __future__ import annotations

import json
from pathlib import Path

from touchstone_ray.records import EngineProcessSample, HostSample
from touchstone_ray.storage import JsonlWriter, read_jsonl
from touchstone_ray.telemetry.finalize import (
    CONTENDED_SHARE,
    finalize_bundle,
    manifest_endpoints,
    resources_for,
)

T0 = 1_700_000_000.0
EP = "http://127.0.0.1:8080/v1"
OTHER = "http://127.0.0.1:9090/v1"


def hs(
    dt: float,
    rss: float | None = None,
    cpu: float | None = None,
    gpu: float | None = None,
    *,
    foreign: float | None = None,
    other_rss: float | None = None,
    baseline: bool = False,
    model: str | None = None,
) -> HostSample:
    engines = []
    if rss is not None:
        engines.append(
            EngineProcessSample(endpoint=EP, pid=7, rss_mb=rss, cpu_pct=cpu, gpu_mem_mb=gpu)
        )
    if other_rss is not None:
        engines.append(EngineProcessSample(endpoint=OTHER, pid=8, rss_mb=other_rss, cpu_pct=5.0))
    return HostSample(
        ts=T0 + dt,
        host="h",
        sys_used_mb=1000.0,
        engines=engines,
        foreign_cpu_pct=foreign,
        baseline=baseline,
        model=model,
    )


def resp(start: float, end: float) -> dict[str, float]:
    return {"t_start": T0 + start, "t_end": T0 + end}


def test_peak_rss_delta_mean_cpu_peak_gpu_per_endpoint() -> None:
    base = hs(-10.0, 1500.0, 1.0, 0.0, baseline=True, model="m")
    samples = [
        base,
        hs(0.0, 1800.0, 400.0, 200.0, other_rss=9000.0),  # before t_start: RSS only
        hs(0.5, 1900.0, 100.0, 300.0, other_rss=9000.0),
        hs(1.0, 1850.0, 50.0, 250.0, other_rss=9000.0),
        hs(1.5, 1700.0, 30.0, 100.0),  # t_end + 0.5 s: still covers the cell's last tick
        hs(2.1, 5000.0, 999.0, 999.0),  # outside
    ]
    r = resources_for(resp(0.1, 1.0), samples, base, endpoint=EP, cpu_count=2)
    assert r["engine_rss_mb"] == 1900.0  # the other endpoint's 9000 MB is not this engine
    assert r["engine_rss_delta_mb"] == 400.0
    assert r["engine_gpu_mem_mb"] == 300.0
    assert r["engine_cpu_pct"] == (100.0 + 50.0 + 30.0) / 3  # the tick at 0.0 predates it
    other = resources_for(resp(0.1, 1.0), samples, base, endpoint=OTHER, cpu_count=2)
    assert other["engine_rss_mb"] == 9000.0 and other["engine_rss_delta_mb"] is None


def test_unknown_endpoint_or_no_engine_samples_give_nulls() -> None:
    samples = [hs(0.5, 1900.0, 10.0, 1.0, foreign=3.0)]
    for endpoint in (None, "http://elsewhere:1/v1"):
        r = resources_for(resp(0.0, 1.0), samples, None, endpoint=endpoint, cpu_count=4)
        assert (r["engine_rss_mb"], r["engine_cpu_pct"], r["engine_gpu_mem_mb"]) == (None,) * 3
        assert r["engine_rss_delta_mb"] is None
        assert r["foreign_cpu_pct"] == 3.0 and r["host_contended"] is False
    # GPU memory unknown in the samples (no NVML) stays None, never 0
    r = resources_for(resp(0.0, 1.0), [hs(0.5, 100.0, 1.0, None)], None, endpoint=EP)
    assert r["engine_rss_mb"] == 100.0 and r["engine_gpu_mem_mb"] is None


def test_contention_threshold_is_a_quarter_of_the_cores() -> None:
    assert CONTENDED_SHARE == 0.25
    on = [hs(0.5, foreign=50.1), hs(1.0, foreign=50.1)]
    at = [hs(0.5, foreign=40.0), hs(1.0, foreign=60.0)]  # mean 50.0: not above
    assert resources_for(resp(0.0, 1.0), on, None, cpu_count=2)["host_contended"] is True
    assert resources_for(resp(0.0, 1.0), at, None, cpu_count=2)["host_contended"] is False
    assert resources_for(resp(0.0, 1.0), on, None, cpu_count=8)["host_contended"] is False
    assert resources_for(resp(0.0, 1.0), on, None, cpu_count=None)["host_contended"] is None
    none = [hs(0.5, foreign=None)]
    r = resources_for(resp(0.0, 1.0), none, None, cpu_count=2)
    assert r["foreign_cpu_pct"] is None and r["host_contended"] is None


def test_short_cell_uses_the_window_for_cpu() -> None:
    samples = [hs(0.0, 10.0, 80.0, foreign=120.0)]  # at t_start − 0.1 s: not after t_start
    r = resources_for(resp(0.1, 0.2), samples, None, endpoint=EP, cpu_count=2)
    assert r["engine_cpu_pct"] == 80.0 and r["foreign_cpu_pct"] == 120.0
    assert r["host_contended"] is True


def test_finalize_bundle_maps_models_to_endpoints(tmp_path: Path) -> None:
    manifest = {
        "models": [
            {"model": "m", "base_url": EP, "engine": "openai"},
            {"model": "sim", "base_url": None, "engine": "simulated"},
        ],
        "hosts": {"h": {"cpu_count": 2}},
    }
    (tmp_path / "bundle.json").write_text(json.dumps(manifest))
    assert manifest_endpoints(tmp_path) == ({"m": EP, "sim": "simulated:sim"}, {"h": 2})
    with JsonlWriter(tmp_path / "hosts" / "h.jsonl") as w:
        w.write(hs(-5.0, 1000.0, 0.0, baseline=True, model="m"))
        w.write(hs(0.5, 1250.0, 90.0, foreign=70.0))
    with JsonlWriter(tmp_path / "responses" / "m.jsonl") as w:
        for model in ("m", "sim"):
            w.write(
                {
                    "key": f"{model}|v|p|1",
                    "model": model,
                    "host": "h",
                    **resp(0.0, 0.4),
                }
            )
    assert finalize_bundle(tmp_path) == 2
    m, sim = read_jsonl(tmp_path / "responses" / "m.jsonl").records
    assert (m["engine_rss_mb"], m["engine_rss_delta_mb"], m["engine_cpu_pct"]) == (
        1250.0,
        250.0,
        90.0,
    )
    assert m["foreign_cpu_pct"] == 70.0 and m["host_contended"] is True
    assert sim["engine_rss_mb"] is None and sim["host_contended"] is True
