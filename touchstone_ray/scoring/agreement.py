"""Several judges: the aggregate and their agreement (SPEC §10).

- Aggregate: per (model, variant) the median of the judges' dimension scores
  (:func:`aggregate_reports`); per answer a red flag by ``red_flag_vote``
  (:func:`vote_red_flags`): ``any`` — at least one judge; ``majority`` — more than half of the
  judges that scored it (so with two judges, both). Judge errors abstain.
- Agreement, each from a library, ``None`` with a reason where undefined:
  Krippendorff's α, ordinal, per dimension over the (model, variant) rows
  (``krippendorff.alpha``); Cohen's κ (two judges) or Fleiss' κ (three or more) on the red flags
  of the answers every judge scored (``statsmodels.stats.inter_rater``); Kendall's τ-b between
  each pair of judges' rankings (``scipy.stats.kendalltau``).

Red-flag κ counts only verdicts a judge actually gave (``raw`` set): the rule-based verdicts
of :func:`~touchstone_ray.scoring.formulas.pre_judge_verdict` are identical for every judge and
would inflate agreement.
"""

from __future__ import annotations

import statistics
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from touchstone_ray.records import HolisticReport, Verdict

__all__ = [
    "AggregatedReport",
    "AgreementStat",
    "RedFlagVote",
    "aggregate_reports",
    "dimension_alpha",
    "ranking_tau",
    "red_flag_kappa",
    "red_flagged_prompts",
    "vote_red_flags",
]

RedFlagVote = Literal["any", "majority"]
"""How several judges' red flags on one answer combine."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)


class AgreementStat(_Result):
    """One agreement coefficient, or ``None`` with the reason it is undefined."""

    method: str
    """``krippendorff_alpha_ordinal`` | ``cohen_kappa`` | ``fleiss_kappa`` | ``kendall_tau_b``."""
    value: float | None
    """The coefficient (−1..1; 1 = perfect agreement), ``None`` when undefined."""
    reason: str | None = None
    """Why ``value`` is ``None``."""
    n_items: int = 0
    """Units compared: (model, variant) rows, answers or ranked rows."""
    n_judges: int = 0


class AggregatedReport(_Result):
    """The judges' holistic reports on one (model, variant), combined."""

    model: str
    variant: str
    judges: list[str]
    dim_scores: dict[str, float]
    """Dimension id → median over the judges that scored it (1..5, may be x.5)."""
    cited_prompts: dict[str, list[str]]
    """Dimension id → union of the cited prompt ids, in order of first citation."""
    missing: list[str]
    """Dimensions no judge scored (pack order): reported, never counted as 0."""
    status: Literal["ok", "degraded"]
    """``degraded`` when a dimension is missing or any judge's report was degraded."""


@dataclass(frozen=True)
class _Head:
    method: str
    n_items: int
    n_judges: int

    def value(self, value: float) -> AgreementStat:
        return AgreementStat(
            method=self.method, value=value, n_items=self.n_items, n_judges=self.n_judges
        )

    def undefined(self, reason: str) -> AgreementStat:
        return AgreementStat(
            method=self.method,
            value=None,
            reason=reason,
            n_items=self.n_items,
            n_judges=self.n_judges,
        )


def aggregate_reports(
    reports: Sequence[HolisticReport], dimension_ids: Sequence[str]
) -> AggregatedReport:
    """Median dimension scores of several judges' reports on one (model, variant).

    Raises ``ValueError`` for no reports or reports on different (model, variant)s.
    """
    rows = {(r.model, r.variant) for r in reports}
    if len(rows) != 1:
        raise ValueError(f"expected reports on one (model, variant), got {sorted(rows)}")
    scores: dict[str, float] = {}
    cited: dict[str, list[str]] = {}
    missing: list[str] = []
    for dim in dimension_ids:
        values = [r.dim_scores[dim] for r in reports if dim in r.dim_scores]
        if not values:
            missing.append(dim)
            continue
        scores[dim] = float(statistics.median(values))
        ids = [p for r in reports for p in r.cited_prompts.get(dim, [])]
        cited[dim] = list(dict.fromkeys(ids))
    degraded = bool(missing) or any(r.status == "degraded" for r in reports)
    model, variant = rows.pop()
    return AggregatedReport(
        model=model,
        variant=variant,
        judges=sorted({r.judge for r in reports}),
        dim_scores=scores,
        cited_prompts=cited,
        missing=missing,
        status="degraded" if degraded else "ok",
    )


def vote_red_flags(verdicts: Iterable[Verdict], vote: RedFlagVote) -> dict[str, bool]:
    """Cell key → red flag after the vote, over the ``scored`` verdicts (errors abstain)."""
    ballots: dict[str, dict[str, bool]] = defaultdict(dict)
    for v in verdicts:
        if v.status == "scored":
            ballots[v.key][v.judge] = v.red_flag
    out: dict[str, bool] = {}
    for key, by_judge in ballots.items():
        yes = sum(by_judge.values())
        out[key] = yes >= 1 if vote == "any" else yes > len(by_judge) / 2
    return out


def red_flagged_prompts(verdicts: Iterable[Verdict], vote: RedFlagVote) -> list[str]:
    """Sorted prompt ids of one (model, variant) with a red flag (any repeat) after the vote.

    Raises ``ValueError`` if the verdicts span several (model, variant)s.
    """
    verdicts = list(verdicts)
    rows = {(v.model, v.variant) for v in verdicts}
    if len(rows) > 1:
        raise ValueError(f"expected verdicts of one (model, variant), got {sorted(rows)}")
    prompt_of = {v.key: v.prompt_id for v in verdicts}
    flagged = vote_red_flags(verdicts, vote)
    return sorted({prompt_of[k] for k, flag in flagged.items() if flag})


def dimension_alpha(
    reports: Iterable[HolisticReport], dimension_ids: Sequence[str]
) -> dict[str, AgreementStat]:
    """Dimension id → Krippendorff's α (ordinal, values 1..5) over the (model, variant) rows.

    Judges are the coders, rows the units; a judge without a score for a row is a missing
    value. Undefined with fewer than two judges, without a row scored by two judges, or
    without any variance in the scores.
    """
    reports = list(reports)
    judges = sorted({r.judge for r in reports})
    units = sorted({(r.model, r.variant) for r in reports})
    out: dict[str, AgreementStat] = {}
    for dim in dimension_ids:
        data = np.full((len(judges), len(units)), np.nan)
        for r in reports:
            if dim in r.dim_scores:
                data[judges.index(r.judge), units.index((r.model, r.variant))] = r.dim_scores[dim]
        pairable = int(np.sum(np.sum(~np.isnan(data), axis=0) >= 2))
        stat = _Head("krippendorff_alpha_ordinal", pairable, len(judges))
        if len(judges) < 2:
            out[dim] = stat.undefined("needs at least two judges")
            continue
        if pairable == 0:
            reason = "no (model, variant) scored by two judges"
            out[dim] = stat.undefined(reason)
            continue
        pairable_values = data[:, np.sum(~np.isnan(data), axis=0) >= 2]
        if np.unique(pairable_values[~np.isnan(pairable_values)]).size < 2:
            reason = "no variance: every judge gave the same score"
            out[dim] = stat.undefined(reason)
            continue
        import krippendorff  # lazy: keeps `import touchstone_ray.judging` light

        value = krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
        out[dim] = stat.value(float(value))
    return out


def red_flag_kappa(verdicts: Iterable[Verdict]) -> AgreementStat:
    """Cohen's κ (two judges) or Fleiss' κ (three or more) on the judges' red flags.

    Items are the answers every judge scored itself (``status == "scored"`` and ``raw`` set).
    Undefined with fewer than two judges, no common answer, or no variance at all.
    """
    ballots: dict[str, dict[str, bool]] = defaultdict(dict)
    judges: set[str] = set()
    for v in verdicts:
        judges.add(v.judge)
        if v.status == "scored" and v.raw is not None:
            ballots[v.key][v.judge] = v.red_flag
    order = sorted(judges)
    method = "cohen_kappa" if len(order) == 2 else "fleiss_kappa"
    items = [[b[j] for j in order] for _, b in sorted(ballots.items()) if len(b) == len(order)]
    stat = _Head(method, len(items), len(order))
    if len(order) < 2:
        return stat.undefined("needs at least two judges")
    if not items:
        return stat.undefined("no answer scored by every judge")
    flat = {flag for row in items for flag in row}
    if len(flat) < 2:
        reason = "no variance: every judge gave the same red flag on every answer"
        return stat.undefined(reason)
    from statsmodels.stats import inter_rater  # type: ignore[import-untyped]  # lazy, ~0.5 s

    if len(order) == 2:
        table = np.zeros((2, 2))
        for a, b in items:
            table[int(a), int(b)] += 1
        with warnings.catch_warnings():  # its z statistic divides by 0 on tiny tables
            warnings.simplefilter("ignore", RuntimeWarning)
            value = inter_rater.cohens_kappa(table).kappa
    else:
        counts = np.array([[row.count(False), row.count(True)] for row in items], dtype=float)
        value = inter_rater.fleiss_kappa(counts, method="fleiss")
    return stat.value(float(value))


def ranking_tau(rankings: Mapping[str, Sequence[str]]) -> dict[str, AgreementStat]:
    """``"<judge a> vs <judge b>"`` → Kendall's τ-b between their rankings (best first).

    Each ranking lists row ids (e.g. ``model|variant``); only rows both judges ranked count.
    Undefined with fewer than two common rows (or fewer than two judges: an empty result).
    """
    from scipy import stats as sps  # type: ignore[import-untyped]  # lazy, ~0.6 s

    out: dict[str, AgreementStat] = {}
    for a, b in combinations(sorted(rankings), 2):
        in_b = set(rankings[b])
        common = [row for row in rankings[a] if row in in_b]
        stat = _Head("kendall_tau_b", len(common), 2)
        if len(common) < 2:
            out[f"{a} vs {b}"] = stat.undefined("fewer than two rows")
            continue
        in_common = set(common)
        rank_b = {row: i for i, row in enumerate(r for r in rankings[b] if r in in_common)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tau = sps.kendalltau(range(len(common)), [rank_b[row] for row in common]).statistic
        out[f"{a} vs {b}"] = stat.value(float(tau))
    return out
