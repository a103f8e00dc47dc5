"""Judging: parse judge replies, score, aggregate several judges (SPEC §10).

Modules: :mod:`.parse` (the judge reply contract), :mod:`.scoring` (knock-out, quality %,
rubric, ranking, the pre-judge rules), :mod:`.stats` (per category / per prompt / variant
A/B), :mod:`.agreement` (several judges), :mod:`.prompts` (judge templates and reply schemas),
:mod:`.config` (the judge config). The names below are re-exported; scipy, statsmodels and
krippendorff are imported only inside the functions that need them (about 1 s together).

Running judges: :func:`touchstone_ray.judging.runner.run_judge` (the ``judge`` command) over
:mod:`.worklist` (what is left to ask), :mod:`.client` (the judge actor), :mod:`.store` (the
JSONL files) and :mod:`.cache` (cache keys); :mod:`.flags` checks the flags a judge names
against the prompt's, :mod:`.checks` qualifies each judge on the pack's calibration answers and
warns about degenerate output; :mod:`.scorecard` builds ``scorecard.json`` (the
:class:`~.scorecard_model.Scorecard` model; both re-exported here) and :mod:`.render` its
Markdown and terminal tables; :mod:`.ingest` takes an outside rater's filled rating task.
The runner, client, store and render modules are not imported here (engines, Ray, the report
writer). The names in ``__all__`` are the package's public surface (a test pins them).
"""

from __future__ import annotations

from touchstone_ray.judging.agreement import (
    AggregatedReport,
    AgreementStat,
    aggregate_reports,
    dimension_alpha,
    ranking_tau,
    red_flag_kappa,
    red_flagged_prompts,
    vote_red_flags,
)
from touchstone_ray.judging.config import JudgeConfig, JudgeSpec, load_judge_config
from touchstone_ray.judging.parse import (
    ParsedHolistic,
    ParsedVerdict,
    ParseFailure,
    parse_answer_reply,
    parse_holistic_reply,
)
from touchstone_ray.judging.prompts import (
    ANSWER_SCHEMA,
    TEMPLATE_VERSION,
    JudgePrompt,
    answer_prompt,
    holistic_prompt,
    holistic_schema,
)
from touchstone_ray.judging.scorecard import (
    SCORECARD_JSON,
    SCORECARD_MD,
    build_scorecard,
    load_scorecard,
    write_scorecard,
)
from touchstone_ray.judging.scorecard_model import Scorecard, ScorecardRow
from touchstone_ray.judging.scoring import (
    MissingDimensionsError,
    passes_ko,
    pre_judge_verdict,
    quality_pct,
    rank_rows,
    rubric_level,
)
from touchstone_ray.judging.stats import (
    PromptStat,
    VariantComparison,
    category_means,
    compare_variants,
    mean_answer_score,
    prompt_stats,
)

__all__ = [
    "ANSWER_SCHEMA",
    "SCORECARD_JSON",
    "SCORECARD_MD",
    "TEMPLATE_VERSION",
    "AggregatedReport",
    "AgreementStat",
    "JudgeConfig",
    "JudgePrompt",
    "JudgeSpec",
    "MissingDimensionsError",
    "ParseFailure",
    "ParsedHolistic",
    "ParsedVerdict",
    "PromptStat",
    "Scorecard",
    "ScorecardRow",
    "VariantComparison",
    "aggregate_reports",
    "answer_prompt",
    "build_scorecard",
    "category_means",
    "compare_variants",
    "dimension_alpha",
    "holistic_prompt",
    "holistic_schema",
    "load_judge_config",
    "load_scorecard",
    "mean_answer_score",
    "parse_answer_reply",
    "parse_holistic_reply",
    "passes_ko",
    "pre_judge_verdict",
    "prompt_stats",
    "quality_pct",
    "rank_rows",
    "ranking_tau",
    "red_flag_kappa",
    "red_flagged_prompts",
    "rubric_level",
    "vote_red_flags",
    "write_scorecard",
]
