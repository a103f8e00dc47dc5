"""The report's charts as deterministic SVG text (matplotlib, no pyplot, no global state).

Each function takes plain numbers and returns one ``<svg …>`` element as text: no XML prolog,
no metadata, ids prefixed with the chart name (several charts share one HTML page), text kept
as ``<text>`` (``svg.fonttype: none``) and ``svg.hashsalt`` fixed, so the same input gives
byte-identical output. Figures are drawn on :class:`matplotlib.figure.Figure` directly (the
SVG canvas; no GUI backend is ever selected).

Units: quality and pass rate in %, throughput in tokens/s, TTFT in s, memory in GB (1024 MB),
time in s since the host's first sample.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "PALETTE",
    "ForestItem",
    "MemorySeries",
    "PassPoint",
    "QsPoint",
    "empty_axes",
    "figure_svg",
    "forest_svg",
    "heatmap_svg",
    "memory_svg",
    "pareto_front",
    "pass_speed_svg",
    "plain_text",
    "quality_speed_svg",
    "svg_figure",
    "ttft_svg",
]

_RC: dict[Any, Any] = {
    "svg.hashsalt": "touchstone-report",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "path.simplify": True,
}
PALETTE = ("#3366cc", "#dc8a00", "#2ca02c", "#9467bd", "#d62728", "#17becf", "#8c564b")
"""Series colours, in order (hex RGB)."""


@contextlib.contextmanager
def svg_figure(
    width: float, height: float, rc: Mapping[str, Any] | None = None
) -> Iterator[Figure]:
    """A new SVG-ready figure (inches) inside the fixed rc settings; matplotlib is imported
    here, so importing this module stays cheap."""
    import matplotlib
    from matplotlib.figure import Figure

    settings: dict[Any, Any] = {**_RC, **(rc or {})}
    with matplotlib.rc_context(settings):
        yield Figure(figsize=(width, height))


def plain_text(text: str) -> str:
    """Text safe from matplotlib's mathtext (``$`` starts math)."""
    return text.replace("$", r"\$")


def figure_svg(fig: Figure, name: str) -> str:
    """``fig`` as inline SVG text without metadata, every id prefixed with ``name-`` so several
    charts can share one HTML page."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{name}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{name}-\1)", svg)
    svg = re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{name}-\1"', svg)
    return svg.strip() + "\n"


def empty_axes(ax: object, text: str) -> None:
    """Blank ``ax`` (a matplotlib ``Axes``) with ``text`` in its centre: a chart without data."""
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    ax.text(0.5, 0.5, plain_text(text), ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


@dataclass(frozen=True)
class QsPoint:
    """One (model, variant) in the quality-vs-speed chart."""

    label: str
    quality_pct: float
    decode_tps: float
    delta_gb: float | None
    """Model delta (GB); bubble area grows with it; ``None`` or ≤ 0 draws the smallest."""
    ko_passed: bool


def pareto_front(points: Sequence[QsPoint]) -> list[QsPoint]:
    """Points no other point beats on both quality and decode tok/s, by rising tok/s."""
    front = [
        p
        for p in points
        if not any(
            (q.quality_pct >= p.quality_pct and q.decode_tps >= p.decode_tps)
            and (q.quality_pct > p.quality_pct or q.decode_tps > p.decode_tps)
            for q in points
        )
    ]
    return sorted(front, key=lambda p: (p.decode_tps, -p.quality_pct, p.label))


def quality_speed_svg(
    points: Sequence[QsPoint], *, labels: Mapping[str, str], chart_id: str = "quality-speed"
) -> str:
    """Quality % (y) against median decode tok/s (x); bubble size = model delta GB; points
    numbered and named in a legend (no overlapping labels); the Pareto front outlined, starred
    and joined by a dashed line; K.-o.-failed points hollow. ``labels``: ``x``, ``y``,
    ``pareto``, ``empty``; ``chart_id`` prefixes the SVG's element ids (two charts in one
    page must differ)."""
    with svg_figure(8.0, 4.2) as fig:
        ax = fig.add_subplot()
        if not points:
            empty_axes(ax, labels["empty"])
            return figure_svg(fig, chart_id)
        deltas = [p.delta_gb for p in points if p.delta_gb is not None and p.delta_gb > 0]
        top = max(deltas) if deltas else 1.0
        front = pareto_front(points)
        if len(front) > 1:
            ax.plot(
                [p.decode_tps for p in front],
                [p.quality_pct for p in front],
                color="#555555",
                linestyle="--",
                linewidth=1,
                zorder=1,
            )
        on_front = {id(p) for p in front}
        x_tol = max(p.decode_tps for p in points) * 0.03
        for i, p in enumerate(points, start=1):
            near = sum(
                abs(q.decode_tps - p.decode_tps) <= x_tol
                and abs(q.quality_pct - p.quality_pct) <= 2.0
                for q in points[: i - 1]
            )
            size = 80.0 + 600.0 * max(p.delta_gb or 0.0, 0.0) / top
            color = PALETTE[(i - 1) % len(PALETTE)]
            mark = "" if p.ko_passed else " (K.-o.)"
            delta = f", Δ {p.delta_gb:.2f} GB" if p.delta_gb is not None else ""
            delta = delta.replace("Δ -0.00", "Δ 0.00")
            star = " ★" if id(p) in on_front else ""
            ax.scatter(
                [p.decode_tps],
                [p.quality_pct],
                s=size,
                facecolors=color if p.ko_passed else "none",
                edgecolors="#222222" if id(p) in on_front else color,
                linewidths=1.5,
                alpha=0.7,
                zorder=2,
                label=plain_text(f"{i}  {p.label}{mark}{delta}{star}"),
            )
            ax.annotate(
                str(i),
                (p.decode_tps, p.quality_pct),
                textcoords="offset points",
                xytext=(7 + 9 * near, 5),
                fontsize=8,
                fontweight="bold",
            )
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            fontsize=7.5,
            title=plain_text(f"★ = {labels['pareto']}"),
            title_fontsize=7.5,
            markerscale=0.5,
            frameon=False,
        )
        ax.set_xlabel(plain_text(labels["x"]))
        ax.set_ylabel(plain_text(labels["y"]))
        lo = min(p.quality_pct for p in points)
        ax.set_ylim(max(0.0, min(lo - 10.0, 50.0)), 102.0)
        ax.set_xlim(0.0, max(p.decode_tps for p in points) * 1.15)
        fig.tight_layout()
        return figure_svg(fig, chart_id)


def ttft_svg(groups: Mapping[str, Sequence[float]], *, labels: Mapping[str, str]) -> str:
    """Box plot of TTFT (s) per model with every value as a jittered dot (fixed seed).
    ``labels``: ``y``, ``empty``."""
    names = [n for n, v in groups.items() if v]
    with svg_figure(7.0, 1.2 + 0.5 * max(len(names), 1)) as fig:
        ax = fig.add_subplot()
        if not names:
            empty_axes(ax, labels["empty"])
            return figure_svg(fig, "ttft")
        data = [list(groups[n]) for n in names]
        ax.boxplot(data, orientation="horizontal", widths=0.5, showfliers=False)
        rng = np.random.default_rng(7)
        for i, values in enumerate(data, start=1):
            jitter = rng.uniform(-0.15, 0.15, size=len(values))
            ax.scatter(values, i + jitter, s=8, alpha=0.5, color=PALETTE[(i - 1) % 7])
        ax.set_yticks(range(1, len(names) + 1), [plain_text(n) for n in names])
        ax.set_xlabel(plain_text(labels["y"]))
        ax.set_xlim(left=0.0)
        fig.tight_layout()
        return figure_svg(fig, "ttft")


@dataclass(frozen=True)
class MemorySeries:
    """One host's timeline: times (s since ``t0``), RAM and GPU memory (GB, ``None`` gaps)."""

    t_s: Sequence[float]
    ram_gb: Sequence[float | None]
    gpu_gb: Sequence[float | None]
    phases: Sequence[tuple[str, float, float]]
    """(model, start s, end s)."""
    throttled_s: Sequence[float]
    pressure_s: Sequence[float]
    """Times with memory pressure ``warn`` or ``critical``."""
    engines_gb: Mapping[str, Sequence[float | None]] = field(default_factory=dict)
    """Per endpoint, its engine process tree's RSS (GB) at each time (``None`` gaps)."""


def memory_svg(host: str, series: MemorySeries, *, labels: Mapping[str, str]) -> str:
    """RAM and GPU memory (GB) over time on ``host``, each engine's RSS as its own dashed line,
    each model's phase shaded, throttling (red ▼) and memory pressure (orange ▲) marked.
    ``labels``: ``x``, ``ram``, ``gpu``, ``throttled``, ``pressure``, ``empty``, optional
    ``engine``."""
    name = "memory-" + re.sub(r"[^A-Za-z0-9_-]+", "_", host)
    with svg_figure(7.0, 3.4) as fig:
        ax = fig.add_subplot()
        if not series.t_s:
            empty_axes(ax, labels["empty"])
            return figure_svg(fig, name)
        for i, (model, t0, t1) in enumerate(series.phases):
            color = PALETTE[i % len(PALETTE)]
            ax.axvspan(t0, t1, color=color, alpha=0.12, linewidth=0)
            ax.text(
                (t0 + t1) / 2,
                1.0,
                plain_text(model),
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=7,
                color=color,
            )

        def line(values: Sequence[float | None]) -> list[float]:
            return [np.nan if v is None else v for v in values]

        ram = line(series.ram_gb)
        ax.plot(series.t_s, ram, color="#3366cc", linewidth=1.2, label=plain_text(labels["ram"]))
        if any(v is not None for v in series.gpu_gb):
            gpu = line(series.gpu_gb)
            ax.plot(
                series.t_s, gpu, color="#2ca02c", linewidth=1.2, label=plain_text(labels["gpu"])
            )
        engine_lines = [line(v) for v in series.engines_gb.values()]
        for i, (endpoint, values) in enumerate(zip(series.engines_gb, engine_lines, strict=True)):
            name = labels.get("engine", "engine") + (
                f" {endpoint}" if len(series.engines_gb) > 1 else ""
            )
            ax.plot(
                series.t_s,
                values,
                color=PALETTE[(i + 3) % len(PALETTE)],
                linewidth=1.0,
                linestyle="--",
                label=plain_text(name),
            )
        top = np.nanmax([*ram, *line(series.gpu_gb), *(v for e in engine_lines for v in e), 0.0])
        if series.throttled_s:
            ax.scatter(
                series.throttled_s,
                [top * 1.04] * len(series.throttled_s),
                marker="v",
                color="#d62728",
                s=18,
                label=plain_text(labels["throttled"]),
            )
        if series.pressure_s:
            ax.scatter(
                series.pressure_s,
                [top * 1.08] * len(series.pressure_s),
                marker="^",
                color="#dc8a00",
                s=18,
                label=plain_text(labels["pressure"]),
            )
        ax.set_ylim(0.0, float(top) * 1.15 if top > 0 else 1.0)
        ax.set_xlabel(plain_text(labels["x"]))
        ax.set_ylabel("GB")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        return figure_svg(fig, name)


def heatmap_svg(
    rows: Sequence[str],
    cols: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    labels: Mapping[str, str],
) -> str:
    """Mean answer score (1..5) per row (model / variant) and category, annotated; missing
    cells grey. ``labels``: ``empty``."""
    with svg_figure(7.0, 1.0 + 0.45 * max(len(rows), 1), rc={"axes.grid": False}) as fig:
        ax = fig.add_subplot()
        if not rows or not cols:
            empty_axes(ax, labels["empty"])
            return figure_svg(fig, "heatmap")
        grid = np.ma.masked_invalid(
            np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
        )
        from matplotlib import colormaps

        cmap = colormaps["RdYlGn"].with_extremes(bad="#dddddd")
        image = ax.imshow(grid, cmap=cmap, vmin=1.0, vmax=5.0, aspect="auto")
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                ax.text(j, i, "–" if v is None else f"{v:.2f}", ha="center", va="center")
        ax.set_xticks(range(len(cols)), [plain_text(c) for c in cols])
        ax.set_yticks(range(len(rows)), [plain_text(r) for r in rows])
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
        fig.tight_layout()
        return figure_svg(fig, "heatmap")


@dataclass(frozen=True)
class ForestItem:
    """One variant comparison: mean difference B − A (score points) with its 95 % CI."""

    label: str
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    confound: bool = False


def forest_svg(items: Sequence[ForestItem], *, labels: Mapping[str, str]) -> str:
    """Forest plot of B − A per model with CI whiskers and a zero line; a length confound
    draws the point hollow. ``labels``: ``x``, ``empty``."""
    shown = [it for it in items if it.diff is not None]
    with svg_figure(7.0, 1.3 + 0.45 * max(len(shown), 1)) as fig:
        ax = fig.add_subplot()
        if not shown:
            empty_axes(ax, labels["empty"])
            return figure_svg(fig, "forest")
        ax.axvline(0.0, color="#555555", linewidth=1)
        for i, it in enumerate(shown):
            assert it.diff is not None
            lo = it.diff - it.ci_low if it.ci_low is not None else 0.0
            hi = it.ci_high - it.diff if it.ci_high is not None else 0.0
            color = PALETTE[i % len(PALETTE)]
            ax.errorbar(
                [it.diff],
                [i],
                xerr=[[lo], [hi]],
                fmt="o",
                color=color,
                mfc="none" if it.confound else color,
                capsize=4,
            )
        ax.set_yticks(range(len(shown)), [plain_text(it.label) for it in shown])
        ax.invert_yaxis()
        bound = max(
            [abs(v) for it in shown for v in (it.diff, it.ci_low, it.ci_high) if v is not None]
            + [0.5]
        )
        ax.set_xlim(-bound * 1.2, bound * 1.2)
        ax.set_xlabel(plain_text(labels["x"]))
        fig.tight_layout()
        return figure_svg(fig, "forest")


@dataclass(frozen=True)
class PassPoint:
    """One model in the tools bench's pass-rate-vs-speed chart."""

    label: str
    pass_pct: float
    """Cells passed of those scored (%)."""
    ci_low_pct: float | None
    """Lower bound of its 95 % interval (%)."""
    ci_high_pct: float | None
    """Upper bound of its 95 % interval (%)."""
    run_s: float | None
    """Median time per cell (s); ``None`` leaves the point out of the left panel."""
    decode_tps: float | None
    """Median decode speed (tokens/s); ``None`` leaves it out of the right panel."""


def pass_speed_svg(
    points: Sequence[PassPoint], *, labels: Mapping[str, str], chart_id: str = "pass-speed"
) -> str:
    """Pass rate % (y, with its interval as a whisker) against the median time per cell (s,
    left panel) and the median decode speed (tokens/s, right panel), one numbered point per
    model named in a legend. ``labels``: ``x_run``, ``x_decode``, ``y``, ``empty``."""
    with svg_figure(8.5, 3.6) as fig:
        left, right = fig.subplots(1, 2, sharey=True)
        if not points:
            empty_axes(left, labels["empty"])
            empty_axes(right, labels["empty"])
            return figure_svg(fig, chart_id)
        for ax, attr, x_label in (
            (left, "run_s", labels["x_run"]),
            (right, "decode_tps", labels["x_decode"]),
        ):
            shown = [(i, p) for i, p in enumerate(points, start=1) if getattr(p, attr) is not None]
            for i, p in shown:
                x = float(getattr(p, attr))
                lo = p.pass_pct - p.ci_low_pct if p.ci_low_pct is not None else 0.0
                hi = p.ci_high_pct - p.pass_pct if p.ci_high_pct is not None else 0.0
                color = PALETTE[(i - 1) % len(PALETTE)]
                ax.errorbar(
                    [x],
                    [p.pass_pct],
                    yerr=[[lo], [hi]],
                    fmt="o",
                    color=color,
                    capsize=3,
                    label=plain_text(f"{i}  {p.label}") if ax is left else None,
                )
                ax.annotate(
                    str(i),
                    (x, p.pass_pct),
                    textcoords="offset points",
                    xytext=(6, 4),
                    fontsize=8,
                    fontweight="bold",
                )
            top = max((float(getattr(p, attr)) for _, p in shown), default=1.0)
            ax.set_xlim(0.0, top * 1.2 if top > 0 else 1.0)
            ax.set_xlabel(plain_text(x_label))
        left.set_ylim(-3.0, 103.0)
        left.set_ylabel(plain_text(labels["y"]))
        handles, names = left.get_legend_handles_labels()
        if handles:
            right.legend(
                handles,
                names,
                loc="upper left",
                bbox_to_anchor=(1.02, 1.0),
                fontsize=7.5,
                frameon=False,
            )
        fig.tight_layout()
        return figure_svg(fig, chart_id)
