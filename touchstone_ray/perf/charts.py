"""Charts of a perf report (SVG via the report's fixed matplotlib settings).

Each takes series already picked from ``summary.json``: ``{series name: [(x, y), …]}``; a
``None`` y (no fair measurement at that point) leaves a gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from touchstone_ray.doc.charts import PALETTE as _PALETTE
from touchstone_ray.doc.charts import empty_axes as _empty
from touchstone_ray.doc.charts import figure_svg as _finish
from touchstone_ray.doc.charts import plain_text as _t
from touchstone_ray.doc.charts import svg_figure as _figure

Series = Mapping[str, Sequence[tuple[float, float | None]]]


def line_svg(
    name: str,
    series: Series,
    *,
    x_label: str,
    y_label: str,
    hline: float | None = None,
    hline_label: str = "",
    log_x: bool = False,
    annotate: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """One line per series (markers at the points), an optional horizontal target line
    (``hline``, e.g. an SLO) and optional point labels (``annotate``: per series, one text
    per point)."""
    with _figure(7.0, 3.6) as fig:
        ax = fig.add_subplot()
        drawn = False
        for i, (label, points) in enumerate(series.items()):
            xy = [(x, y) for x, y in points if y is not None]
            if not xy:
                continue
            drawn = True
            color = _PALETTE[i % len(_PALETTE)]
            ax.plot(
                [x for x, _ in xy], [y for _, y in xy], marker="o", color=color, label=_t(label)
            )
            for (x, y), text in zip(points, (annotate or {}).get(label, ()), strict=False):
                if y is not None:
                    ax.annotate(
                        _t(text), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7
                    )
        if not drawn:
            _empty(ax, "no fair measurement")
            return _finish(fig, name)
        if hline is not None:
            ax.axhline(hline, color="#d62728", linestyle="--", linewidth=1, label=_t(hline_label))
        if log_x:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(_t(x_label))
        ax.set_ylabel(_t(y_label))
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
        fig.tight_layout()
        return _finish(fig, name)
