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
from touchstone_ray.scoring.scorecard import load_scorecard
from touchstone_ray.scoring.scorecard_model import JudgeCheck, Scorecard
from touchstone_ray.ui._page import e
from touchstone_ray.ui.compare import eval_bundles

__all__ = ["BEST", "judges_html", "pack_judges"]

BEST = {"band_accuracy": max, "red_flag_recall": max, "score_gap": min}
"""Judge-check metric → how the best judge is chosen."""


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


def _agreement(card: Scorecard) -> str:
    agreement = card.agreement
    parts = [f"α {dim} {_num(stat.value)}" for dim, stat in agreement.dimension_alpha.items()]
    parts.append(f"κ red flags {_num(agreement.red_flag_kappa.value)}")
    parts += [f"τ {pair} {_num(stat.value)}" for pair, stat in agreement.ranking_tau.items()]
    return "; ".join(parts)


def judges_html(runs: Path) -> str:
    """The judges page body."""
    packs = pack_judges(runs)
    if not packs:
        return '<h1>Judges</h1><p class="muted">No judged bundle yet.</p>'
    parts = ["<h1>Judges</h1>"]
    for pack, cards in packs.items():
        rows = []
        checks_seen: dict[str, JudgeCheck] = {}
        for rel, card in cards:
            for judge in card.judges:
                check = card.judge_checks.get(judge)
                if check is not None and check.qualified:
                    checks_seen.setdefault(judge, check)
                qualified = (
                    "not checked"
                    if check is None
                    else "qualified"
                    if check.qualified
                    else "not qualified"
                )
                band, recall, gap = _figures(check)
                rows.append(
                    f'<tr data-judge="{e(judge)}"><td>{e(judge)}</td><td>{e(rel)}</td>'
                    f"<td>{e(qualified)}</td><td>{_num(band)}</td><td>{_num(recall)}</td>"
                    f"<td>{_num(gap)}</td><td>{_spread(card, judge)}</td>"
                    f"<td>{e(_agreement(card))}</td></tr>"
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
                    f"<li>{e(metric)}: <strong>{e(winner)}</strong> ({_num(scored[winner])})</li>"
                )
        parts.append(
            f'<section class="judges" data-pack="{e(pack)}"><h2>{e(pack)}</h2><table><thead><tr>'
            "<th>judge</th><th>bundle</th><th>qualification</th><th>band accuracy</th>"
            "<th>red-flag recall</th><th>score gap</th><th>quality spread</th>"
            f"<th>agreement (bundle)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p>best per metric (qualified judges):</p><ul>{''.join(best) or '<li>—</li>'}</ul>"
            "</section>"
        )
    return "".join(parts)
