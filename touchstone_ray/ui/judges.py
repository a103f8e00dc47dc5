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
from typing import Any

from touchstone_ray.errors import BundleError
from touchstone_ray.scoring.scorecard import load_scorecard
from touchstone_ray.ui._page import e
from touchstone_ray.ui.compare import eval_bundles

__all__ = ["BEST", "judges_html", "pack_judges"]

BEST = {"band_accuracy": max, "red_flag_recall": max, "score_gap": min}
"""Judge-check metric → how the best judge is chosen."""


def _num(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "—"


def pack_judges(runs: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Pack label → ``(bundle rel path, scorecard)`` of every judged bundle of it."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for root in eval_bundles(runs):
        try:
            card = load_scorecard(root)
        except BundleError:
            continue
        pack = f"{card.get('pack_id')} v{card.get('pack_version')}"
        out[pack].append((root.relative_to(runs).as_posix(), card))
    return dict(sorted(out.items()))


def _spread(card: dict[str, Any], judge: str) -> str:
    values = [
        d["judges"][judge]["quality_pct"]
        for d in card.get("details", [])
        if isinstance(d, dict)
        and isinstance(d.get("judges", {}).get(judge, {}).get("quality_pct"), int | float)
    ]
    if not values:
        return "—"
    return f"{min(values):.1f}–{max(values):.1f} %"


def _agreement(card: dict[str, Any]) -> str:
    agreement = card.get("agreement") or {}
    parts = []
    for dim, stat in (agreement.get("dimension_alpha") or {}).items():
        parts.append(f"α {dim} {_num(stat.get('value'))}")
    kappa = agreement.get("red_flag_kappa") or {}
    if kappa:
        parts.append(f"κ red flags {_num(kappa.get('value'))}")
    for pair, stat in (agreement.get("ranking_tau") or {}).items():
        parts.append(f"τ {pair} {_num(stat.get('value'))}")
    return "; ".join(parts) or "—"


def judges_html(runs: Path) -> str:
    """The judges page body."""
    packs = pack_judges(runs)
    if not packs:
        return '<h1>Judges</h1><p class="muted">No judged bundle yet.</p>'
    parts = ["<h1>Judges</h1>"]
    for pack, cards in packs.items():
        rows = []
        checks_seen: dict[str, dict[str, Any]] = {}
        for rel, card in cards:
            checks = card.get("judge_checks") or {}
            for judge in card.get("judges", []):
                check = checks.get(judge) or {}
                if check.get("qualified"):
                    checks_seen.setdefault(judge, check)
                flag = check.get("qualified")
                qualified = (
                    "not checked" if flag is None else "qualified" if flag else "not qualified"
                )
                rows.append(
                    f'<tr data-judge="{e(judge)}"><td>{e(judge)}</td><td>{e(rel)}</td>'
                    f"<td>{e(qualified)}</td><td>{_num(check.get('band_accuracy'))}</td>"
                    f"<td>{_num(check.get('red_flag_recall'))}</td>"
                    f"<td>{_num(check.get('score_gap'))}</td><td>{_spread(card, judge)}</td>"
                    f"<td>{e(_agreement(card))}</td></tr>"
                )
        best = []
        for metric, pick in BEST.items():
            scored = {
                j: c[metric]
                for j, c in checks_seen.items()
                if isinstance(c.get(metric), int | float)
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
