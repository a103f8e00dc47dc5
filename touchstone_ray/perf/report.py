"""``report --bundle <perf bundle>``: ``report.md`` and a self-contained ``report.html``.

Built from ``summary.json`` with the report's document model and writers: TTFT vs context
per model and host (cold, concurrency 1), throughput per user vs total throughput across
concurrency (the Pareto view), TTFT and TPOT vs concurrency with the SLO lines (at the
smallest context), the capacity table and every point as a table. Figures are p50 over the
requests that count (:mod:`touchstone_ray.scoring.aggregates`); a point without any is a gap.
Open-loop points (``--rate``, ``--sweep``) get their own section: latency (TTFT p50 and p99,
E2E p50) and goodput vs offered rate, one line per (model, host), a table per rate point
(p50/p95/p99 of TTFT, TPOT, ITL, E2E, achieved vs offered rate, in flight, dropped,
saturated) and the sweep's result per model and host.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from touchstone_ray.bundle import Layout, Manifest, PerfSettings, read_manifest
from touchstone_ray.doc import Chart, Document, Heading, Para, Table, cell, num_cell
from touchstone_ray.errors import BundleError
from touchstone_ray.perf.bundle import open_perf_bundle
from touchstone_ray.perf.charts import line_svg
from touchstone_ray.storage import atomic_write_text

CHARTS_DIR = "report-charts"

SCHEDULES = {
    "closed-loop": "closed loop (each stream sends when its last request ended)",
    "lockstep": "lockstep (rounds of `concurrency` requests sent together)",
    "open-loop": "open loop (requests sent at the offered rate whatever is in flight)",
}
"""``settings.schedule`` of ``bundle.json`` → how the report names it (a bundle from before the
setting existed ran the closed loop)."""


CAPACITY_HEAD = ("model", "host", "prompt tokens", "users at once", "line")
"""Column heads of the capacity table."""
POINTS_HEAD = (
    "model",
    "host",
    "context",
    "c",
    "n",
    "TTFT p50",
    "TTFT p95",
    "TTFT p99",
    "TPOT p50",
    "E2E p50",
    "CV %",
    "decode tok/s",
    "prefill tok/s",
    "total tok/s",
    "SLO share",
    "lateness p99 (s)",
    "excluded",
)
"""Column heads of the points table."""
RATES_HEAD = (
    "model",
    "host",
    "context",
    "offered req/s",
    "achieved req/s",
    "n",
    "dropped",
    "in flight p50",
    "in flight max",
    "TTFT p50",
    "TTFT p95",
    "TTFT p99",
    "TPOT p50",
    "TPOT p95",
    "TPOT p99",
    "ITL p50",
    "ITL p95",
    "ITL p99",
    "E2E p50",
    "E2E p95",
    "E2E p99",
    "goodput req/s",
    "lateness p99 (s)",
    "saturated",
)
"""Column heads of the open-loop rate points table (times in s)."""
SWEEP_HEAD = (
    "model",
    "host",
    "prompt tokens",
    "c=1 req/s",
    "saturation req/s",
    "sustainable req/s",
    "goodput req/s",
    "line",
)
"""Column heads of the sweep table."""
HEAD_TERMS = {
    "users at once": "Capacity",
    "c": "Under load (c = N)",
    "TTFT p50": "TTFT",
    "TTFT p95": "TTFT",
    "TTFT p99": "TTFT",
    "TPOT p50": "TPOT",
    "E2E p50": "E2E",
    "CV %": "CV % TTFT",
    "decode tok/s": "Decode tok/s",
    "prefill tok/s": "Prefill tok/s",
    "total tok/s": "Total tok/s",
    "SLO share": "SLO share",
    "lateness p99 (s)": "Send lateness",
    "excluded": "Excluded",
    "offered req/s": "Offered rate",
    "achieved req/s": "Achieved rate",
    "dropped": "Dropped",
    "in flight p50": "Requests in flight",
    "in flight max": "Requests in flight",
    "TPOT p95": "TPOT",
    "TPOT p99": "TPOT",
    "ITL p50": "ITL",
    "ITL p95": "ITL",
    "ITL p99": "ITL",
    "E2E p95": "E2E",
    "E2E p99": "E2E",
    "goodput req/s": "Goodput",
    "saturated": "Saturated",
    "c=1 req/s": "Closed-loop throughput",
    "saturation req/s": "Closed-loop throughput",
    "sustainable req/s": "Sustainable rate",
}
"""Column head → the English term of the glossary entry that explains it
(:func:`touchstone_ray.lang.header_tip`'s ``extra``; the web UI's tooltips)."""


def is_perf_bundle(root: Path) -> bool:
    """Whether ``root/bundle.json`` says ``kind: perf`` (``False`` when unreadable)."""
    try:
        return read_manifest(Layout(Path(root)).manifest).kind == "perf"
    except (OSError, BundleError):
        return False


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def _series_name(p: dict[str, Any]) -> str:
    return f"{p['model']} @ {p['host']}"


def build_perf_document(summary: dict[str, Any], manifest: Manifest) -> Document:
    """The perf report as a :class:`Document` (module docstring)."""
    points: list[dict[str, Any]] = summary.get("points", [])
    slo: dict[str, float] = summary.get("slo") or {}
    doc = Document(
        title=f"Perf: {manifest.config_name or ''}",
        lang="en",
        frontmatter={
            "kind": "perf",
            "config": manifest.config_name,
            "simulated": manifest.simulated,
            "slo": slo,
        },
    )
    b = doc.blocks
    b.append(Heading(1, doc.title))
    settings = manifest.settings or PerfSettings()
    b.append(
        Para(
            (
                f"{len(points)} points; {settings.runs} requests per point after a "
                f"discarded warm-up, {settings.output_tokens} output tokens, "
                f"{SCHEDULES.get(settings.schedule or 'closed-loop', 'closed loop')}. "
                "Figures are "
                "p50 over the requests that count (failed, contended and throttled requests are "
                "excluded and counted; prompt-cached ones count for decode only).",
            )
        )
    )
    rate_points = [p for p in points if p.get("offered_rate") is not None]
    points = [p for p in points if p.get("offered_rate") is None]
    cold = [p for p in points if not p["cached"] and p["concurrency"] == 1]
    by_model: dict[str, list[tuple[float, float | None]]] = {}
    for p in sorted(cold, key=lambda p: p["context_target_tokens"]):
        by_model.setdefault(_series_name(p), []).append(
            (p["context_target_tokens"], p["ttft_s"]["p50"])
        )
    b.append(Heading(2, "TTFT vs context"))
    b.append(
        Chart(
            "ttft-context",
            "TTFT vs context",
            line_svg(
                "ttft-context",
                by_model,
                x_label="prompt tokens",
                y_label="TTFT p50 (s)",
                log_x=True,
            ),
        )
    )
    smallest = min((p["context_target_tokens"] for p in points), default=0)
    at_small = sorted(
        (p for p in points if not p["cached"] and p["context_target_tokens"] == smallest),
        key=lambda p: p["concurrency"],
    )
    pareto: dict[str, list[tuple[float, float | None]]] = {}
    labels: dict[str, list[str]] = {}
    ttft_c: dict[str, list[tuple[float, float | None]]] = {}
    tpot_c: dict[str, list[tuple[float, float | None]]] = {}
    for p in at_small:
        name = _series_name(p)
        if p["total_tps"] is not None:
            pareto.setdefault(name, []).append((p["total_tps"], p["decode_tps_median"]))
            labels.setdefault(name, []).append(f"c={p['concurrency']}")
        ttft_c.setdefault(name, []).append((p["concurrency"], p["ttft_s"]["p50"]))
        tpot_c.setdefault(name, []).append((p["concurrency"], p["tpot_s"]["p50"]))
    b.append(Heading(2, "Throughput per user vs total throughput"))
    b.append(
        Chart(
            "pareto",
            "Per-user vs total throughput",
            line_svg(
                "pareto",
                pareto,
                x_label="total tok/s (all streams)",
                y_label="decode tok/s per user (p50)",
                annotate=labels,
            ),
            caption=f"at {smallest} prompt tokens; each point is one concurrency",
        )
    )
    b.append(Heading(2, "TTFT and TPOT vs concurrency"))
    for metric, series in (("ttft", ttft_c), ("tpot", tpot_c)):
        name, upper = f"{metric}-concurrency", metric.upper()
        svg = line_svg(
            name,
            series,
            x_label="concurrency",
            y_label=f"{upper} p50 (s)",
            hline=slo.get(metric),
            hline_label=f"SLO {upper}",
            log_x=True,
        )
        b.append(Chart(name, f"{upper} vs concurrency", svg))
    capacity = summary.get("capacity") or {}
    if capacity:
        b.append(Heading(2, "Capacity"))
        b.append(
            Table(
                CAPACITY_HEAD,
                tuple(
                    (
                        cell(c["model"]),
                        cell(c["host"]),
                        num_cell(str(c["context"]), c["context"]),
                        num_cell(str(c["capacity"]), c["capacity"]),
                        cell(c["line"]),
                    )
                    for c in capacity.values()
                ),
                sortable=True,
                css_id="capacity",
            )
        )
    if rate_points or summary.get("sweep"):
        _open_loop_blocks(b, rate_points, summary.get("sweep") or {}, slo)
    b.append(Heading(2, "Points"))
    rows = []
    for p in points:
        rows.append(
            (
                cell(p["model"]),
                cell(p["host"]),
                cell(p["context"]),
                num_cell(str(p["concurrency"]), p["concurrency"]),
                num_cell(str(p["n"]), p["n"]),
                *(
                    num_cell(_fmt(p[k][q]), p[k][q])
                    for k, q in (
                        ("ttft_s", "p50"),
                        ("ttft_s", "p95"),
                        ("ttft_s", "p99"),
                        ("tpot_s", "p50"),
                        ("e2e_s", "p50"),
                    )
                ),
                num_cell(_fmt(p["ttft_cv_pct"]), p["ttft_cv_pct"]),
                num_cell(_fmt(p["decode_tps_median"]), p["decode_tps_median"]),
                num_cell(_fmt(p["prefill_tps_median"]), p["prefill_tps_median"]),
                num_cell(_fmt(p["total_tps"]), p["total_tps"]),
                num_cell(_fmt(p["slo_share"]), p["slo_share"]),
                num_cell(_fmt(p["send_lateness_s"]["p99"]), p["send_lateness_s"]["p99"]),
                cell(", ".join(f"{k} {n}" for k, n in p["n_excluded"].items()) or "—"),
            )
        )
    b.append(Table(POINTS_HEAD, tuple(rows), sortable=True, css_id="points"))
    return doc


def _q(p: dict[str, Any], key: str, q: str) -> Any:
    return (p.get(key) or {}).get(q)


def _open_loop_blocks(
    b: list[Any],
    rate_points: list[dict[str, Any]],
    sweep: dict[str, Any],
    slo: dict[str, float],
) -> None:
    """The open-loop section: charts vs offered rate, the sweep table, the rate points."""
    b.append(Heading(2, "Open-loop rates"))
    b.append(
        Para(
            (
                "Requests sent at the offered rate whatever is in flight (constant or seeded "
                "Poisson arrivals). A point is saturated when its in-flight count kept growing "
                "(the least-squares slope over the last 3 s kept its 95 % interval above zero "
                "for 3 s) or a request was dropped at --max-in-flight; it stopped early and its "
                "figures are kept.",
            )
        )
    )
    ordered = sorted(rate_points, key=lambda p: float(p["offered_rate"]))
    for key, q, label in (
        ("ttft_s", "p50", "TTFT"),
        ("ttft_s", "p99", "TTFT"),
        ("e2e_s", "p50", "E2E"),
    ):
        series: dict[str, list[tuple[float, float | None]]] = {}
        for p in ordered:
            series.setdefault(_series_name(p), []).append((p["offered_rate"], _q(p, key, q)))
        name = f"{key.split('_')[0]}-{q}-rate"
        svg = line_svg(
            name,
            series,
            x_label="offered rate (requests/s)",
            y_label=f"{label} {q} (s)",
            hline=slo.get(key.split("_")[0]),
            hline_label=f"SLO {label}",
        )
        b.append(Chart(name, f"{label} {q} vs offered rate", svg))
    good: dict[str, list[tuple[float, float | None]]] = {}
    for p in ordered:
        value = p.get("goodput_rps") if slo else p.get("achieved_rate")
        good.setdefault(_series_name(p), []).append((p["offered_rate"], value))
    caption = (
        "requests meeting every SLO target per s"
        if slo
        else "no --slo: achieved rate (requests sent per s)"
    )
    b.append(
        Chart(
            "goodput-rate",
            "Goodput vs offered rate",
            line_svg(
                "goodput-rate",
                good,
                x_label="offered rate (requests/s)",
                y_label="goodput (requests/s)" if slo else "achieved rate (requests/s)",
            ),
            caption=caption,
        )
    )
    if sweep:
        b.append(Heading(3, "Sweep"))
        rows = []
        for e in sweep.values():
            closed = e.get("closed_loop_rps") or {}
            c1 = closed.get("1")
            sat = closed.get(str(e.get("saturation_concurrency")))
            rows.append(
                (
                    cell(e["model"]),
                    cell(e["host"]),
                    num_cell(str(e["context"]), e["context"]),
                    num_cell(_fmt(c1), c1),
                    num_cell(_fmt(sat), sat),
                    num_cell(_fmt(e.get("sustainable_rate")), e.get("sustainable_rate")),
                    num_cell(_fmt(e.get("goodput_rps")), e.get("goodput_rps")),
                    cell(e["line"]),
                )
            )
        b.append(Table(SWEEP_HEAD, tuple(rows), sortable=True, css_id="sweep"))
    rate_rows: list[tuple[Any, ...]] = []
    for p in ordered:
        figures = [
            num_cell(_fmt(_q(p, k, q)), _q(p, k, q))
            for k in ("ttft_s", "tpot_s", "itl_s", "e2e_s")
            for q in ("p50", "p95", "p99")
        ]
        lateness = _q(p, "send_lateness_s", "p99")
        rate_rows.append(
            (
                cell(p["model"]),
                cell(p["host"]),
                cell(p["context"]),
                num_cell(_fmt(p["offered_rate"]), p["offered_rate"]),
                num_cell(_fmt(p.get("achieved_rate")), p.get("achieved_rate")),
                num_cell(str(p["n"]), p["n"]),
                num_cell(str(p.get("dropped", 0)), p.get("dropped", 0)),
                num_cell(_fmt(_q(p, "in_flight", "p50")), _q(p, "in_flight", "p50")),
                num_cell(_fmt(_q(p, "in_flight", "max")), _q(p, "in_flight", "max")),
                *figures,
                num_cell(_fmt(p.get("goodput_rps")), p.get("goodput_rps")),
                num_cell(_fmt(lateness), lateness),
                cell(f"yes: {p.get('saturation_reason')}" if p.get("saturated") else "no"),
            )
        )
    b.append(Table(RATES_HEAD, tuple(rate_rows), sortable=True, css_id="rates"))


def perf_document(root: Path) -> Document:
    """The report document of the perf bundle ``root`` (the report files and the UI's result
    page render it). Raises BundleError for a bundle without a readable ``summary.json``."""
    bundle = open_perf_bundle(Path(root))
    try:
        summary = json.loads(bundle.layout.summary.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(
            f"{bundle.root}: summary.json is missing or unreadable ({exc}); "
            "resume the perf run to write it"
        ) from None
    return build_perf_document(summary, bundle.manifest())


def write_perf_report(root: Path, formats: Collection[str]) -> list[Path]:
    """Write ``report.md`` (charts in ``report-charts/``) and/or ``report.html`` into the
    perf bundle ``root``; returns the paths. Raises BundleError without ``summary.json``."""
    from touchstone_ray.doc import render_html, render_markdown

    bundle = open_perf_bundle(Path(root))
    doc = perf_document(bundle.root)
    written: list[Path] = []
    if "md" in formats:
        charts = bundle.layout.charts_dir(CHARTS_DIR)
        charts.mkdir(exist_ok=True)
        for block in doc.blocks:
            if isinstance(block, Chart):
                atomic_write_text(charts / f"{block.name}.svg", block.svg)
        written.append(bundle.layout.report("md"))
        atomic_write_text(written[-1], render_markdown(doc, charts_dir=CHARTS_DIR))
    if "html" in formats:
        written.append(bundle.layout.report("html"))
        atomic_write_text(written[-1], render_html(doc))
    return written
