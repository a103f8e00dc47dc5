"""The live view of a tools bundle (SPEC §7c): per host cells done of planned, the model in
flight, ETA, failures by ``error_kind`` and the host sparklines, in the eval view's shapes
(:class:`~touchstone_ray.ui._live_state.HostProgress`, unit ``cells``), so the same cards and
event stream serve it.

- **planned**: per model Σ ``repeats`` of the items the run selected
  (:func:`~touchstone_ray.scoring.tools.selected_items`), counted on the model's host
  (``bundle.json`` ``models[].host``; a model without one on the host its records name, else
  ``(not started)``).
- **done / failed**: the de-duplicated records of ``cells/*.jsonl`` (read-only, a torn last
  line skipped): ``ok`` true is done, ``ok`` false failed (a transport error the run will
  retry on ``--resume``), each failure counted by ``error_kind``.
- **in flight**: the model whose ``model_start`` in ``events.jsonl`` is its host's last model
  event (no ``model_done`` / ``model_failed`` after it) while the run is ``running``, with
  ``min(concurrency, its cells left)`` cells in flight.
- **ETA** (s) = cells left ÷ (cells ended this run ÷ seconds since the host's first
  ``model_start`` of this run), as in the eval view.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from touchstone_ray.bundle import Bundle, Layout, read_events, read_host_samples
from touchstone_ray.scoring.tools import load_tools_bundle
from touchstone_ray.ui._live_state import HostProgress, LiveState, host_series, run_eta_s

__all__ = ["MODEL_EVENTS", "tools_live_state"]

MODEL_EVENTS = ("model_start", "model_done", "model_failed")
"""The ``events.jsonl`` events that open or close a model's phase on a host."""


def _phases(root: Path, run_start: float) -> tuple[dict[str, str | None], dict[str, float]]:
    """Host → the model whose phase is open (``None``: none); host → epoch s of its first
    ``model_start`` at or after ``run_start``."""
    open_: dict[str, str | None] = {}
    first: dict[str, float] = {}
    for ev in read_events(Layout(root)):
        kind, host, model, ts = ev.get("event"), ev.get("host"), ev.get("model"), ev.get("ts")
        if kind not in MODEL_EVENTS or not isinstance(host, str) or not isinstance(model, str):
            continue
        if kind == "model_start":
            open_[host] = model
            if isinstance(ts, int | float) and ts >= run_start:
                first.setdefault(host, float(ts))
        elif open_.get(host) == model:
            open_[host] = None
    return open_, first


def tools_live_state(root: Path, now: float | None = None) -> LiveState:
    """The live view of the tools bundle at ``root`` (module docstring). Raises
    :class:`~touchstone_ray.errors.BundleError` for a folder that is not a readable tools
    bundle."""
    now = time.time() if now is None else now
    data = load_tools_bundle(root)
    state = Bundle(root).run_state(now)
    per_model = sum(it.repeats for it in data.items)
    ran_on = {r.model: r.host for r in data.records}
    host_of = {
        m.model: str(m.host or ran_on.get(m.model) or "(not started)") for m in data.manifest.models
    }
    hosts: dict[str, HostProgress] = {}

    def host(name: str) -> HostProgress:
        return hosts.setdefault(name, HostProgress(name, unit="cells"))

    for name in host_of.values():
        host(name).planned += per_model
    run_start = data.manifest.run_started_at()
    done_by_model: Counter[str] = Counter()
    ended_this_run: Counter[str] = Counter()
    for r in data.records:
        hp = host(host_of.get(r.model, r.host))
        done_by_model[r.model] += 1
        if r.t_end is not None and r.t_end >= run_start:
            ended_this_run[hp.host] += 1
        if r.ok:
            hp.ok += 1
            continue
        hp.failed += 1
        kind = r.error_kind or "unknown"
        hp.failures_by_kind[kind] = hp.failures_by_kind.get(kind, 0) + 1
        hp.last_failures.append(
            {"model": r.model, "key": r.key, "error_kind": kind, "error": r.error}
        )
    concurrency = data.manifest.model_concurrency()
    open_, first = _phases(root, run_start)
    for name, model in open_.items():
        if model is None or state != "running":
            continue
        hp = host(name)
        hp.current_model = model
        hp.in_flight = min(concurrency.get(model, 1), max(per_model - done_by_model[model], 0))
    for hp in hosts.values():
        if state == "running":
            left = max(hp.planned - hp.ok - hp.failed, 0)
            hp.eta_s = run_eta_s(left, ended_this_run[hp.host], first.get(hp.host), now)
        hp.last_failures = hp.last_failures[-5:]
    for name, samples in read_host_samples(Layout(root)).items():
        host(name).series = host_series(samples)
    return LiveState(state, [hosts[k] for k in sorted(hosts)], now)
