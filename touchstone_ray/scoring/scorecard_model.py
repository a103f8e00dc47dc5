"""The typed ``scorecard.json`` (SPEC §7, a Contract): :class:`Scorecard` and its parts.

The Contract fields come first (``schema_version`` … ``agreement``, and each row's fields in
:class:`ScorecardRow` order); the sections after them feed the reports. Field order is the
on-disk key order. :func:`touchstone_ray.scoring.scorecard.build_scorecard` fills every field,
from the verdicts, reports and responses of one bundle; on read
(:func:`~touchstone_ray.scoring.scorecard.load_scorecard`) the sections after the Contract and
the parts of :class:`RowDetails` may be missing (a scorecard from before them, or one made by
hand): they read as their defaults, and a reader that must tell "absent" from the default asks
``model_fields_set``. Scores are 1..5, percentages 0..100, times seconds, memory MB,
throughput tokens/s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from touchstone_ray.scoring.agreement import AgreementStat, RedFlagVote
from touchstone_ray.scoring.formulas import RubricLevel
from touchstone_ray.scoring.stats import PromptStat, VariantComparison

__all__ = [
    "ROW_STATS_FIGURES",
    "Agreement",
    "CalibrationItem",
    "Categories",
    "CategoryRow",
    "DimensionInfo",
    "JudgeCheck",
    "JudgeSpread",
    "JudgeView",
    "PromptRow",
    "RowDetails",
    "Scorecard",
    "ScorecardRow",
]


ROW_STATS_FIGURES: tuple[str, ...] = (
    "ttft_p50_s",
    "ttft_p95_s",
    "decode_tps_median",
    "e2e_p50_s",
    "peak_ram_mb",
    "model_delta_mb",
    "ttft_cold_p50_s",
    "n_cached",
    "engine_rss_peak_mb",
    "n_contended",
)
"""The :class:`ScorecardRow` fields that are :class:`~touchstone_ray.scoring.aggregates.RowStats`
figures of the same name: the scorecard copies them, and a judged report shows these values
instead of computing them again."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)


class ScorecardRow(_Part):
    """One (model, variant) of ``scorecard.json`` (SPEC §7, the field names are a Contract)."""

    rank: int = 0
    """1 = best: K.-o. passed first, then quality %, then mean answer score."""
    model: str
    """The model's label in the fleet config."""
    variant: str
    """The prompt variant id."""
    quality_pct: float | None
    """Σ(score_d × weight_d) / (5 × Σ weight_d) × 100 over the median dimension scores (%);
    ``None`` when a dimension has no score."""
    rubric_level: RubricLevel | None
    """hoch ≥ 85, solide ≥ 70, teilweise ≥ 50, else ungenügend; ``None`` without quality."""
    ko_passed: bool
    """The row passed the pack's K.-o. rule (:func:`~touchstone_ray.scoring.formulas.passes_ko`)."""
    ko_reason: str
    """``""`` when passed, else ``Red-Flag bei …``, ``check <prompt>/<check> failed`` (both
    joined by ``; ``), ``<dim> ≤ <threshold>`` or ``<dim> nicht bewertet``."""
    red_flagged: list[str]
    """Prompt ids with a red flag after the vote, or a failed ``knock_out`` check (sorted)."""
    dim_scores: dict[str, float]
    """Dimension id → median over the judges (1..5, may be x.5)."""
    mean_answer_score: float | None
    """Mean of all scored verdicts (1..5)."""
    n_scored: int
    """Verdicts with a score (answers × judges)."""
    n_unscored: int
    """Verdicts unscored by rule (reasoning-only, failed generation, prompt cut by the server)."""
    n_judge_errors: int
    """Verdicts the judge could not give (unreadable reply, failed call)."""
    ttft_p50_s: float | None
    """TTFT p50 over the cells that count for speed (s, linear interpolation)."""
    ttft_p95_s: float | None
    """TTFT p95 over the same cells (s)."""
    decode_tps_median: float | None
    """Median decode speed (tok/s)."""
    e2e_p50_s: float | None
    """End-to-end time p50 (s)."""
    peak_ram_mb: float | None
    """Max ``sys_used_mb`` over the row's cells (MB); ``None`` unmeasured."""
    model_delta_mb: float | None
    """Max ``sys_used_delta_mb``: host memory the model added over its baseline (MB)."""
    ttft_cold_p50_s: float | None = None
    """TTFT p50 over the first uncached cell of each prompt (s)."""
    n_cached: int = 0
    """Cells whose prompt the server partly took from its cache: out of TTFT/E2E/prefill."""
    concurrency: int | None = None
    """Requests in flight to the model's endpoint (fleet config); > 1 means its per-request
    speed was measured under load and includes the server's own queue. ``None`` unknown."""
    engine_rss_peak_mb: float | None = None
    """Peak RSS of the serving process tree over the row's cells (MB); ``None`` not found."""
    n_contended: int = 0
    """Cells measured while other processes used > 25 % of the host's cores (left out of the
    latency figures above)."""
    repeat_stability_pct: float | None = None
    """Prompts whose ok repeats all gave the same answer / prompts with at least two ok repeats
    × 100 (%, :mod:`~touchstone_ray.scoring.stability`); ``None`` without repeated prompts."""
    n_repeat_prompts: int = 0
    """Prompts with at least two ok repeats (the base of ``repeat_stability_pct``)."""
    distinct_answers: dict[str, int] = {}
    """Prompt id → distinct answers among its ok repeats, for those prompts."""
    n_checks: int = 0
    """Judge-free check outcomes of the row's answers (SPEC §7 ``checks``; answers × their
    prompt's checks)."""
    n_checks_failed: int = 0
    """Of those, failed ones."""
    n_checks_not_measured: int = 0
    """Of those, ones that could not run (``ok`` null)."""
    checks_failed: list[str] = []
    """``<prompt id>/<check id>`` of every check that failed on some answer, sorted; a
    ``knock_out`` one among them knocks the row out (``ko_reason`` names it)."""


class Agreement(_Part):
    """How far the judges agree (SPEC §10); coefficients are −1..1, ``None`` with a reason."""

    red_flag_vote: RedFlagVote
    """How several judges' red flags on one answer combined (``any`` | ``majority``)."""
    n_judges: int
    """Judges counted."""
    dimension_alpha: dict[str, AgreementStat]
    """Dimension id → Krippendorff's α (ordinal) over the rows' holistic reports."""
    red_flag_kappa: AgreementStat
    """Cohen's (two judges) or Fleiss' κ (more) on the red flags the judges gave themselves."""
    ranking_tau: dict[str, AgreementStat]
    """``"<judge a> vs <judge b>"`` → Kendall's τ-b between their own rankings."""
    rankings: dict[str, list[str]]
    """Judge id → row ids (``model|variant``) best first, from that judge's scores alone."""


class CalibrationItem(_Part):
    """One calibration answer a judge scored before its verdicts count."""

    prompt: str
    """Prompt id of the calibration answer."""
    expect: Literal["high", "low"]
    """Expected band: ``high`` (score ≥ 4) or ``low`` (≤ 2)."""
    red_flag: bool | None
    """Whether a red flag is expected (``None`` = not stated)."""
    score: int | None
    """The judge's score (1..5), ``None`` when it gave none."""
    red_flag_raised: bool
    """The judge raised a red flag."""
    in_band: bool
    """The score is in the expected band."""


class JudgeCheck(_Part):
    """One judge's qualification (SPEC §7 ``judge_checks``,
    :func:`~touchstone_ray.judging.checks.judge_check`)."""

    qualified: bool
    """Band accuracy ≥ 0.8 and every expected red flag caught (true without calibration)."""
    band_accuracy: float | None
    """Share of calibration answers scored in their band (0..1); ``None`` without any."""
    red_flag_recall: float | None
    """Share of expected red flags raised (0..1); ``None`` when none is expected."""
    score_gap: float | None
    """Mean score on ``high`` − mean on ``low`` calibration answers (score points)."""
    n_calibration: int
    """Calibration answers scored."""
    warnings: list[str]
    """One line each: missed flags, low band accuracy, degenerate scoring."""
    n_unknown_flags: int = 0
    """Flags named on the real answers that are not the prompt's."""
    n_red_flag_unnamed: int = 0
    """Verdicts on the real answers claiming a red flag without naming one."""
    calibration: list[CalibrationItem] = []
    """Per calibration answer, what the judge did."""


class DimensionInfo(_Part):
    """A rubric dimension of the pack."""

    id: str
    """Dimension id (e.g. ``Q1``)."""
    name: str
    """Its display name."""
    weight: int
    """Its weight in ``quality_pct`` (a positive integer)."""


class CategoryRow(_Part):
    """Mean answer score per category of one (model, variant)."""

    model: str
    """The model's label."""
    variant: str
    """The prompt variant id."""
    means: dict[str, float | None]
    """Category id → mean answer score (1..5), pack order; ``None`` nothing scored there."""


class Categories(_Part):
    """The per-category section."""

    names: dict[str, str]
    """Category id → display name."""
    rows: list[CategoryRow]
    """One per (model, variant), in row order."""


class PromptRow(_Part):
    """Per-prompt scores of one (model, variant)."""

    model: str
    """The model's label."""
    variant: str
    """The prompt variant id."""
    prompts: dict[str, PromptStat]
    """Prompt id → mean with a 95 % bootstrap CI over repeats and judges, pack order."""


class JudgeView(_Part):
    """One judge's own view of a row (its reports and verdicts alone, vote ``any``)."""

    dim_scores: dict[str, float] = {}
    """Dimension id → that judge's score (1..5)."""
    missing_dimensions: list[str] = []
    """Dimensions it did not score."""
    quality_pct: float | None = None
    """Quality from its scores alone (%)."""
    ko_passed: bool = False
    """The row passes the K.-o. rule on its scores."""
    ko_reason: str = ""
    """As :attr:`ScorecardRow.ko_reason`."""
    red_flagged: list[str] = []
    """Prompt ids it red-flagged."""
    mean_answer_score: float | None = None
    """Mean of its scored verdicts (1..5)."""
    report_status: str = "missing"
    """``ok`` | ``degraded`` | ``missing`` (no holistic report)."""


class JudgeSpread(_Part):
    """Score spread per verdict over ``judge --repeats`` (max − min, score points)."""

    n: int
    """Verdicts with repeats."""
    mean: float
    """Mean spread (score points)."""
    max: float
    """Largest spread (score points)."""


class RowDetails(_Part):
    """What the report needs beside a row: answer counts, each judge's view."""

    model: str
    """The model's label."""
    variant: str
    """The prompt variant id."""
    n_answers: int = 0
    """Responses of the row (cells, failed ones included)."""
    n_generation_failed: int = 0
    """Responses with ``ok`` false."""
    report_status: str = "missing"
    """The aggregated holistic report's status: ``ok`` | ``degraded`` | ``missing``."""
    missing_dimensions: list[str] = []
    """Dimensions no judge scored (reported, never counted as 0)."""
    judges: dict[str, JudgeView] = {}
    """Judge id → its own view."""
    judge_spread: JudgeSpread | None = None
    """Score spread over ``judge --repeats``; ``None`` without repeats."""


class Scorecard(_Part):
    """``scorecard.json``: the judges aggregated, scored and ranked (SPEC §7, §10)."""

    schema_version: int
    """Version of the bundle layout and record schemas."""
    pack_id: str
    """The pack's id."""
    pack_version: int
    """The pack's version."""
    judges: list[str]
    """Judge ids counted in ``rows`` (unqualified ones only with ``--allow-unqualified``)."""
    simulated: bool
    """Some answer came from a simulated engine (labelled in every report)."""
    rows: list[ScorecardRow]
    """One per (model, variant), best first."""
    agreement: Agreement
    """Judge agreement."""
    language: str = "en"
    """The pack's language (``de`` | ``en``): the reports' labels."""
    pack_title: str | None = None
    """The pack's title; ``None`` in a scorecard without it (shown as ``pack_id``)."""
    template_version: str | None = None
    """Version of the judge prompt templates used."""
    generated_at: float | None = None
    """Epoch s when the scorecard was built."""
    aborted_judges: list[str] = []
    """Judges stopped after too many failures (their verdicts so far are kept)."""
    judge_checks: dict[str, JudgeCheck] = {}
    """Judge id → qualification, for counted and uncounted judges alike."""
    unqualified_judges: list[str] = []
    """Those of ``judge_checks`` that are not qualified."""
    dimensions: list[DimensionInfo] = []
    """The pack's rubric dimensions, pack order."""
    categories: Categories | None = None
    """Mean answer score per category and row; ``None`` in a scorecard without it."""
    prompts: list[PromptRow] = []
    """Per row, per-prompt means with 95 % bootstrap CIs."""
    variant_ab: list[VariantComparison] = []
    """Per model, the pack's first variant against each other variant it ran."""
    details: list[RowDetails] = []
    """Per row (row order of the responses): counts and each judge's view."""

    @property
    def title(self) -> str:
        """The pack's title, else its id (a scorecard without ``pack_title``)."""
        return self.pack_title if self.pack_title is not None else self.pack_id
