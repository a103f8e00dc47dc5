"""The live view of a perf bundle (SPEC §7b): per host requests done of planned, the point in
flight, ETA, failures by ``error_kind`` and the host sparklines, in the eval view's shapes
(:class:`~touchstone_ray.ui.live.HostProgress`), so the same cards and event stream serve it.

Everything is read from the bundle's files through the perf bundle's own readers:

- **planned**: the points ``bundle.json`` recorded when the run started (``points``: the
  output of :func:`~touchstone_ray.perf.plan.plan_points`, each with its ``runs``, i.e.
  ``max(--runs, concurrency)`` requests); a manifest without them is planned again from its
  frozen ``config.yaml`` and ``settings`` with the same function. A host's planned requests
  are the sum of its points' ``runs``.
- **done / failed**: the de-duplicated requests of ``points/*.jsonl``
  (:func:`~touchstone_ray.perf.bundle.read_points`, read-only: a torn last line is skipped).
  Requests of points outside the plan (the capacity search's extra concurrencies) are
  counted apart as ``extra``, not as progress; failures by ``error_kind`` count every failed
  request.
- **in flight**: the model whose ``model_start`` is the host's last model event in
  ``events.jsonl`` (no ``model_done`` / ``model_failed`` after it) while the run is
  ``running``; its first planned point with fewer requests recorded than planned is the point
  in flight, with ``concurrency`` requests in flight (closed loop). A point's requests are
  written when the point returns, so the point in flight has none yet. With every planned
  point recorded the model is in its ``capacity search`` (``settings.capacity`` and no
  ``capacity`` event of it yet), its ``rate sweep`` (``settings.open_loop.sweep`` and no
  ``sweep`` event yet) or its ``embeddings`` (``settings.embed``); how many
  requests those have in flight is not known here (``None``).
- **ETA** (s) = requests left ÷ (requests finished ÷ seconds since the host's first
  ``model_start``), as in the eval view: an estimate from the rate so far.
- **sparklines**: ``hosts/<host>.jsonl`` as in the eval view (MB).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from touchstone_ray.bundle import Layout, Manifest, PerfSettings, read_events, read_host_samples
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.perf.bundle import open_perf_bundle, read_points
from touchstone_ray.ui._live_state import (
    HostProgress,
    LiveState,
    host_series,
    run_eta_s,
)

__all__ = ["PlannedPoint", "perf_live_state", "planned_points"]

PlannedPoint = tuple[str, str, str, int, int]
"""``(model, host, context label, concurrency, runs)`` of one planned point."""

MODEL_EVENTS = ("model_start", "model_done", "model_failed")
"""The ``events.jsonl`` events that open or close a model's phase on a host."""


def _replanned(root: Path, settings: PerfSettings) -> list[PlannedPoint]:
    from touchstone_ray.config import load_config
    from touchstone_ray.perf.plan import plan_points

    if settings.contexts is None or settings.concurrency is None or settings.runs is None:
        return []
    try:
        config = load_config(Layout(root).config)
        plans = plan_points(config, settings.contexts, settings.concurrency, settings.runs)
    except (TouchstoneError, ValueError):
        return []
    return [
        (p.model, p.host, p.context_label, p.concurrency, p.runs)
        for models in plans.values()
        for m in models
        for p in m.points
    ]


def planned_points(root: Path, manifest: Manifest) -> list[PlannedPoint]:
    """The perf run's points in run order: the manifest's ``points``, else
    :func:`~touchstone_ray.perf.plan.plan_points` over the bundle's ``config.yaml`` and the
    manifest's ``settings`` (``contexts``, ``concurrency``, ``runs``); ``[]`` when neither is
    there or the config is unreadable."""
    if manifest.points is not None:
        return [(p.model, p.host, str(p.context), p.concurrency, p.runs) for p in manifest.points]
    return _replanned(root, manifest.settings) if manifest.settings is not None else []


@dataclass
class _Phases:
    """What ``events.jsonl`` says of each host's models."""

    open: dict[str, str | None] = field(default_factory=dict)
    """Host → the model whose phase is open (``None``: none)."""
    first: dict[str, float] = field(default_factory=dict)
    """Host → epoch s of its first ``model_start``."""
    searched: set[tuple[str, str]] = field(default_factory=set)
    """``(host, model)`` whose capacity search ended (a ``capacity`` event)."""
    swept: set[tuple[str, str]] = field(default_factory=set)
    """``(host, model)`` whose rate sweep ended (a ``sweep`` event)."""


def _model_phases(root: Path, run_start: float) -> _Phases:
    out = _Phases()
    open_, first = out.open, out.first
    for ev in read_events(Layout(root)):
        kind, host, model, ts = ev.get("event"), ev.get("host"), ev.get("model"), ev.get("ts")
        if not isinstance(host, str) or not isinstance(model, str):
            continue
        if kind == "capacity":
            out.searched.add((host, model))
        if kind == "sweep":
            out.swept.add((host, model))
        if kind not in MODEL_EVENTS:
            continue
        if kind == "model_start":
            open_[host] = model
            if isinstance(ts, int | float) and ts >= run_start:
                first.setdefault(host, float(ts))
        elif open_.get(host) == model:
            open_[host] = None
    return out


def _stage(settings: PerfSettings | None, searched: bool, swept: bool = False) -> str | None:
    """What a model does after its planned points: ``capacity search``, ``rate sweep``,
    ``embeddings`` or ``None`` (nothing more planned)."""
    if settings is None:
        return None
    if settings.capacity and not searched:
        return "capacity search"
    if (settings.open_loop or {}).get("sweep") and not swept:
        return "rate sweep"
    return "embeddings" if settings.embed is not None else None


def perf_live_state(root: Path, now: float | None = None) -> LiveState:
    """The live view of the perf bundle at ``root``; counts are requests. Raises
    :class:`~touchstone_ray.errors.BundleError` for a folder that is not a readable perf
    bundle or a request line that is not a perf record."""
    now = time.time() if now is None else now
    bundle = open_perf_bundle(root)
    manifest = bundle.manifest()
    state = bundle.run_state(now)
    plan = planned_points(root, manifest)
    planned_runs = {f"{m}|{h}|{c}|{n}": runs for m, h, c, n, runs in plan}
    host_of_point = {f"{m}|{h}|{c}|{n}": h for m, h, c, n, _ in plan}
    hosts: dict[str, HostProgress] = {}

    def host(name: str) -> HostProgress:
        return hosts.setdefault(name, HostProgress(name, unit="requests"))

    for _, name, _, _, runs in plan:
        host(name).planned += runs
    recorded: defaultdict[str, int] = defaultdict(int)
    run_start = manifest.run_started_at()
    ended_this_run: defaultdict[str, int] = defaultdict(int)
    for r in read_points(root):
        prefix = r.key.rsplit("|", 1)[0]
        hp = host(host_of_point.get(prefix, r.host))
        if r.t_end is not None and r.t_end >= run_start:
            ended_this_run[hp.host] += 1
        if prefix in planned_runs:
            recorded[prefix] += 1
            if r.ok:
                hp.ok += 1
            else:
                hp.failed += 1
        else:
            hp.extra += 1
        if not r.ok:
            kind = r.error_kind or "unknown"
            hp.failures_by_kind[kind] = hp.failures_by_kind.get(kind, 0) + 1
            hp.last_failures.append(
                {"model": r.model, "key": r.key, "error_kind": kind, "error": r.error}
            )
    phases = _model_phases(root, run_start)
    for name, model in phases.open.items():
        hp = host(name)
        if model is None or state != "running":
            continue
        hp.current_model = model
        pending = (
            (ctx, conc)
            for m, h, ctx, conc, runs in plan
            if m == model and h == name and recorded[f"{m}|{h}|{ctx}|{conc}"] < runs
        )
        point = next(pending, None)
        if point is not None:
            hp.current_point = f"context {point[0]} · concurrency {point[1]}"
            hp.in_flight = point[1]
        else:
            hp.current_point = _stage(
                manifest.settings, (name, model) in phases.searched, (name, model) in phases.swept
            )
            hp.in_flight = None if hp.current_point else 0
    for hp in hosts.values():
        if state == "running":
            left = max(hp.planned - hp.ok - hp.failed, 0)
            hp.eta_s = run_eta_s(left, ended_this_run[hp.host], phases.first.get(hp.host), now)
        hp.last_failures = hp.last_failures[-5:]
    for name, samples in read_host_samples(Layout(root)).items():
        host(name).series = host_series(samples)
    return LiveState(state, [hosts[k] for k in sorted(hosts)], now)
