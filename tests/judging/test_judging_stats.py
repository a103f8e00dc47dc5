"""Per-category means, per-prompt bootstrap CIs and the variant A/B comparison."""

from __future__ import annotations

import pytest
from judging_factories import response, verdict

from touchstone_ray.pack import Pack
from touchstone_ray.records import EvalResponse, Verdict
from touchstone_ray.scoring.stats import (
    bootstrap_mean_ci,
    category_means,
    compare_variants,
    mean_answer_score,
    prompt_stats,
)


def test_means_skip_unscored(pack: Pack) -> None:
    vs = [
        verdict("A1", 5),
        verdict("A2", 2),
        verdict("B1", 4),
        verdict("B2", None, status="unscored_reasoning_only"),
        verdict("B2", None, status="judge_error", judge="j2"),
    ]
    assert mean_answer_score(vs) == pytest.approx(11 / 3)
    assert category_means(vs, pack) == {"A": 3.5, "B": 4.0}
    assert category_means([], pack) == {"A": None, "B": None}
    assert mean_answer_score([]) is None


def test_prompt_stats_over_repeats_and_judges(pack: Pack) -> None:
    vs = [
        verdict("B1", 3, repeat=1, judge="j1"),
        verdict("B1", 5, repeat=2, judge="j1"),
        verdict("B1", 4, repeat=1, judge="j2"),
        verdict("B1", 4, repeat=2, judge="j2"),
        verdict("A1", 4),
        verdict("A2", 2),
        verdict("A2", 2, judge="j2"),
    ]
    stats = prompt_stats(vs, pack)
    assert list(stats) == ["A1", "A2", "B1", "B2"]
    b1 = stats["B1"]
    assert (b1.n, b1.mean) == (4, 4.0)
    assert b1.ci_low is not None and b1.ci_high is not None
    assert 3.0 <= b1.ci_low <= 4.0 <= b1.ci_high <= 5.0
    assert prompt_stats(vs, pack)["B1"] == b1  # fixed seed: reproducible
    assert (stats["A1"].mean, stats["A1"].ci_low) == (4.0, None)  # one score: no interval
    assert (stats["A2"].ci_low, stats["A2"].ci_high) == (2.0, 2.0)  # constant: degenerate CI
    assert (stats["B2"].n, stats["B2"].mean) == (0, None)


def test_bootstrap_ci_brackets_the_mean() -> None:
    ci = bootstrap_mean_ci([1, 2, 3, 4, 5, 3, 2, 4])
    assert ci is not None and ci[0] < 3.0 < ci[1]
    assert bootstrap_mean_ci([4]) is None


def ab_data(long_factor: float = 1.0) -> tuple[list[Verdict], list[EvalResponse]]:
    # baseline: A1 3, A2 3, B1 (3, 5 → 4), B2 4; none: A1 2, A2 3, B1 (2, 2 → 2), B2 3
    base = {"A1": [3], "A2": [3], "B1": [3, 5], "B2": [4]}
    none = {"A1": [2], "A2": [3], "B1": [2, 2], "B2": [3]}
    vs: list[Verdict] = []
    rs: list[EvalResponse] = []
    for variant, scores, text_len, e2e, tokens in (
        ("baseline", base, int(100 * long_factor), 2.0, 80),
        ("none", none, 100, 1.5, 50),
    ):
        for pid, values in scores.items():
            for rep, s in enumerate(values, start=1):
                vs.append(verdict(pid, s, variant=variant, repeat=rep))
                rs.append(
                    response(
                        pid,
                        variant=variant,
                        repeat=rep,
                        response_text="x" * text_len,
                        e2e_s=e2e,
                        completion_tokens=tokens,
                    )
                )
    rs.append(response("A1", variant="none", repeat=9, e2e_s=99.0, is_cold_start=True))
    rs.append(response("A1", variant="none", repeat=8, ok=False, e2e_s=99.0))
    vs.append(verdict("B2", 5, variant="other-model", model="x"))
    return vs, rs


def test_variant_ab_paired_differences() -> None:
    vs, rs = ab_data()
    cmp = compare_variants("m", "none", "baseline", vs, rs)
    # B − A per prompt: A1 +1, A2 0, B1 +2, B2 +1 → mean 1.0; 3 better, 0 worse, 1 tie
    assert cmp.n_pairs == 4
    assert cmp.mean_diff == pytest.approx(1.0)
    assert (cmp.n_b_better, cmp.n_a_better, cmp.n_ties) == (3, 0, 1)
    assert cmp.sign_test_p == pytest.approx(0.25)  # two-sided, 3 of 3: 2 · (1/2)³
    assert cmp.ci_low is not None and cmp.ci_high is not None
    assert cmp.ci_low <= 1.0 <= cmp.ci_high
    # latency and tokens beside it: cold-start and failed cells excluded
    assert cmp.e2e_median_diff_s == pytest.approx(0.5)
    assert cmp.completion_tokens_median_diff == pytest.approx(30.0)
    assert (cmp.length_confound, cmp.warning) == (False, None)


def test_variant_ab_length_confound_warning() -> None:
    vs, rs = ab_data(long_factor=1.2)
    cmp = compare_variants("m", "none", "baseline", vs, rs)
    assert cmp.length_confound is True
    assert cmp.warning is not None and cmp.warning.startswith("baseline scores higher")
    german = compare_variants("m", "none", "baseline", vs, rs, language="de").warning
    assert german is not None and german.startswith("baseline schneidet besser ab")
    vs, rs = ab_data(long_factor=1.19)
    assert compare_variants("m", "none", "baseline", vs, rs).length_confound is False


def test_variant_ab_without_pairs() -> None:
    cmp = compare_variants("nobody", "none", "baseline", [], [])
    assert (cmp.n_pairs, cmp.mean_diff, cmp.sign_test_p, cmp.ci_low) == (0, None, None, None)
