"""Answer-score statistics (SPEC §10): per category, per prompt with a bootstrap CI, variant A/B.

Only verdicts with a score count (unscored answers and judge errors are out of all means; an
empty answer's score 1 counts). Callers pass the verdicts of one (model, variant) unless a
function says otherwise. Confidence intervals are percentile bootstraps of the mean
(``scipy.stats.bootstrap``, ``method="percentile"``: defined for constant data, where BCa is
not) with a fixed seed, so reports are reproducible; fewer than two values give no interval.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from touchstone_ray.descriptive import median
from touchstone_ray.pack import Pack
from touchstone_ray.records import EvalResponse, Verdict
from touchstone_ray.scoring.aggregates import counts_for_prompt

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "LENGTH_CONFOUND_RATIO",
    "PromptStat",
    "VariantComparison",
    "bootstrap_mean_ci",
    "category_means",
    "compare_variants",
    "mean_answer_score",
    "prompt_stats",
]

BOOTSTRAP_SEED = 42
"""Seed of every bootstrap (fixed: the same bundle gives the same intervals)."""
BOOTSTRAP_RESAMPLES = 9999
"""Bootstrap resamples per interval."""
LENGTH_CONFOUND_RATIO = 1.2
"""Warn when the better variant's median answer is at least this many times longer."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)


class PromptStat(_Result):
    """Mean answer score of one prompt over repeats and judges, with a 95 % bootstrap CI."""

    prompt_id: str
    n: int
    """Scores that went in (repeats × judges, scored only)."""
    mean: float | None
    """Mean score 1..5; ``None`` when nothing was scored."""
    ci_low: float | None = None
    """Lower CI bound; ``None`` with fewer than two scores."""
    ci_high: float | None = None
    """Upper CI bound; ``None`` with fewer than two scores."""


class VariantComparison(_Result):
    """Variant B against variant A for one model: paired per-prompt differences (B − A)."""

    model: str
    variant_a: str
    variant_b: str
    n_pairs: int
    """Prompts scored under both variants."""
    mean_diff: float | None
    """Mean of per-prompt mean-score differences B − A (score points); ``None`` if no pair."""
    ci_low: float | None
    """95 % bootstrap CI of ``mean_diff``; ``None`` with fewer than two pairs."""
    ci_high: float | None
    n_b_better: int
    n_a_better: int
    n_ties: int
    sign_test_p: float | None
    """Two-sided exact sign test (``scipy.stats.binomtest``, ties dropped); ``None`` if all tie."""
    e2e_median_diff_s: float | None
    """Median E2E latency B − A (s), cells that count for the prompt-side speed figures only
    (:func:`touchstone_ray.scoring.aggregates.counts_for_prompt`)."""
    completion_tokens_median_diff: float | None
    """Median completion tokens B − A (tokens), ok cells with a count."""
    answer_chars_median_a: float | None
    """Median answer length of A (characters), ok cells."""
    answer_chars_median_b: float | None
    length_confound: bool
    """The better variant's median answer is ≥ 1.2 × the other's: the judge may reward length."""
    warning: str | None = None


def _scores(verdicts: Iterable[Verdict]) -> list[int]:
    return [v.score for v in verdicts if v.score is not None]


def mean_answer_score(verdicts: Iterable[Verdict]) -> float | None:
    """Mean score of the scored verdicts (1..5), ``None`` when none is scored."""
    scores = _scores(verdicts)
    return statistics.fmean(scores) if scores else None


def category_means(verdicts: Iterable[Verdict], pack: Pack) -> dict[str, float | None]:
    """Category id → mean answer score, in pack order (``None``: nothing scored there)."""
    by_cat: dict[str, list[int]] = defaultdict(list)
    for v in verdicts:
        if v.score is not None:
            by_cat[v.category].append(v.score)
    return {c.id: statistics.fmean(by_cat[c.id]) if by_cat[c.id] else None for c in pack.categories}


def bootstrap_mean_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of ``values``; ``None`` with fewer than two."""
    if len(values) < 2:
        return None
    from scipy import stats as sps  # type: ignore[import-untyped]  # lazy, ~0.6 s

    result = sps.bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return float(ci.low), float(ci.high)


def prompt_stats(
    verdicts: Iterable[Verdict], pack: Pack, *, seed: int = BOOTSTRAP_SEED
) -> dict[str, PromptStat]:
    """Prompt id → mean score with a 95 % CI over repeats and judges, in pack order."""
    by_prompt: dict[str, list[int]] = defaultdict(list)
    for v in verdicts:
        if v.score is not None:
            by_prompt[v.prompt_id].append(v.score)
    out: dict[str, PromptStat] = {}
    for prompt in pack.prompts():
        scores = by_prompt[prompt.id]
        ci = bootstrap_mean_ci(scores, seed=seed)
        out[prompt.id] = PromptStat(
            prompt_id=prompt.id,
            n=len(scores),
            mean=statistics.fmean(scores) if scores else None,
            ci_low=ci[0] if ci else None,
            ci_high=ci[1] if ci else None,
        )
    return out


def _per_prompt_means(verdicts: Iterable[Verdict]) -> dict[str, float]:
    by_prompt: dict[str, list[int]] = defaultdict(list)
    for v in verdicts:
        if v.score is not None:
            by_prompt[v.prompt_id].append(v.score)
    return {pid: statistics.fmean(s) for pid, s in by_prompt.items() if s}


def _diff(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


CONFOUND_WARNING = {
    "en": "{better} scores higher but its median answer is {ratio}× longer "
    "({better_len:.0f} vs {other_len:.0f} characters): the judge may reward length",
    "de": "{better} schneidet besser ab, aber seine mediane Antwort ist {ratio}× länger "
    "({better_len:.0f} vs. {other_len:.0f} Zeichen): der Judge belohnt womöglich Länge",
}
"""The length-confound warning per report language."""


def compare_variants(
    model: str,
    variant_a: str,
    variant_b: str,
    verdicts: Iterable[Verdict],
    responses: Iterable[EvalResponse],
    *,
    seed: int = BOOTSTRAP_SEED,
    language: str = "en",
) -> VariantComparison:
    """Variant A/B for ``model``; ``verdicts``/``responses`` may hold other cells (filtered).
    ``language`` (``de`` | ``en``) is the language of the length-confound warning.

    Per prompt the mean score over repeats and judges per variant; the pairs are the prompts
    scored under both; differences are B − A. Beside it the median E2E latency and completion
    token differences and a length-confound warning (SPEC §10).
    """
    verdicts = [v for v in verdicts if v.model == model]
    means_a = _per_prompt_means(v for v in verdicts if v.variant == variant_a)
    means_b = _per_prompt_means(v for v in verdicts if v.variant == variant_b)
    paired = sorted(set(means_a) & set(means_b))
    diffs = [means_b[p] - means_a[p] for p in paired]
    n_b = sum(d > 0 for d in diffs)
    n_a = sum(d < 0 for d in diffs)
    from scipy import stats as sps  # lazy, ~0.6 s

    sign_p = float(sps.binomtest(n_b, n_b + n_a, 0.5).pvalue) if n_b + n_a else None
    ci = bootstrap_mean_ci(diffs, seed=seed)
    mean_diff = statistics.fmean(diffs) if diffs else None

    ok = [r for r in responses if r.model == model and r.ok]
    a_resp = [r for r in ok if r.variant == variant_a]
    b_resp = [r for r in ok if r.variant == variant_b]

    def e2e(rs: list[EvalResponse]) -> float | None:
        return median(r.e2e_s for r in rs if r.e2e_s is not None and counts_for_prompt(r))

    def tokens(rs: list[EvalResponse]) -> float | None:
        return median(float(r.completion_tokens) for r in rs if r.completion_tokens is not None)

    len_a = median(float(len(r.response_text)) for r in a_resp)
    len_b = median(float(len(r.response_text)) for r in b_resp)
    confound, warning = False, None
    if mean_diff and len_a is not None and len_b is not None:
        better, better_len, other_len = (
            (variant_b, len_b, len_a) if mean_diff > 0 else (variant_a, len_a, len_b)
        )
        if better_len > 0 and better_len >= LENGTH_CONFOUND_RATIO * other_len:
            confound = True
            ratio = "∞" if other_len == 0 else f"{better_len / other_len:.2f}"
            warning = CONFOUND_WARNING.get(language, CONFOUND_WARNING["en"]).format(
                better=better, ratio=ratio, better_len=better_len, other_len=other_len
            )
    return VariantComparison(
        model=model,
        variant_a=variant_a,
        variant_b=variant_b,
        n_pairs=len(paired),
        mean_diff=mean_diff,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        n_b_better=n_b,
        n_a_better=n_a,
        n_ties=len(diffs) - n_b - n_a,
        sign_test_p=sign_p,
        e2e_median_diff_s=_diff(e2e(b_resp), e2e(a_resp)),
        completion_tokens_median_diff=_diff(tokens(b_resp), tokens(a_resp)),
        answer_chars_median_a=len_a,
        answer_chars_median_b=len_b,
        length_confound=confound,
        warning=warning,
    )
