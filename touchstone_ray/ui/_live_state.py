"""What the live page shows of one host, shared by the eval reader (:mod:`.live`) and the perf
reader (:mod:`.live_perf`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.records import HostSample

__all__ = [
    "SPARK_POINTS",
    "HostProgress",
    "LiveState",
    "eta_text",
    "host_series",
    "run_eta_s",
]

SPARK_POINTS = 120
"""Most recent samples a sparkline shows."""


@dataclass
class HostProgress:
    """One host's progress; ``eta_s`` in seconds (:func:`run_eta_s`). Counts are ``unit``:
    eval cells, or perf requests."""

    host: str
    planned: int = 0
    ok: int = 0
    failed: int = 0
    in_flight: int | None = 0
    """Cells (requests) in flight; ``None``: not known here (a perf capacity search)."""
    current_model: str | None = None
    unit: str = "cells"
    current_point: str | None = None
    """Perf: the point in flight (``context 256 · concurrency 2``, ``capacity search`` or
    ``embeddings``); ``None`` for eval."""
    extra: int = 0
    """Perf: requests of points outside the plan (the capacity search), not in ``planned``."""
    eta_s: float | None = None
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    last_failures: list[dict[str, Any]] = field(default_factory=list)
    series: dict[str, list[float]] = field(default_factory=dict)
    """``ram`` / ``gpu`` / ``engine`` → MB values over time."""


@dataclass
class LiveState:
    """The whole live view of a bundle at one moment."""

    state: str
    hosts: list[HostProgress]
    updated_at: float


def host_series(samples: list[HostSample]) -> dict[str, list[float]]:
    """``ram`` / ``gpu`` / ``engine`` → MB over the last :data:`SPARK_POINTS` samples
    (``samples`` sorted by ``ts``); a series never measured is left out."""
    recent = samples[-SPARK_POINTS:]
    ram = [s.sys_used_mb for s in recent if s.sys_used_mb is not None]
    gpu = [
        sum(g.mem_used_mb for g in s.gpus if g.mem_used_mb is not None)
        for s in recent
        if s.gpus and any(g.mem_used_mb is not None for g in s.gpus)
    ]
    engine = [
        sum(x.rss_mb for x in s.engines if x.rss_mb is not None)
        for s in recent
        if s.engines and any(x.rss_mb is not None for x in s.engines)
    ]
    out = {"ram": ram, "gpu": gpu, "engine": engine}
    return {k: v for k, v in out.items() if v}


def run_eta_s(
    left: int, ended_this_run: int, first_start: float | None, now: float
) -> float | None:
    """Seconds until ``left`` more records at this run's rate: ``ended_this_run`` records
    since ``first_start`` (epoch s, the run's first model start on the host). ``None``
    without a rate yet or with nothing left. A resumed run's reused records and the time
    between a crash and its resume are outside the rate, so they cannot skew it."""
    elapsed = now - first_start if first_start is not None else 0.0
    if not left or not ended_this_run or elapsed <= 0:
        return None
    return left / (ended_this_run / elapsed)


def eta_text(seconds: float | None) -> str:
    """An ETA as the live pages show it: ``—`` when not known, ``42 s``, ``3 min 05 s``."""
    if seconds is None:
        return "—"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
