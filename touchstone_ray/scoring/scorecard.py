"""The scorecard: the judges' verdicts and reports aggregated, scored and ranked (SPEC §7, §10).

``scorecard.json`` = ``{schema_version, pack_id, pack_version, judges, simulated, rows,
agreement}`` (the Contract) plus sections for the reports: ``language``, ``pack_title``,
``template_version``, ``generated_at``, ``dimensions``, ``categories`` (mean answer score per
category), ``prompts`` (per prompt mean with a 95 % bootstrap CI over repeats and judges),
``variant_ab``, ``details`` (per row: every judge's own view, missing dimensions),
``aborted_judges``, ``judge_checks`` (SPEC §7 *new*: per judge qualification and warnings,
:mod:`touchstone_ray.judging.checks`) and ``unqualified_judges``.

Per (model, variant) row (:class:`ScorecardRow`):

- ``dim_scores``: median over the judges' holistic reports; ``quality_pct`` and
  ``rubric_level`` from them, ``None`` when a dimension is missing (named in ``details``).
- ``red_flagged``: prompt ids with a red flag on any repeat after ``red_flag_vote``, and those
  where a ``knock_out`` check failed on any repeat (judge-free: no verdict needed).
- ``ko_passed``/``ko_reason``: :func:`~.formulas.passes_ko`, the failed checks included;
  without a score for the K.-o. dimension (and no fatal red flag) the row fails with
  ``"<dim> nicht bewertet"``.
- Checks (SPEC §7 ``checks``, :func:`~.formulas.check_tally`): ``n_checks`` outcomes,
  ``n_checks_failed``, ``n_checks_not_measured``, and ``checks_failed`` (``<prompt>/<check>``
  of every check that failed on some answer, sorted).
- ``mean_answer_score``: mean of every scored verdict of every judge. ``n_scored``,
  ``n_unscored`` and ``n_judge_errors`` count verdicts (answers × judges).
- Speed: :func:`~.aggregates.row_stats` (the cells that count for speed, SPEC §9:
  not failed, cold-start, prompt-cached, contended or throttled; p50/p95 with linear
  interpolation; decode tok/s median); ``ttft_cold_p50_s`` over the first uncached cell of each
  prompt, ``n_cached`` prompt-cache hits, ``n_contended`` cells measured on a contended host.
  ``concurrency``: the model's configured in-flight limit from the bundle's frozen fleet config
  (> 1: speed under load). ``peak_ram_mb`` = max ``sys_used_mb``, ``model_delta_mb`` = max
  ``sys_used_delta_mb`` over the row's ok responses, ``engine_rss_peak_mb`` = max
  ``engine_rss_mb`` over all of them; ``None`` when unmeasured.
- Repeats: ``repeat_stability_pct`` (prompts whose ok repeats gave one answer, of those with at
  least two), ``n_repeat_prompts`` and ``distinct_answers`` per prompt
  (:mod:`~.stability`); every repeat is judged all the same.

Agreement: Krippendorff's α per dimension over the judges' reports, κ on the red flags the
judges gave themselves, Kendall's τ-b between each pair of judges' own rankings (each ranked
from that judge's report and verdicts alone; ``agreement.rankings``).
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from touchstone_ray.bundle import TEMPLATE_VERSION, Layout
from touchstone_ray.errors import BundleError, field_error
from touchstone_ray.pack import Pack
from touchstone_ray.records import SCHEMA_VERSION, EvalResponse, HolisticReport, Verdict
from touchstone_ray.scoring.aggregates import row_stats
from touchstone_ray.scoring.agreement import (
    RedFlagVote,
    aggregate_reports,
    dimension_alpha,
    ranking_tau,
    red_flag_kappa,
    red_flagged_prompts,
)
from touchstone_ray.scoring.formulas import (
    MissingDimensionsError,
    check_tally,
    knock_out_failures,
    passes_ko,
    quality_pct,
    rank_rows,
    rubric_level,
)
from touchstone_ray.scoring.scorecard_model import (
    ROW_STATS_FIGURES,
    Agreement,
    Categories,
    CategoryRow,
    DimensionInfo,
    JudgeCheck,
    JudgeSpread,
    JudgeView,
    PromptRow,
    RowDetails,
    Scorecard,
    ScorecardRow,
)
from touchstone_ray.scoring.stability import repeat_stability
from touchstone_ray.scoring.stats import (
    VariantComparison,
    category_means,
    compare_variants,
    prompt_stats,
)
from touchstone_ray.storage import atomic_write_json, atomic_write_text

__all__ = [
    "Scorecard",
    "ScorecardRow",
    "build_scorecard",
    "load_scorecard",
    "row_id",
    "write_scorecard",
]


def row_id(model: str, variant: str) -> str:
    """``model|variant``: how rankings name a row."""
    return f"{model}|{variant}"


@dataclass(frozen=True)
class _View:
    """Scores of one row from some judges (all of them, or one)."""

    model: str
    variant: str
    dim_scores: dict[str, float]
    missing: list[str]
    quality_pct: float | None
    ko_passed: bool
    ko_reason: str
    red_flagged: list[str]
    mean_answer_score: float | None
    report_status: str


def _view(
    pack: Pack,
    row: tuple[str, str],
    verdicts: Sequence[Verdict],
    reports: Sequence[HolisticReport],
    vote: RedFlagVote,
    failed_checks: Sequence[tuple[str, str]],
) -> _View:
    dims = [d.id for d in pack.dimensions]
    if reports:
        agg = aggregate_reports(reports, dims)
        scores, missing, status = dict(agg.dim_scores), list(agg.missing), str(agg.status)
    else:
        scores, missing, status = {}, list(dims), "missing"
    flagged = red_flagged_prompts(verdicts, vote)
    try:
        quality: float | None = quality_pct(scores, pack)
    except MissingDimensionsError:
        quality = None
    try:
        passed, reason = passes_ko(scores, flagged, pack, failed_checks)
    except MissingDimensionsError:
        passed, reason = False, f"{pack.ko_rule.dimension} nicht bewertet"
    knocked = {prompt for prompt, _ in knock_out_failures(failed_checks, pack)}
    flagged = sorted(set(flagged) | knocked)
    scored = [v.score for v in verdicts if v.score is not None]
    return _View(
        model=row[0],
        variant=row[1],
        dim_scores=scores,
        missing=missing,
        quality_pct=quality,
        ko_passed=passed,
        ko_reason=reason,
        red_flagged=flagged,
        mean_answer_score=statistics.fmean(scored) if scored else None,
        report_status=status,
    )


def _speed(responses: Sequence[EvalResponse]) -> dict[str, float | int | None]:
    stats = row_stats(responses)
    return {name: getattr(stats, name) for name in ROW_STATS_FIGURES}


def _stability(responses: Sequence[EvalResponse]) -> dict[str, Any]:
    stability = repeat_stability(responses)
    return {
        "repeat_stability_pct": stability.stability_pct,
        "n_repeat_prompts": stability.n_prompts,
        "distinct_answers": stability.distinct_answers,
    }


def _by_row(items: Iterable[Any]) -> dict[tuple[str, str], list[Any]]:
    out: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for item in items:
        out[(item.model, item.variant)].append(item)
    return out


def build_scorecard(
    pack: Pack,
    responses: Sequence[EvalResponse],
    verdicts: Sequence[Verdict],
    reports: Sequence[HolisticReport],
    *,
    judges: Sequence[str],
    vote: RedFlagVote,
    simulated: bool,
    aborted_judges: Sequence[str] = (),
    concurrency: Mapping[str, int] | None = None,
    judge_checks: Mapping[str, Mapping[str, Any]] | None = None,
    spreads: Mapping[tuple[str, str], Sequence[float]] | None = None,
) -> Scorecard:
    """The scorecard of ``judges`` (their verdicts and reports only).

    ``responses`` fix the rows (every (model, variant) that has one, in their order).
    ``concurrency``: model label → configured in-flight limit
    (:meth:`touchstone_ray.bundle.Manifest.model_concurrency`).
    ``judge_checks`` (judge id → :func:`~touchstone_ray.judging.checks.judge_check`) goes to the
    top-level ``judge_checks``, for counted and uncounted judges alike; ``unqualified_judges`` lists
    those of them that are not qualified. ``spreads``: (model, variant) → the score spread
    (max − min over ``judge --repeats``) of each verdict of the counted judges; it becomes the
    row's ``details[].judge_spread`` ``{n, mean, max}`` (``None`` without repeats).
    """
    concurrency = dict(concurrency or {})
    judges = list(judges)
    verdicts = [v for v in verdicts if v.judge in judges]
    reports = [r for r in reports if r.judge in judges]
    resp_by_row = _by_row(responses)
    verd_by_row = _by_row(verdicts)
    rep_by_row = _by_row(reports)
    rows: list[ScorecardRow] = []
    details: list[RowDetails] = []
    per_judge: dict[str, list[_View]] = {j: [] for j in judges}
    for row, row_responses in resp_by_row.items():
        row_verdicts = verd_by_row.get(row, [])
        tally = check_tally(row_responses)
        failed = tally.failed_ids
        view = _view(pack, row, row_verdicts, rep_by_row.get(row, []), vote, failed)
        rows.append(
            ScorecardRow(
                model=row[0],
                variant=row[1],
                quality_pct=view.quality_pct,
                rubric_level=rubric_level(view.quality_pct)
                if view.quality_pct is not None
                else None,
                ko_passed=view.ko_passed,
                ko_reason=view.ko_reason,
                red_flagged=view.red_flagged,
                dim_scores=view.dim_scores,
                mean_answer_score=view.mean_answer_score,
                n_scored=sum(1 for v in row_verdicts if v.score is not None),
                n_unscored=sum(1 for v in row_verdicts if v.status.startswith("unscored")),
                n_judge_errors=sum(1 for v in row_verdicts if v.status == "judge_error"),
                concurrency=concurrency.get(row[0]),
                **_speed(row_responses),
                **_stability(row_responses),
                n_checks=tally.n,
                n_checks_failed=tally.failed,
                n_checks_not_measured=tally.not_measured,
                checks_failed=[f"{prompt}/{check}" for prompt, check in failed],
            )
        )
        judge_views: dict[str, JudgeView] = {}
        for judge in judges:
            own = _view(
                pack,
                row,
                [v for v in row_verdicts if v.judge == judge],
                [r for r in rep_by_row.get(row, []) if r.judge == judge],
                "any",
                failed,
            )
            per_judge[judge].append(own)
            judge_views[judge] = JudgeView(
                dim_scores=own.dim_scores,
                missing_dimensions=own.missing,
                quality_pct=own.quality_pct,
                ko_passed=own.ko_passed,
                ko_reason=own.ko_reason,
                red_flagged=own.red_flagged,
                mean_answer_score=own.mean_answer_score,
                report_status=own.report_status,
            )
        details.append(
            RowDetails(
                model=row[0],
                variant=row[1],
                n_answers=len(row_responses),
                n_generation_failed=sum(1 for r in row_responses if not r.ok),
                report_status=view.report_status,
                missing_dimensions=view.missing,
                judges=judge_views,
                judge_spread=_spread((spreads or {}).get(row, [])),
            )
        )
    ranked = rank_rows(rows)
    for rank, ranked_row in ranked:
        ranked_row.rank = rank
    rankings = {
        judge: [row_id(v.model, v.variant) for _, v in rank_rows(views)]
        for judge, views in per_judge.items()
    }
    dims = [d.id for d in pack.dimensions]
    agreement = Agreement(
        red_flag_vote=vote,
        n_judges=len(judges),
        dimension_alpha=dimension_alpha(reports, dims),
        red_flag_kappa=red_flag_kappa(verdicts),
        ranking_tau=ranking_tau(rankings),
        rankings=rankings,
    )
    checks = {k: JudgeCheck.model_validate(v) for k, v in (judge_checks or {}).items()}
    return Scorecard(
        schema_version=SCHEMA_VERSION,
        pack_id=pack.id,
        pack_version=pack.version,
        judges=judges,
        simulated=simulated,
        rows=[r for _, r in ranked],
        agreement=agreement,
        language=pack.language,
        pack_title=pack.title,
        template_version=TEMPLATE_VERSION,
        generated_at=time.time(),
        aborted_judges=list(aborted_judges),
        judge_checks=checks,
        unqualified_judges=[k for k, v in checks.items() if not v.qualified],
        dimensions=[DimensionInfo(id=d.id, name=d.name, weight=d.weight) for d in pack.dimensions],
        categories=_categories(pack, verd_by_row, list(resp_by_row)),
        prompts=[
            PromptRow(
                model=row[0], variant=row[1], prompts=prompt_stats(verd_by_row.get(row, []), pack)
            )
            for row in resp_by_row
        ],
        variant_ab=_variant_ab(pack, responses, verdicts, list(resp_by_row)),
        details=details,
    )


def _spread(values: Sequence[float]) -> JudgeSpread | None:
    """``{n, mean, max}`` of per-verdict score spreads (score points), ``None`` when empty."""
    if not values:
        return None
    return JudgeSpread(n=len(values), mean=statistics.fmean(values), max=max(values))


def _categories(
    pack: Pack, verd_by_row: Mapping[tuple[str, str], list[Verdict]], rows: list[tuple[str, str]]
) -> Categories:
    return Categories(
        names={c.id: c.name for c in pack.categories},
        rows=[
            CategoryRow(
                model=row[0], variant=row[1], means=category_means(verd_by_row.get(row, []), pack)
            )
            for row in rows
        ],
    )


def _variant_ab(
    pack: Pack,
    responses: Sequence[EvalResponse],
    verdicts: Sequence[Verdict],
    rows: list[tuple[str, str]],
) -> list[VariantComparison]:
    """Per model: the pack's first variant (A) against each other variant it ran (B)."""
    order = [v.id for v in pack.prompt_variants]
    out: list[VariantComparison] = []
    for model in dict.fromkeys(m for m, _ in rows):
        ran = [v for v in order if (model, v) in rows]
        for other in ran[1:]:
            comparison = compare_variants(
                model, ran[0], other, verdicts, responses, language=pack.language
            )
            out.append(comparison)
    return out


def write_scorecard(root: Path, card: Scorecard) -> Path:
    """Write ``scorecard.json`` and ``scorecard.md`` into the bundle ``root`` (atomically);
    returns the JSON path."""
    from touchstone_ray.scoring.render import render_markdown

    layout = Layout(root)
    path = layout.scorecard_json
    atomic_write_json(path, card.model_dump(mode="json"))
    atomic_write_text(layout.scorecard_md, render_markdown(card))
    return path


def load_scorecard(root: Path) -> Scorecard:
    """The bundle's ``scorecard.json``, typed; the one reader. The sections after the SPEC §7
    Contract may be missing (they read as their defaults, :mod:`.scorecard_model`). Raises
    :class:`BundleError` when there is none yet (saying to run ``judge``), it is not JSON, or
    a field is missing or of the wrong type (one line naming the file and the field)."""
    path = Layout(root).scorecard_json
    if not root.is_dir():
        raise BundleError(f"{root}: no such bundle folder")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(
            f"{root}: no scorecard yet; run `touchstone-ray judge --bundle {root} "
            "--judge-config <judge.yaml>` first"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a touchstone scorecard")
    try:
        return Scorecard.model_validate(data)
    except ValidationError as exc:
        raise BundleError(f"{path}: {field_error(exc)}") from None
