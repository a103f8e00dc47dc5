"""The live page (issue item 2): per host a progress bar, cells in flight, ETA, failures with
their ``error_kind``, and sparklines of host RAM, GPU memory and engine RSS, pushed by
server-sent events whenever the bundle's files change.

Everything is read from the bundle through :func:`touchstone_ray.report.load_report_data`
(unjudged): planned cells per model are ``len(variants) × pack.cells_per_variant`` (Σ
repeats); done and failed come from the de-duplicated response shards (an ok record wins);
a host's open ``model_start`` phase (``events.jsonl``) is the model in flight, with at most
``min(concurrency, cells left)`` cells in flight. ETA (s) = cells left ÷ (cells finished ÷
seconds since the host's first ``model_start``), an estimate from the rate so far. The
sparklines plot ``sys_used_mb``, the sum of the GPUs' ``mem_used_mb`` and the sum of the
engines' ``rss_mb`` of ``hosts/<host>.jsonl`` (MB); a series never measured is left out.

A perf bundle (``kind: perf``) has its own reader, :mod:`touchstone_ray.ui.live_perf`
(requests instead of cells), and a tools bundle (``kind: tools``) its own,
:mod:`touchstone_ray.ui.live_tools` (its cells); both are shown with the same cards.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from touchstone_ray.bundle import Bundle
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.lang import header_tip, ui_labels
from touchstone_ray.report import ReportData, load_report_data
from touchstone_ray.ui._live_state import (
    HostProgress,
    LiveState,
    eta_text,
    host_series,
    run_eta_s,
)
from touchstone_ray.ui._page import e
from touchstone_ray.ui.live_perf import perf_live_state
from touchstone_ray.ui.live_tools import tools_live_state

__all__ = [
    "HostProgress",
    "LiveState",
    "host_series",
    "live_body",
    "live_state",
    "recorded_dashboard",
    "run_eta_s",
    "sparkline",
]


def _host_of(data: ReportData) -> dict[str, str]:
    """Model → host: the manifest's pin, else the host whose ``model_start`` ran it."""
    ran_on = {p.model: host for host, phases in data.phases.items() for p in phases}
    return {
        m.model: str(m.host or ran_on.get(m.model) or "(not started)") for m in data.manifest.models
    }


def live_state(root: Path, now: float | None = None) -> LiveState:
    """The live view of the bundle at ``root`` (a perf bundle's:
    :func:`~touchstone_ray.ui.live_perf.perf_live_state`, a tools bundle's:
    :func:`~touchstone_ray.ui.live_tools.tools_live_state`). Raises
    :class:`~touchstone_ray.errors.BundleError` for an unreadable bundle."""
    now = time.time() if now is None else now
    kind = Bundle(root).kind()
    if kind == "perf":
        return perf_live_state(root, now)
    if kind == "tools":
        return tools_live_state(root, now)
    data = load_report_data(root, judged=False)
    state = Bundle(root).run_state(now)
    n_variants = len(data.manifest.variants or data.pack.prompt_variants)
    per_model = n_variants * data.pack.cells_per_variant
    host_of = _host_of(data)
    hosts: dict[str, HostProgress] = {}

    def host(name: str) -> HostProgress:
        return hosts.setdefault(name, HostProgress(name))

    for name in host_of.values():
        host(name).planned += per_model
    run_start = data.manifest.run_started_at()
    done_by_model: Counter[str] = Counter()
    done_this_run: Counter[str] = Counter()
    for r in data.responses:
        hp = host(host_of.get(r.model, r.host))
        done_by_model[r.model] += 1
        if r.t_end is not None and r.t_end >= run_start:
            done_this_run[hp.host] += 1
        if r.ok:
            hp.ok += 1
        else:
            hp.failed += 1
            kind = r.error_kind or "unknown"
            hp.failures_by_kind[kind] = hp.failures_by_kind.get(kind, 0) + 1
            hp.last_failures.append(
                {"model": r.model, "key": r.key, "error_kind": kind, "error": r.error}
            )
    for name, phases in data.phases.items():
        hp = host(name)
        open_ = [p for p in phases if p.t_end is None]
        if open_ and state == "running":
            model = open_[-1].model
            left = max(per_model - done_by_model[model], 0)
            hp.current_model = model
            hp.in_flight = min(data.concurrency(model) or 1, left)
        if state == "running":
            left = max(hp.planned - hp.ok - hp.failed, 0)
            first = next((p.t_start for p in phases if p.t_start >= run_start), None)
            hp.eta_s = run_eta_s(left, done_this_run[name], first, now)
    for name, samples in data.samples.items():
        host(name).series = host_series(samples)
    for hp in hosts.values():
        hp.last_failures = hp.last_failures[-5:]
    return LiveState(state, [hosts[k] for k in sorted(hosts)], now)


def recorded_dashboard(root: Path) -> str | None:
    """The Ray dashboard of the cluster the bundle's run used, as ``bundle.json`` recorded it
    (``ray.dashboard_url``); ``None`` when it was off, not recorded, not an ``http(s)`` URL
    (bundle text is untrusted: no ``javascript:`` link), or the manifest is unreadable."""
    try:
        ray_info = Bundle(root).read_manifest().ray
    except TouchstoneError:
        return None
    url = ray_info.dashboard_url if ray_info else None
    if url is None or urlsplit(url).scheme not in ("http", "https"):
        return None
    return url


def sparkline(values: list[float], width: int = 160, height: int = 28) -> str:
    """An inline SVG polyline of ``values`` scaled to its own min..max."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v - lo) / span * (height - 4):.1f}"
        for i, v in enumerate(values)
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<polyline fill="none" stroke="#2f5fb3" stroke-width="1.5" points="{points}"/></svg>'
    )


SERIES_LABELS = {"ram": "series_ram", "gpu": "series_gpu", "engine": "series_engine"}
"""Sparkline series → its label's key in :func:`touchstone_ray.lang.ui_labels`."""


ERROR_CHARS = 160
"""A failure's error text on the card is cut to this many characters (the result page and
the shard keep it whole)."""


def _short(text: object) -> str | None:
    if text is None:
        return None
    value = str(text)
    return value if len(value) <= ERROR_CHARS else value[: ERROR_CHARS - 1] + "…"


def _tipped(lang: str, key: str) -> str:
    """The label ``key`` with the glossary's tooltip of the figure it names."""
    text = ui_labels(lang)[key]
    return f'<span title="{e(header_tip(lang, text))}">{e(text)}</span>'


def _card(hp: HostProgress, lang: str) -> str:
    u = ui_labels(lang)
    unit = u.get(f"unit_{hp.unit}", hp.unit)
    finished = hp.ok + hp.failed
    pct = 100.0 * finished / hp.planned if hp.planned else 0.0
    kinds = ", ".join(f"{k} × {n}" for k, n in sorted(hp.failures_by_kind.items())) or u["none"]
    failures = "".join(
        f"<li><code>{e(f['key'])}</code> {e(f['error_kind'])}: {e(_short(f['error']))}</li>"
        for f in hp.last_failures
    )
    sparks = "".join(
        f"<div>{e(u[SERIES_LABELS[k]])}: {v[-1]:.0f} MB{sparkline(v)}</div>"
        for k, v in hp.series.items()
    )
    in_flight = "—" if hp.in_flight is None else hp.in_flight
    model = f" · {e(u['now'])} {e(hp.current_model)}" if hp.current_model else ""
    if hp.current_point:
        model += f' {e(u["at"])} <span class="point">{e(hp.current_point)}</span>'
    extra = (
        f'<div class="extra">{e(u["beyond_plan"].format(n=hp.extra, unit=unit))}</div>'
        if hp.extra
        else ""
    )
    failed = f'<span class="failed">{e(u["n_failed"].format(n=hp.failed))}</span>'
    progress = e(u["progress"]).format(
        done=finished, planned=hp.planned, unit=e(unit), ok=hp.ok, failed=failed
    )
    return (
        f'<div class="card host-card" data-host="{e(hp.host)}"><h3>{e(hp.host)}</h3>'
        f'<div class="bar"><span style="width:{pct:.1f}%"></span></div>'
        f'<div class="progress">{progress}</div>'
        f"{extra}<div>{_tipped(lang, 'in_flight')}: "
        f'<span class="in-flight">{in_flight}</span>{model} · {_tipped(lang, "eta")} '
        f'<span class="eta">{eta_text(hp.eta_s)}</span></div>'
        f'<div class="failure-kinds">{e(u["failures"])}: {e(kinds)}</div>'
        f'<ul class="failures">{failures}</ul>{sparks}</div>'
    )


def live_body(live: LiveState, lang: str = "en") -> str:
    """The HTML the live page shows (and each server-sent event replaces) in ``lang``: the
    state badge and one card per host."""
    u = ui_labels(lang)
    cards = "".join(_card(h, lang) for h in live.hosts)
    cards = cards or f'<p class="muted">{e(u["no_host"])}</p>'
    stamp = time.strftime("%H:%M:%S", time.localtime(live.updated_at))
    state = u.get(f"state_{live.state}", live.state)
    return (
        f'<p>{e(u["live_status"])} <span class="badge s-{e(live.state)}" id="live-state">'
        f'{e(state)}</span> <span class="muted">{e(u["updated"].format(time=stamp))}</span></p>'
        f'<div class="cards">{cards}</div>'
    )
