"""Several judges: aggregate, red-flag vote, and α / κ / τ checked against hand computations."""

from __future__ import annotations

import pytest
from judging_factories import verdict

from touchstone_ray.records import HolisticReport
from touchstone_ray.scoring.agreement import (
    aggregate_reports,
    dimension_alpha,
    ranking_tau,
    red_flag_kappa,
    red_flagged_prompts,
    vote_red_flags,
)

ROWS = [("m1", "baseline"), ("m1", "none"), ("m2", "baseline")]


def reports(judge: str, q1: list[int], q6: list[int] | None = None) -> list[HolisticReport]:
    q6 = q6 or [3, 3, 3]
    return [
        HolisticReport(model=m, variant=v, judge=judge, dim_scores={"Q1": a, "Q6": b})
        for (m, v), a, b in zip(ROWS, q1, q6, strict=True)
    ]


# --- two judges that disagree: α, κ, τ by hand ----------------------------------------------


def test_krippendorff_alpha_ordinal_two_judges_by_hand() -> None:
    # Q1 over the rows (units) u1..u3: judge A = 1, 2, 3; judge B = 2, 2, 3.
    # Pairable values n = 6, marginals n_1 = 1, n_2 = 3, n_3 = 2.
    # Ordinal δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²:
    #   δ²(1,2) = (4 − 2)² = 4;  δ²(1,3) = (6 − 1.5)² = 20.25;  δ²(2,3) = (5 − 2.5)² = 6.25.
    # Observed coincidences (m_u = 2, weight 1/(m_u − 1) = 1): u1 gives (1,2) and (2,1);
    #   u2 and u3 agree. D_o = (4 + 4) / n = 8/6 = 4/3.
    # Expected: D_e = Σ_{c≠k} n_c n_k δ²(c,k) / (n (n − 1))
    #             = 2 (1·3·4 + 1·2·20.25 + 3·2·6.25) / 30 = 2 · 90 / 30 = 6.
    # α = 1 − D_o / D_e = 1 − (4/3)/6 = 7/9.
    alpha = dimension_alpha(reports("A", [1, 2, 3]) + reports("B", [2, 2, 3]), ["Q1", "Q6"])
    assert alpha["Q1"].value == pytest.approx(7 / 9)
    assert (alpha["Q1"].n_items, alpha["Q1"].n_judges) == (3, 2)
    # Q6 is 3 everywhere: no variance, α undefined (not 1, not 0)
    assert alpha["Q6"].value is None
    assert alpha["Q6"].reason == "no variance: every judge gave the same score"


def test_cohen_kappa_two_judges_by_hand() -> None:
    # Red flags on four answers: A = T, T, F, F; B = T, F, F, F.
    # p_o = 3/4 (answers 1, 3, 4 agree); P_A(T) = 1/2, P_B(T) = 1/4;
    # p_e = 1/2 · 1/4 + 1/2 · 3/4 = 1/2;  κ = (3/4 − 1/2) / (1 − 1/2) = 1/2.
    flags_a = [True, True, False, False]
    flags_b = [True, False, False, False]
    ids = ["A1", "A2", "B1", "B2"]
    vs = [verdict(p, 3, judge="A", red_flag=f) for p, f in zip(ids, flags_a, strict=True)]
    vs += [verdict(p, 3, judge="B", red_flag=f) for p, f in zip(ids, flags_b, strict=True)]
    kappa = red_flag_kappa(vs)
    assert kappa.method == "cohen_kappa"
    assert kappa.value == pytest.approx(0.5)
    assert (kappa.n_items, kappa.n_judges) == (4, 2)


def test_kendall_tau_two_judges_by_hand() -> None:
    # A ranks r1 > r2 > r3, B ranks r2 > r1 > r3. Pairs: (r1,r2) discordant, (r1,r3) and
    # (r2,r3) concordant: τ = (2 − 1) / 3 = 1/3 (no ties, so τ-b = τ-a).
    tau = ranking_tau({"A": ["r1", "r2", "r3"], "B": ["r2", "r1", "r3"]})
    assert list(tau) == ["A vs B"]
    assert tau["A vs B"].value == pytest.approx(1 / 3)
    assert tau["A vs B"].n_items == 3


def test_fleiss_kappa_three_judges_by_hand() -> None:
    # 4 answers, 3 judges; red-flag votes per answer (T, F): (3,0), (2,1), (0,3), (0,3).
    # P_i = (Σ_j n_ij² − 3) / 6: 1, 1/3, 1, 1 → P̄ = 10/12 = 5/6.
    # p_T = 5/12, p_F = 7/12 → P_e = (25 + 49)/144 = 37/72.
    # κ = (5/6 − 37/72) / (1 − 37/72) = (23/72) / (35/72) = 23/35.
    votes = {
        "A1": [True, True, True],
        "A2": [True, True, False],
        "B1": [False] * 3,
        "B2": [False] * 3,
    }
    vs = [
        verdict(p, 3, judge=j, red_flag=f)
        for p, flags in votes.items()
        for j, f in zip(["J1", "J2", "J3"], flags, strict=True)
    ]
    kappa = red_flag_kappa(vs)
    assert kappa.method == "fleiss_kappa"
    assert kappa.value == pytest.approx(23 / 35)


# --- undefined cases --------------------------------------------------------------------------


def test_single_judge_is_undefined_everywhere() -> None:
    assert dimension_alpha(reports("A", [1, 2, 3]), ["Q1"])["Q1"].reason == (
        "needs at least two judges"
    )
    single = red_flag_kappa([verdict("A1", 3, judge="A", red_flag=True)])
    assert (single.value, single.reason) == (None, "needs at least two judges")
    assert ranking_tau({"A": ["r1", "r2"]}) == {}


def test_kappa_without_variance_or_common_items_is_undefined() -> None:
    same = [verdict(p, 3, judge=j) for p in ("A1", "A2") for j in ("A", "B")]
    assert red_flag_kappa(same).reason == (
        "no variance: every judge gave the same red flag on every answer"
    )
    disjoint = [verdict("A1", 3, judge="A"), verdict("A2", 3, judge="B")]
    assert red_flag_kappa(disjoint).reason == "no answer scored by every judge"


def test_kappa_ignores_rule_based_verdicts_and_judge_errors() -> None:
    vs = [
        verdict("A1", 1, judge="A", red_flag=True, raw=None),  # empty answer rule, not a judge
        verdict("A1", 1, judge="B", red_flag=True, raw=None),
        verdict("A2", None, judge="A", status="judge_error"),
        verdict("A2", 4, judge="B"),
    ]
    assert red_flag_kappa(vs).n_items == 0


def test_alpha_without_overlap_and_tau_with_one_common_row() -> None:
    only_a = reports("A", [1, 2, 3])[:1]
    only_b = reports("B", [1, 2, 3])[1:]
    assert dimension_alpha(only_a + only_b, ["Q1"])["Q1"].reason == (
        "no (model, variant) scored by two judges"
    )
    tau = ranking_tau({"A": ["r1", "r2"], "B": ["r2", "r3"]})
    assert tau["A vs B"].value is None and tau["A vs B"].reason == "fewer than two rows"


# --- aggregate ------------------------------------------------------------------------------


def test_aggregate_median_and_missing_dimension() -> None:
    a = HolisticReport(
        model="m",
        variant="baseline",
        judge="A",
        dim_scores={"Q1": 2, "Q6": 4},
        cited_prompts={"Q1": ["B1", "A1"]},
    )
    b = HolisticReport(
        model="m",
        variant="baseline",
        judge="B",
        dim_scores={"Q1": 3},
        cited_prompts={"Q1": ["A1", "B2"]},
        status="degraded",
    )
    agg = aggregate_reports([a, b], ["Q1", "Q6", "Q7"])
    assert agg.dim_scores == {"Q1": 2.5, "Q6": 4.0}  # median of one judge is its score
    assert agg.missing == ["Q7"]
    assert agg.cited_prompts["Q1"] == ["B1", "A1", "B2"]
    assert (agg.status, agg.judges) == ("degraded", ["A", "B"])
    three = [a, b, a.model_copy(update={"judge": "C", "dim_scores": {"Q1": 5, "Q6": 4}})]
    assert aggregate_reports(three, ["Q1"]).dim_scores == {"Q1": 3.0}


def test_aggregate_rejects_mixed_rows() -> None:
    with pytest.raises(ValueError, match="one \\(model, variant\\)"):
        aggregate_reports(reports("A", [1, 2, 3]), ["Q1"])


def test_red_flag_vote_any_and_majority() -> None:
    two = [verdict("B1", 2, judge="A", red_flag=True), verdict("B1", 4, judge="B")]
    assert vote_red_flags(two, "any") == {"m|baseline|B1|1": True}
    assert vote_red_flags(two, "majority") == {"m|baseline|B1|1": False}  # 1 of 2 is no majority
    three = [*two, verdict("B1", 2, judge="C", red_flag=True)]
    assert vote_red_flags(three, "majority") == {"m|baseline|B1|1": True}
    # a judge error abstains: 1 of 1 scored votes is a majority
    abstain = [
        verdict("A1", 2, judge="A", red_flag=True),
        verdict("A1", None, judge="B", status="judge_error"),
    ]
    assert vote_red_flags(abstain, "majority") == {"m|baseline|A1|1": True}


def test_red_flagged_prompts_any_repeat() -> None:
    vs = [
        verdict("B1", 2, judge="A", repeat=2, red_flag=True),
        verdict("B1", 4, judge="A", repeat=1),
        verdict("A2", 3, judge="A", red_flag=True),
        verdict("A1", 5, judge="A"),
    ]
    assert red_flagged_prompts(vs, "any") == ["A2", "B1"]
    with pytest.raises(ValueError):
        red_flagged_prompts([*vs, verdict("A1", 3, variant="none")], "any")
