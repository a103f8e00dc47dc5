"""The judges page (issue item 5): per pack, every judge that judged bundles of it — its
qualification (the scorecard's ``judge_checks``), agreement with the others (the
scorecard's ``agreement``: Krippendorff's α per dimension, Cohen's κ of red flags, Kendall's
τ-b between rankings) and the spread of its quality % per row — and the best per metric.

Read from each judged bundle's ``scorecard.json``
(:func:`~touchstone_ray.scoring.scorecard.load_scorecard`). "Best per metric" picks the
highest ``band_accuracy`` and ``red_flag_recall`` and the lowest ``score_gap`` among
qualified judges; ``None`` figures take no part.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from touchstone_ray.errors import BundleError
from touchstone_ray.lang import labels, ui_labels
from touchstone_ray.scoring.scorecard import load_scorecard
from touchstone_ray.scoring.scorecard_model import JudgeCheck, Scorecard
from touchstone_ray.ui._page import e, th
from touchstone_ray.ui.compare import eval_bundles

__all__ = ["BEST", "judges_html", "pack_judges"]

BEST = {"band_accuracy": max, "red_flag_recall": max, "score_gap": min}
"""Judge-check metric → how the best judge is chosen."""
SHOWN = {"band_accuracy": "h_band", "red_flag_recall": "h_recall", "score_gap": "h_gap"}
"""Judge-check metric → its label's key in :func:`touchstone_ray.lang.ui_labels`."""


def _num(value: float | None, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if value is not None else "—"


def pack_judges(runs: Path) -> dict[str, list[tuple[str, Scorecard]]]:
    """Pack label → ``(bundle rel path, scorecard)`` of every judged bundle of it."""
    out: dict[str, list[tuple[str, Scorecard]]] = defaultdict(list)
    for root in eval_bundles(runs):
        try:
            card = load_scorecard(root)
        except BundleError:
            continue
        pack = f"{card.pack_id} v{card.pack_version}"
        out[pack].append((root.relative_to(runs).as_posix(), card))
    return dict(sorted(out.items()))


def _figures(check: JudgeCheck | None) -> tuple[float | None, float | None, float | None]:
    """``(band_accuracy, red_flag_recall, score_gap)`` of ``check`` (``None`` unchecked)."""
    if check is None:
        return None, None, None
    return check.band_accuracy, check.red_flag_recall, check.score_gap


def _spread(card: Scorecard, judge: str) -> str:
    views = [d.judges.get(judge) for d in card.details]
    values = [v.quality_pct for v in views if v is not None and v.quality_pct is not None]
    if not values:
        return "—"
    return f"{min(values):.1f}–{max(values):.1f} %"


def _agreement(card: Scorecard, u: dict[str, str]) -> str:
    agreement = card.agreement
    parts = [f"α {dim} {_num(stat.value)}" for dim, stat in agreement.dimension_alpha.items()]
    parts.append(f"{u['a_red_flags']} {_num(agreement.red_flag_kappa.value)}")
    parts += [f"τ {pair} {_num(stat.value)}" for pair, stat in agreement.ranking_tau.items()]
    return "; ".join(parts)


HEAD = ("h_judge", "h_bundle", "h_qualification", "h_band", "h_recall", "h_gap", "h_spread")
"""The judges table's column heads before the agreement (keys of
:func:`touchstone_ray.lang.ui_labels`)."""


def judges_html(runs: Path, lang: str = "en") -> str:
    """The judges page body in ``lang``."""
    t, u = labels(lang), ui_labels(lang)
    packs = pack_judges(runs)
    title = f"<h1>{e(u['judges_title'])}</h1>"
    if not packs:
        return title + f'<p class="muted">{e(u["no_judged"])}</p>'
    head = "".join(th(lang, u[k]) for k in (*HEAD, "h_agreement"))
    parts = [title]
    for pack, cards in packs.items():
        rows = []
        checks_seen: dict[str, JudgeCheck] = {}
        for rel, card in cards:
            for judge in card.judges:
                check = card.judge_checks.get(judge)
                if check is not None and check.qualified:
                    checks_seen.setdefault(judge, check)
                qualified = (
                    u["not_checked"]
                    if check is None
                    else t["qualified"]
                    if check.qualified
                    else t["not_qualified"]
                )
                band, recall, gap = _figures(check)
                rows.append(
                    f'<tr data-judge="{e(judge)}"><td>{e(judge)}</td><td>{e(rel)}</td>'
                    f"<td>{e(qualified)}</td><td>{_num(band)}</td><td>{_num(recall)}</td>"
                    f"<td>{_num(gap)}</td><td>{_spread(card, judge)}</td>"
                    f"<td>{e(_agreement(card, u))}</td></tr>"
                )
        best = []
        for metric, pick in BEST.items():
            scored = {
                j: value
                for j, c in checks_seen.items()
                if (value := getattr(c, metric)) is not None
            }
            if scored:
                winner = pick(scored, key=lambda j: scored[j])
                best.append(
                    f"<li>{e(u[SHOWN[metric]])}: <strong>{e(winner)}</strong> "
                    f"({_num(scored[winner])})</li>"
                )
        parts.append(
            f'<section class="judges" data-pack="{e(pack)}"><h2>{e(pack)}</h2><table><thead><tr>'
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p>{e(u['best_per_metric'])}</p><ul>{''.join(best) or '<li>—</li>'}</ul>"
            "</section>"
        )
    return "".join(parts)
