"""SPEC §9 aggregates per (model, variant): which cells count for speed, and the figures.

The one place that decides whether a cell's timing is a fair measurement
(:func:`speed_exclusions`) and computes a row's speed and resource figures
(:func:`row_stats`); the scorecard, the report and the variant A/B comparison all read it.

A cell is left out of the speed aggregates (kept in the data and counted per reason) when:

- ``failed``: the generation failed (``ok`` false);
- ``cold_start``: the first timed request of a model on its host in a run (SPEC §9);
- ``prompt_cached``: the server took part of the prompt from its cache
  (:func:`touchstone_ray.engines.normalize.is_prompt_cached`).
  A prompt cache shortens the prompt phase, not token generation, so this reason removes the
  cell from the *prompt-side* figures only: TTFT, TTFA, E2E and prefill tok/s. Decode tok/s,
  TPOT and ITL still count it.
- ``contended``: other processes used much of the host's CPU during the cell
  (``host_contended``, :mod:`touchstone_ray.telemetry.engines`);
- ``throttled``: the host's CPU or GPU was throttled during the cell.

Adding a reason: one more ``if`` in :func:`speed_exclusions`, one more name in
:data:`ExclusionReason` (and in :data:`PROMPT_SIDE_ONLY` when it does not touch decoding).

Memory figures (peak RAM, model delta, GPU memory) are taken over the row's ok cells: a failed
cell (a server that never answered) says nothing about what the model costs, so a row
without an ok cell has none. Percentiles use linear interpolation (numpy's default), tok/s
figures are medians. Times are seconds, memory MB, throughput tokens/s.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from touchstone_ray.descriptive import median, percentile
from touchstone_ray.records import EvalResponse

__all__ = [
    "PROMPT_SIDE_ONLY",
    "ExclusionReason",
    "RowStats",
    "cold_ttft_cells",
    "counts_for_decode",
    "counts_for_prompt",
    "row_stats",
    "speed_exclusions",
    "under_load",
]

ExclusionReason = Literal["failed", "cold_start", "prompt_cached", "contended", "throttled"]
"""Why a cell is out of the speed aggregates (see the module docstring)."""

PROMPT_SIDE_ONLY: frozenset[ExclusionReason] = frozenset({"prompt_cached"})
"""Reasons that exclude a cell from the prompt-side figures only (TTFT, TTFA, E2E, prefill)."""

_PRESSURE_RANK = {"normal": 0, "warn": 1, "critical": 2}


def speed_exclusions(r: EvalResponse) -> tuple[ExclusionReason, ...]:
    """Every reason ``r`` is left out of speed aggregates, in a fixed order; ``()`` = it counts."""
    reasons: list[ExclusionReason] = []
    if not r.ok:
        reasons.append("failed")
    if r.is_cold_start:
        reasons.append("cold_start")
    if r.prompt_cached:
        reasons.append("prompt_cached")
    if r.host_contended:
        reasons.append("contended")
    if r.throttled:
        reasons.append("throttled")
    return tuple(reasons)


def counts_for_prompt(r: EvalResponse) -> bool:
    """Whether ``r`` counts for TTFT, TTFA, E2E and prefill tok/s (no exclusion reason)."""
    return not speed_exclusions(r)


def counts_for_decode(r: EvalResponse) -> bool:
    """Whether ``r`` counts for decode tok/s, TPOT and ITL (only prompt-side reasons, if any)."""
    return set(speed_exclusions(r)) <= PROMPT_SIDE_ONLY


def cold_ttft_cells(responses: Iterable[EvalResponse]) -> list[EvalResponse]:
    """Per prompt, its first cell (lowest repeat) that counts for the prompt-side figures:
    the cells ``ttft_cold_p50_s`` is taken over (SPEC §9). Order: first appearance of the
    prompt."""
    first: dict[str, EvalResponse] = {}
    for r in responses:
        if not counts_for_prompt(r):
            continue
        seen = first.get(r.prompt_id)
        if seen is None or r.repeat < seen.repeat:
            first[r.prompt_id] = r
    return list(first.values())


@dataclass(frozen=True)
class RowStats:
    """SPEC §9 aggregates of one (model, variant) from its responses."""

    n_cells: int
    n_ok: int
    n_failed: int
    n_cold: int
    n_truncated: int
    n_reasoning_only: int
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    ttfa_p50_s: float | None
    ttfa_p95_s: float | None
    e2e_p50_s: float | None
    e2e_p95_s: float | None
    tpot_median_s: float | None
    itl_p50_median_s: float | None
    decode_tps_median: float | None
    prefill_tps_median: float | None
    ttft_cv_pct: float | None
    """Coefficient of variation of TTFT (sample stdev / mean × 100, %)."""
    completion_tokens_median: float | None
    peak_ram_mb: float | None
    model_delta_mb: float | None
    """Peak − baseline before the model (max ``sys_used_delta_mb``, MB)."""
    peak_gpu_mem_mb: float | None
    gpu_mem_delta_mb: float | None
    throttled_cells: int | None
    """Cells with ``throttled`` true; ``None`` when throttling was not measurable."""
    mem_pressure_max: str | None
    hosts: tuple[str, ...]
    engines: tuple[str, ...]
    """``engine`` or ``engine engine_version`` as recorded."""
    ttft_cold_p50_s: float | None = None
    """TTFT p50 over the first uncached cell of each prompt (:func:`cold_ttft_cells`, s)."""
    n_cached: int = 0
    """Cells whose prompt the server partly took from its cache (``prompt_cached``)."""
    excluded: dict[str, int] = field(default_factory=dict)
    """Exclusion reason → cells with it (a cell may have several), only reasons that occur."""
    n_contended: int = 0
    """Cells with ``host_contended`` true (left out of the speed figures)."""
    engine_rss_peak_mb: float | None = None
    """Peak RSS of the serving process tree (max ``engine_rss_mb``, MB)."""
    engine_rss_delta_mb: float | None = None
    """Max ``engine_rss_delta_mb``: the engine's growth over its baseline RSS (MB)."""
    engine_gpu_mem_mb: float | None = None
    """Peak GPU memory of the serving processes (MB, NVML per process)."""
    engine_cpu_pct: float | None = None
    """Mean of the cells' ``engine_cpu_pct`` (% of one core)."""


def _max(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def row_stats(responses: Sequence[EvalResponse]) -> RowStats:
    """The SPEC §9 aggregates of one (model, variant) (see the module docstring): speed
    figures over the cells that count for them, memory figures over the ok cells, the other
    resource figures over every cell."""
    prompt_side = [r for r in responses if counts_for_prompt(r)]
    decode_side = [r for r in responses if counts_for_decode(r)]
    ttft = [r.ttft_s for r in prompt_side if r.ttft_s is not None]
    ttfa = [r.ttfa_s for r in prompt_side if r.ttfa_s is not None]
    e2e = [r.e2e_s for r in prompt_side if r.e2e_s is not None]
    cold = [r.ttft_s for r in cold_ttft_cells(responses) if r.ttft_s is not None]
    cv = None
    if len(ttft) >= 2 and statistics.fmean(ttft) > 0:
        cv = statistics.stdev(ttft) / statistics.fmean(ttft) * 100.0
    throttle = [r.throttled for r in responses if r.throttled is not None]
    levels = [r.mem_pressure_max for r in responses if r.mem_pressure_max is not None]
    engines = {
        f"{r.engine} {r.engine_version}" if r.engine_version else r.engine for r in responses
    }
    excluded = Counter(reason for r in responses for reason in speed_exclusions(r))
    ok = [r for r in responses if r.ok]  # a failed cell says nothing of what the model costs
    return RowStats(
        n_cells=len(responses),
        n_ok=sum(r.ok for r in responses),
        n_failed=sum(not r.ok for r in responses),
        n_cold=sum(r.is_cold_start for r in responses),
        n_truncated=sum(r.truncated for r in responses),
        n_reasoning_only=sum(r.reasoning_only for r in responses),
        ttft_p50_s=percentile(ttft, 50),
        ttft_p95_s=percentile(ttft, 95),
        ttfa_p50_s=percentile(ttfa, 50),
        ttfa_p95_s=percentile(ttfa, 95),
        e2e_p50_s=percentile(e2e, 50),
        e2e_p95_s=percentile(e2e, 95),
        tpot_median_s=median((r.tpot_s for r in decode_side), as_float=True),
        itl_p50_median_s=median((r.itl_p50_s for r in decode_side), as_float=True),
        decode_tps_median=median((r.decode_tps for r in decode_side), as_float=True),
        prefill_tps_median=median((r.prefill_tps for r in prompt_side), as_float=True),
        ttft_cv_pct=cv,
        completion_tokens_median=median(
            (float(r.completion_tokens) for r in responses if r.ok and r.completion_tokens),
            as_float=True,
        ),
        peak_ram_mb=_max(r.sys_used_mb for r in ok),
        model_delta_mb=_max(r.sys_used_delta_mb for r in ok),
        peak_gpu_mem_mb=_max(r.gpu_mem_used_mb for r in ok),
        gpu_mem_delta_mb=_max(r.gpu_mem_delta_mb for r in ok),
        throttled_cells=sum(throttle) if throttle else None,
        mem_pressure_max=max(levels, key=lambda lv: _PRESSURE_RANK.get(lv, 0)) if levels else None,
        hosts=tuple(sorted({r.host for r in responses})),
        engines=tuple(sorted(engines)),
        ttft_cold_p50_s=percentile(cold, 50),
        n_cached=sum(r.prompt_cached for r in responses),
        excluded={reason: excluded[reason] for reason in sorted(excluded)},
        n_contended=sum(1 for r in responses if r.host_contended),
        engine_rss_peak_mb=_max(r.engine_rss_mb for r in responses),
        engine_rss_delta_mb=_max(r.engine_rss_delta_mb for r in responses),
        engine_gpu_mem_mb=_max(r.engine_gpu_mem_mb for r in responses),
        engine_cpu_pct=_mean(r.engine_cpu_pct for r in responses),
    )


def under_load(concurrency: int | None) -> bool:
    """Whether speed measured at ``concurrency`` is "under load" (SPEC §9: c > 1). Its
    per-request TTFT then includes the server's own queue: not comparable with single-stream
    figures."""
    return concurrency is not None and concurrency > 1
