"""The finalize pass: join host samples to every answer by time window (SPEC §7, seed 002).

Window
    A response's host samples with ``t_start − 0.5 s ≤ ts ≤ t_end + 0.5 s`` (``WINDOW_PAD_S``;
    one monitor interval at the default 0.5 s, so even a short cell sees a tick). When none
    falls inside, the single nearest sample is used if it is at most ``NEAREST_MAX_S`` away
    (after a monitor was lost, far-away samples would describe a different moment).
    No usable sample (the host has none, the response has no ``t_start``): every resource
    field is ``None`` (null = not measurable, never 0), ``n_samples`` included.
    Timestamps are epoch seconds of the host, on both sides, so no clock skew enters.

Definitions (memory MB = 2**20 bytes)
    ``sys_used_mb``          peak host ``sys_used_mb`` in the window
    ``sys_used_baseline_mb`` ``sys_used_mb`` of that model's baseline tick on that host: the
                             latest ``baseline=true`` sample with this ``model`` at or before
                             ``t_start`` (bundles from before baseline ticks: ``None``)
    ``sys_used_delta_mb``    peak − baseline (the model delta)
    ``swap_delta_mb``        peak ``swap_used_mb`` − baseline's
    ``mem_pressure_max``     worst level (normal < warn < critical)
    ``throttled``            a CPU ``cpu_throttle_count`` increase within the window (counted
                             from the sample just before it) or any GPU throttle reason other
                             than ``gpu_idle``; ``None`` when neither is measurable
    ``gpu_mem_used_mb``      peak over samples of Σ GPUs' ``mem_used_mb``
    ``gpu_mem_delta_mb``     that peak − the baseline's Σ
    ``gpu_util_pct``         max over samples and GPUs
    ``gpu_temp_c_max``       max over samples and GPUs (°C)
    ``gpu_power_w``          max over samples of Σ GPUs' ``power_w`` (the host's GPU draw, W)
    ``gpu_throttle_reasons`` sorted union of reason names (``gpu_idle`` included)
    ``n_samples``            samples the figures come from (1 for the nearest-sample fallback)

Engine footprint (the record's endpoint: its model's ``base_url`` in ``bundle.json``; see
:mod:`touchstone_ray.telemetry.engines` for how the process is found and sampled)
    ``engine_rss_mb``        peak ``rss_mb`` of the endpoint's process tree in the window
    ``engine_rss_delta_mb``  that peak − the tree's ``rss_mb`` in the model's baseline tick
    ``engine_gpu_mem_mb``    peak ``gpu_mem_mb`` in the window
    ``engine_cpu_pct``       mean ``cpu_pct`` (% of one core) over the CPU window
    ``foreign_cpu_pct``      mean ``HostSample.foreign_cpu_pct`` (% of one core) over it
    ``host_contended``       ``foreign_cpu_pct > CONTENDED_SHARE × cpu_count × 100``: other
                             processes used more than a quarter of the host's cores; ``None``
                             when either side is unknown
    CPU figures of a tick describe the time since the previous tick, so the CPU window is the
    samples with ``t_start < ts ≤ t_end + 0.5 s`` (the ticks that cover the cell), falling
    back to the window above for a cell shorter than a tick. An endpoint whose process was not
    found has no samples: these fields are ``None`` (the reason is in ``bundle.json``).
"""

from __future__ import annotations

import bisect
import contextlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from touchstone_ray.bundle import HostFacts, Layout, ResponseShards, ShardFolder, read_host_samples
from touchstone_ray.records import HostSample, MemPressure
from touchstone_ray.telemetry.linux import PRESSURE_RANK

WINDOW_PAD_S = 0.5
"""Seconds added on both sides of [t_start, t_end]."""
NEAREST_MAX_S = 30.0
"""Farthest (s) a nearest-sample fallback may be from the window."""

RESOURCE_FIELDS = (
    "sys_used_mb",
    "sys_used_baseline_mb",
    "sys_used_delta_mb",
    "swap_delta_mb",
    "mem_pressure_max",
    "throttled",
    "gpu_mem_used_mb",
    "gpu_mem_delta_mb",
    "gpu_util_pct",
    "gpu_temp_c_max",
    "gpu_power_w",
    "gpu_throttle_reasons",
    "n_samples",
    "engine_rss_mb",
    "engine_rss_delta_mb",
    "engine_cpu_pct",
    "engine_gpu_mem_mb",
    "foreign_cpu_pct",
    "host_contended",
)
"""The EvalResponse fields finalize fills."""

CONTENDED_SHARE = 0.25
"""A cell is ``host_contended`` when foreign processes used more than this share of the
host's cores (0.25 × cpu_count × 100 in % of one core: 50 on 2 cores, 200 on 8)."""


class HostTimeline:
    """One host's samples sorted by ``ts`` (windows by bisection)."""

    def __init__(self, samples: Iterable[HostSample]) -> None:
        self.samples = sorted(samples, key=lambda s: s.ts)
        self.ts = [s.ts for s in self.samples]

    def window(self, lo: float, hi: float) -> tuple[list[HostSample], HostSample | None]:
        """Samples with ``lo ≤ ts ≤ hi``, and the last sample before ``lo`` (or ``None``)."""
        i, j = bisect.bisect_left(self.ts, lo), bisect.bisect_right(self.ts, hi)
        return self.samples[i:j], self.samples[i - 1] if i > 0 else None

    def nearest(self, lo: float, hi: float) -> tuple[HostSample | None, float]:
        """The sample closest to [lo, hi] and its distance (s)."""
        i = bisect.bisect_left(self.ts, lo)
        best: tuple[HostSample | None, float] = (None, float("inf"))
        if i > 0:
            best = (self.samples[i - 1], lo - self.ts[i - 1])
        if i < len(self.ts) and self.ts[i] - hi < best[1]:
            best = (self.samples[i], max(0.0, self.ts[i] - hi))
        return best


def _empty() -> dict[str, Any]:
    return dict.fromkeys(RESOURCE_FIELDS)


def _max(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def _sum(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _gpu_sum(s: HostSample, attr: str) -> float | None:
    return _sum(getattr(g, attr) for g in s.gpus or [])


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _engine(s: HostSample, endpoint: str | None) -> Any:
    if endpoint is None:
        return None
    return next((e for e in s.engines or [] if e.endpoint == endpoint), None)


def engine_fields(
    win: list[HostSample],
    cpu_win: list[HostSample],
    baseline: HostSample | None,
    endpoint: str | None,
    cpu_count: int | None,
) -> dict[str, Any]:
    """The engine footprint and contention fields from a window (module docstring)."""
    engines = [e for e in (_engine(s, endpoint) for s in win) if e is not None]
    cpu_engines = [e for e in (_engine(s, endpoint) for s in cpu_win) if e is not None]
    peak = _max(e.rss_mb for e in engines)
    base = _engine(baseline, endpoint) if baseline is not None else None
    foreign = _mean(s.foreign_cpu_pct for s in cpu_win)
    contended = None
    if foreign is not None and cpu_count:
        contended = foreign > CONTENDED_SHARE * cpu_count * 100.0
    return {
        "engine_rss_mb": peak,
        "engine_rss_delta_mb": _diff(peak, base.rss_mb if base is not None else None),
        "engine_cpu_pct": _mean(e.cpu_pct for e in cpu_engines),
        "engine_gpu_mem_mb": _max(e.gpu_mem_mb for e in engines),
        "foreign_cpu_pct": foreign,
        "host_contended": contended,
    }


def resources_for(
    response: dict[str, Any],
    samples: list[HostSample] | HostTimeline,
    baseline: HostSample | None,
    *,
    endpoint: str | None = None,
    cpu_count: int | None = None,
) -> dict[str, Any]:
    """The resource fields for one response from its host's samples (see module docstring).

    ``samples`` are the host's samples in any order (or a prebuilt :class:`HostTimeline`);
    ``baseline`` the model's baseline tick on that host, or ``None``; ``endpoint`` the
    record's engine endpoint (``None``: no engine figures); ``cpu_count`` the host's logical
    CPUs (``None``: ``host_contended`` unknown). Pure.
    """
    tl = samples if isinstance(samples, HostTimeline) else HostTimeline(samples)
    t_start = response.get("t_start")
    t_end = response.get("t_end")
    if not isinstance(t_start, int | float) or not tl.samples:
        return _empty()
    lo = t_start - WINDOW_PAD_S
    hi = (t_end if isinstance(t_end, int | float) else t_start) + WINDOW_PAD_S
    win, prev = tl.window(lo, hi)
    if not win:
        near, dist = tl.nearest(lo, hi)
        if near is None or dist > NEAREST_MAX_S:
            return _empty()
        win, prev = [near], None
    if prev is not None and lo - prev.ts > NEAREST_MAX_S:
        prev = None

    out = _empty()
    cpu_hi = (t_end if isinstance(t_end, int | float) else t_start) + WINDOW_PAD_S
    cpu_win = [s for s in win if t_start < s.ts <= cpu_hi] or win
    out.update(engine_fields(win, cpu_win, baseline, endpoint, cpu_count))
    out["n_samples"] = len(win)
    out["sys_used_mb"] = _max(s.sys_used_mb for s in win)
    levels: list[MemPressure] = [s.mem_pressure for s in win if s.mem_pressure is not None]
    if levels:
        out["mem_pressure_max"] = max(levels, key=lambda lv: PRESSURE_RANK[lv])
    out["gpu_mem_used_mb"] = _max(_gpu_sum(s, "mem_used_mb") for s in win)
    out["gpu_power_w"] = _max(_gpu_sum(s, "power_w") for s in win)
    gpus = [g for s in win for g in s.gpus or []]
    out["gpu_util_pct"] = _max(g.util_pct for g in gpus)
    out["gpu_temp_c_max"] = _max(g.temp_c for g in gpus)
    reason_lists = [g.throttle_reasons for g in gpus if g.throttle_reasons is not None]
    reasons = sorted({r for rs in reason_lists for r in rs})
    out["gpu_throttle_reasons"] = reasons if reason_lists else None

    counts = [s.cpu_throttle_count for s in ([prev] if prev else []) + win]
    seq = [c for c in counts if c is not None]
    cpu_thr = any(b > a for a, b in pairwise(seq)) if len(seq) >= 2 else None
    gpu_thr = any(r != "gpu_idle" for r in reasons) if reason_lists else None
    if cpu_thr or gpu_thr:
        out["throttled"] = True
    elif cpu_thr is not None or gpu_thr is not None:
        out["throttled"] = False

    if baseline is not None:
        out["sys_used_baseline_mb"] = baseline.sys_used_mb
        out["sys_used_delta_mb"] = _diff(out["sys_used_mb"], baseline.sys_used_mb)
        out["swap_delta_mb"] = _diff(_max(s.swap_used_mb for s in win), baseline.swap_used_mb)
        out["gpu_mem_delta_mb"] = _diff(out["gpu_mem_used_mb"], _gpu_sum(baseline, "mem_used_mb"))
    return out


def load_host_samples(
    bundle_dir: Path,
) -> tuple[dict[str, HostTimeline], dict[tuple[str, str], list[HostSample]]]:
    """Read ``hosts/*.jsonl`` (:func:`~touchstone_ray.bundle.read_host_samples`): host →
    timeline, and (host, model) → baseline ticks by ts."""
    by_host = read_host_samples(Layout(Path(bundle_dir)))
    baselines: dict[tuple[str, str], list[HostSample]] = defaultdict(list)
    for host, samples in by_host.items():
        for s in samples:
            if s.baseline and s.model is not None:
                baselines[(host, s.model)].append(s)
    return {h: HostTimeline(v) for h, v in by_host.items()}, dict(baselines)


def pick_baseline(ticks: list[HostSample], t_start: float | None) -> HostSample | None:
    """The latest baseline tick at or before ``t_start`` (``ticks`` sorted by ts)."""
    if t_start is None:
        return None
    i = bisect.bisect_right([s.ts for s in ticks], t_start)
    return ticks[i - 1] if i > 0 else None


def finalize_bundle(
    bundle_dir: Path,
    only_keys: set[str] | None = None,
    shards: ShardFolder = ShardFolder.RESPONSES,
    flagged: Counter[str] | None = None,
) -> int:
    """Apply :func:`resources_for` to every record of ``<shards>/*.jsonl`` that has no
    resource fields yet; returns how many records it looked at (``shards``: ``responses`` in an
    eval bundle, ``points`` / ``embed`` in a perf bundle). ``flagged``, when given, counts the
    records finalized now that came out ``host_contended`` or ``throttled`` (keys
    ``contended``, ``throttled``) and how many were finalized (``finalized``).

    Complete and idempotent: every unfinalized record (``n_samples`` null), whichever run
    wrote it, is joined to the host samples now in ``hosts/``; a second call over the same
    samples changes no byte. ``only_keys`` instead recomputes exactly those cell keys. The
    rewrite is :meth:`~touchstone_ray.bundle.ResponseShards.rewrite_unfinalized` (atomic, a
    shard is replaced only when a line changed). Hosts with records but no samples are named
    once in ``bundle.json`` ``resources_unknown`` with the reason (:func:`missing_reasons`).
    Call it after the shard writers are closed.
    """
    layout = Layout(Path(bundle_dir))
    timelines, baselines = load_host_samples(layout.root)
    endpoints, cpu_counts = manifest_endpoints(layout.root)
    empty = HostTimeline([])
    unsampled: set[str] = set()

    def fields_for(rec: dict[str, Any]) -> dict[str, Any]:
        host, model = str(rec.get("host")), str(rec.get("model"))
        timeline = timelines.get(host, empty)
        if not timeline.samples:
            unsampled.add(host)
        base = pick_baseline(baselines.get((host, model), []), rec.get("t_start"))
        fields = resources_for(
            rec,
            timeline,
            base,
            endpoint=endpoints.get(model),
            cpu_count=cpu_counts.get(host),
        )
        if flagged is not None:
            flagged["finalized"] += 1
            flagged["contended"] += bool(fields.get("host_contended"))
            flagged["throttled"] += bool(fields.get("throttled"))
        return fields

    seen = ResponseShards(layout, shards).rewrite_unfinalized(fields_for, only_keys)
    if unsampled:
        _note_missing(layout, unsampled)
    return seen


def missing_reasons(facts: Mapping[str, HostFacts], hosts: Iterable[str]) -> dict[str, str]:
    """Host → one line saying why it has no samples in ``hosts/``, from the manifest's
    ``hosts`` facts: its monitor was lost (``monitoring_lost_reason``), recorded none, or the
    host is not in the manifest."""
    out: dict[str, str] = {}
    for host in sorted(hosts):
        entry = facts.get(host)
        if entry is None:
            out[host] = "no host samples: the host never joined the run (not in bundle.json hosts)"
        elif entry.monitoring_lost_reason:
            out[host] = f"no host samples: monitor lost ({entry.monitoring_lost_reason})"
        else:
            out[host] = "no host samples: its monitor recorded none"
    return out


def _note_missing(layout: Layout, hosts: set[str]) -> None:
    """Merge :func:`missing_reasons` into ``bundle.json`` ``resources_unknown`` (rewritten only
    when it changes). A bundle without a readable manifest is left alone."""
    from touchstone_ray.bundle import edit_manifest
    from touchstone_ray.errors import BundleError

    with contextlib.suppress(BundleError), edit_manifest(layout.manifest) as manifest:
        reasons = {**(manifest.resources_unknown or {}), **missing_reasons(manifest.hosts, hosts)}
        manifest.resources_unknown = dict(sorted(reasons.items()))


def manifest_endpoints(bundle_dir: Path) -> tuple[dict[str, str], dict[str, int]]:
    """From ``bundle.json``: model label → endpoint, and host → logical CPU count.

    A bundle without a readable manifest gives empty maps (no engine figures)."""
    from touchstone_ray.bundle import Bundle
    from touchstone_ray.errors import BundleError
    from touchstone_ray.telemetry.engines import endpoint_of

    try:
        manifest = Bundle(Path(bundle_dir)).read_manifest()
    except (BundleError, OSError):
        return {}, {}
    endpoints = {m.model: endpoint_of(m.model, m.base_url) for m in manifest.models}
    cpus = {h: f.cpu_count for h, f in manifest.hosts.items() if f.cpu_count is not None}
    return endpoints, cpus
