"""One row of ``touchstone-ray compare`` (shared by :mod:`.compare` and :mod:`.perf_join`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CompareRow"]


@dataclass(frozen=True)
class CompareRow:
    """One (bundle, model, variant) of the comparison."""

    bundle: str
    pack: str
    hosts: str
    """``host: GPU, GPU`` per host the row ran on (``host: –`` without GPUs)."""
    model: str
    variant: str
    quality_pct: float | None
    ko_passed: bool | None
    """``None`` when the bundle is not judged."""
    ko_reason: str
    ttft_p50_s: float | None
    decode_tps_median: float | None
    peak_ram_mb: float | None
    simulated: bool
    engine_rss_peak_mb: float | None = None
    """Peak RSS of the serving process tree (MB), ``None`` where it was not found."""
    memory_mb: float | None = None
    """The cross-machine memory figure: ``engine_rss_peak_mb``, else ``peak_ram_mb`` (MB)."""
    memory_source: str | None = None
    """``engine`` | ``system`` | ``None`` (no memory figure)."""
    users_at_slo: int | None = None
    """From a perf bundle given alongside, for the same (model, host): the most users at once
    with ≥ 90 % meeting its SLO (``perf --capacity``); ``None`` without one."""
    users_slo: str | None = None
    """That SLO, e.g. ``ttft=0.5,tpot=0.05`` (s)."""
    sustainable_rps: float | None = None
    """From a perf bundle given alongside, for the same (model, host): the highest offered
    rate of ``perf --sweep`` that did not saturate and met its SLO for ≥ 90 % (requests/s);
    ``None`` without one."""
