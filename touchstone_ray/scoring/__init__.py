"""Scoring: everything that turns a bundle's stored records into figures (SPEC §9, §10).

Modules: :mod:`.formulas` (knock-out, quality %, rubric, ranking, the pre-judge rules),
:mod:`.stats` (per category / per prompt / variant A/B), :mod:`.agreement` (several judges),
:mod:`.aggregates` (the SPEC §9 speed figures: which cells count, and their medians and
percentiles), :mod:`.stability` (distinct answers over a prompt's repeats),
:mod:`.scorecard` (``scorecard.json``, its :class:`~.scorecard_model.Scorecard` model),
:mod:`.render` (``scorecard.md`` and the terminal ranking table), :mod:`.ingest` (an outside
rater's filled rating task), :mod:`.critique` (part B: the rubric rates of the judges'
rationales), :mod:`.tools` (a tools bundle's figures and ``summary.json``) and
:mod:`.tools_compare` (two tools bundles paired, exact McNemar p). Nothing here calls a judge
or imports a stage package: ``judging`` stores verdicts, this package reads them. scipy,
statsmodels and krippendorff are imported only inside the functions that need them (about 1 s
together).
The names in ``__all__`` are the package's public surface (a test pins them).
"""

from __future__ import annotations

from touchstone_ray.scoring.aggregates import (
    RowStats,
    counts_for_decode,
    counts_for_prompt,
    row_stats,
    speed_exclusions,
    under_load,
)
from touchstone_ray.scoring.agreement import (
    AggregatedReport,
    AgreementStat,
    aggregate_reports,
    dimension_alpha,
    ranking_tau,
    red_flag_kappa,
    red_flagged_prompts,
    vote_red_flags,
)
from touchstone_ray.scoring.formulas import (
    CheckTally,
    MissingDimensionsError,
    check_tally,
    knock_out_failures,
    passes_ko,
    pre_judge_verdict,
    quality_pct,
    rank_rows,
    rubric_level,
)
from touchstone_ray.scoring.ingest import agreement_json, ingest_reply
from touchstone_ray.scoring.render import ranking_table
from touchstone_ray.scoring.scorecard import (
    build_scorecard,
    load_scorecard,
    write_scorecard,
)
from touchstone_ray.scoring.scorecard_model import Scorecard, ScorecardRow
from touchstone_ray.scoring.stability import RepeatStability, repeat_stability
from touchstone_ray.scoring.stats import (
    PromptStat,
    VariantComparison,
    category_means,
    compare_variants,
    mean_answer_score,
    prompt_stats,
)

__all__ = [
    "AggregatedReport",
    "AgreementStat",
    "CheckTally",
    "MissingDimensionsError",
    "PromptStat",
    "RepeatStability",
    "RowStats",
    "Scorecard",
    "ScorecardRow",
    "VariantComparison",
    "aggregate_reports",
    "agreement_json",
    "build_scorecard",
    "category_means",
    "check_tally",
    "compare_variants",
    "counts_for_decode",
    "counts_for_prompt",
    "dimension_alpha",
    "ingest_reply",
    "knock_out_failures",
    "load_scorecard",
    "mean_answer_score",
    "passes_ko",
    "pre_judge_verdict",
    "prompt_stats",
    "quality_pct",
    "rank_rows",
    "ranking_table",
    "ranking_tau",
    "red_flag_kappa",
    "red_flagged_prompts",
    "repeat_stability",
    "row_stats",
    "rubric_level",
    "speed_exclusions",
    "under_load",
    "vote_red_flags",
    "write_scorecard",
]
