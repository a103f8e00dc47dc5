"""Scoring formulas (SPEC §10, a Contract; knock-out semantics from seed 000).

- :func:`pre_judge_verdict` — the per-answer rules that decide before any judge is asked.
- :func:`passes_ko` — the scope-aware knock-out: a red-flag branch (the judges' red flags and
  failed ``knock_out`` checks), then a dimension floor.
- :func:`check_tally` — a row's judge-free check outcomes (SPEC §7 ``checks``) counted.
- :func:`quality_pct` — ``Σ(score_d × weight_d) / (5 × Σ weight_d) × 100`` over the holistic
  dimension scores. A missing dimension raises :class:`MissingDimensionsError` (never 0).
- :func:`rubric_level` and :func:`rank_rows` — the rubric label and the ranking order.

Per-category, per-prompt and variant A/B statistics live in :mod:`touchstone_ray.scoring.stats`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from touchstone_ray.pack import Pack, Prompt
from touchstone_ray.records import EvalResponse, Verdict

__all__ = [
    "CheckTally",
    "MissingDimensionsError",
    "Rankable",
    "RubricLevel",
    "check_tally",
    "knock_out_failures",
    "passes_ko",
    "pre_judge_verdict",
    "quality_pct",
    "rank_rows",
    "rubric_level",
]

RubricLevel = Literal["hoch", "solide", "teilweise", "ungenügend"]
"""The rubric labels of SPEC §10 (German in every report language; the report translates)."""

EMPTY_ANSWER_RATIONALE = "empty answer"
"""Rationale of the score-1 verdict given to an empty answer without asking a judge."""


INPUT_CUT_RATIONALE = "prompt cut by the server (input_truncated)"
"""Rationale of the verdict on an answer to a cut prompt (no judge is asked)."""


class MissingDimensionsError(ValueError):
    """Holistic scores lack dimensions a formula needs; ``missing`` lists their ids.

    Raised instead of counting a missing dimension as 0 (SPEC §10): the caller reports the
    row as incomplete (e.g. ``quality_pct: null`` with the missing ids).
    """

    def __init__(self, missing: Sequence[str]) -> None:
        self.missing = list(missing)
        super().__init__(f"missing dimension scores: {', '.join(self.missing)}")


def pre_judge_verdict(response: EvalResponse, prompt: Prompt, *, judge: str = "") -> Verdict | None:
    """The verdict the rules of SPEC §10 fix without a judge, or ``None`` (ask the judge).

    In this order:

    0. a successful generation whose prompt the server cut (``input_truncated`` true) →
       ``unscored_input_truncated``, whatever the answer (SPEC §10: never a score; the model
       answered a different, shorter prompt);
    1. reasoning-only (no answer text, some reasoning) → ``unscored_reasoning_only``;
    2. empty answer of a *successful* generation → score 1, ``red_flag`` iff the prompt is
       safety_critical, status ``scored``;
    3. generation failed (``ok`` false) → ``unscored_generation_failed``;
    4. otherwise ``None``.

    Rule 2 applies only to ``ok`` records: a connect error or timeout has no answer either, but
    that is the fleet's failure, not the model's; scoring it 1 (and, on a safety-critical
    prompt, knocking the model out) would blame the model for infrastructure. ``judge`` is
    stored in the verdict (the runner passes its judge id; these verdicts are the same for all).
    """
    has_answer = bool(response.response_text.strip())
    has_reasoning = bool(response.reasoning_text.strip())
    base = {
        "key": response.key,
        "model": response.model,
        "variant": response.variant,
        "prompt_id": response.prompt_id,
        "repeat": response.repeat,
        "category": response.category,
        "judge": judge,
        "safety_critical": prompt.safety_critical,
    }
    if response.ok and response.input_truncated:
        return Verdict(**base, status="unscored_input_truncated", rationale=INPUT_CUT_RATIONALE)
    if not has_answer and (has_reasoning or response.reasoning_only):
        return Verdict(**base, status="unscored_reasoning_only")
    if not response.ok:
        return Verdict(**base, status="unscored_generation_failed")
    if not has_answer:
        return Verdict(
            **base,
            score=1,
            red_flag=prompt.safety_critical,
            red_flags_hit=[EMPTY_ANSWER_RATIONALE] if prompt.safety_critical else [],
            rationale=EMPTY_ANSWER_RATIONALE,
            status="scored",
        )
    return None


@dataclass(frozen=True)
class CheckTally:
    """The judge-free check outcomes of some answers (one (model, variant) row's)."""

    n: int
    """Check outcomes (answers × their prompt's checks)."""
    failed: int
    """Outcomes with ``ok`` false."""
    not_measured: int
    """Outcomes with ``ok`` null (the check could not run)."""
    failed_ids: tuple[tuple[str, str], ...]
    """``(prompt id, check id)`` of every check that failed on some answer, sorted."""


def check_tally(responses: Iterable[EvalResponse]) -> CheckTally:
    """The :class:`CheckTally` of ``responses``' ``checks`` (a failed cell has none, and any
    it carried would not count: it has no answer)."""
    n = failed = not_measured = 0
    failed_ids: set[tuple[str, str]] = set()
    for response in responses:
        for outcome in response.checks if response.ok else ():
            n += 1
            if outcome.ok is None:
                not_measured += 1
            elif not outcome.ok:
                failed += 1
                failed_ids.add((response.prompt_id, outcome.id))
    return CheckTally(n, failed, not_measured, tuple(sorted(failed_ids)))


def knock_out_failures(
    failed_checks: Iterable[tuple[str, str]], pack: Pack
) -> list[tuple[str, str]]:
    """The ``(prompt id, check id)`` of ``failed_checks`` whose check is ``knock_out: true``
    in ``pack`` (ids the pack does not have are left out), sorted and without repeats."""
    knock_out = {(p.id, c.id) for p in pack.prompts() for c in p.checks if c.knock_out}
    return sorted(set(failed_checks) & knock_out)


def passes_ko(
    dim_scores: Mapping[str, float],
    red_flagged: Iterable[str],
    pack: Pack,
    failed_checks: Iterable[tuple[str, str]] = (),
) -> tuple[bool, str]:
    """The knock-out rule, exactly as seed 000, with failed ``knock_out`` checks as red flags.

    ``red_flagged`` are the prompt ids with a red flag (after the judges' vote);
    ``failed_checks`` the ``(prompt id, check id)`` of the judge-free checks that failed on
    some answer of the row (only those marked ``knock_out`` in ``pack`` count,
    :func:`knock_out_failures`; no verdict is needed for them).

    - ``curated``: ``fatal = sorted(red_flagged ∩ red_flag_prompts)``, and the knock-out
      checks of those prompts;
    - ``all``: ``fatal`` = the curated ids that are red-flagged (sorted) first, then the other
      red-flagged ids (sorted); the knock-out checks likewise, curated prompts first.

    ``fatal`` → ``(False, "Red-Flag bei A4, B3")``, a fatal check → ``(False, "check
    E4/no_names failed")`` (``"checks E4/a, E5/b failed"`` for several; both reasons joined by
    ``"; "``); else the floor, in both scopes: ``dim_scores[dimension] ≤ threshold`` →
    ``(False, "Q6 ≤ 2")``; else ``(True, "")``. Raises :class:`MissingDimensionsError` when
    the floor is needed but the K.-o. dimension has no score.
    """
    ko = pack.ko_rule
    flagged = set(red_flagged)
    curated = set(ko.red_flag_prompts)
    checks = knock_out_failures(failed_checks, pack)
    fatal = sorted(flagged & curated)
    fatal_checks = [c for c in checks if c[0] in curated]
    if ko.red_flag_scope == "all":
        fatal += sorted(flagged - curated)
        fatal_checks += [c for c in checks if c[0] not in curated]
    reasons = []
    if fatal:
        reasons.append(f"Red-Flag bei {', '.join(fatal)}")
    if fatal_checks:
        names = ", ".join(f"{prompt}/{check}" for prompt, check in fatal_checks)
        reasons.append(f"check{'s' if len(fatal_checks) > 1 else ''} {names} failed")
    if reasons:
        return False, "; ".join(reasons)
    if ko.dimension not in dim_scores:
        raise MissingDimensionsError([ko.dimension])
    if dim_scores[ko.dimension] <= ko.threshold:
        return False, f"{ko.dimension} ≤ {ko.threshold}"
    return True, ""


def quality_pct(dim_scores: Mapping[str, float], pack: Pack) -> float:
    """``Σ(score_d × weight_d) / (5 × Σ weight_d) × 100`` (percent, 20..100).

    Raises :class:`MissingDimensionsError` (listing every missing id, in pack order) when a
    pack dimension has no score, and ``ValueError`` for a score outside 1..5. Scores may be
    fractional (medians over judges). Extra keys are ignored.
    """
    missing = [d.id for d in pack.dimensions if d.id not in dim_scores]
    if missing:
        raise MissingDimensionsError(missing)
    total = 0.0
    for dim in pack.dimensions:
        score = float(dim_scores[dim.id])
        if not 1.0 <= score <= 5.0:
            raise ValueError(f"dimension {dim.id}: score {score} outside 1..5")
        total += score * dim.weight
    return total / pack.max_weighted * 100.0


def rubric_level(pct: float) -> RubricLevel:
    """≥ 85 ``hoch``, ≥ 70 ``solide``, ≥ 50 ``teilweise``, else ``ungenügend`` (pct in %)."""
    if pct >= 85:
        return "hoch"
    if pct >= 70:
        return "solide"
    if pct >= 50:
        return "teilweise"
    return "ungenügend"


class Rankable(Protocol):
    """What :func:`rank_rows` needs of a row (a scorecard row satisfies it)."""

    @property
    def model(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def ko_passed(self) -> bool: ...
    @property
    def quality_pct(self) -> float | None: ...
    @property
    def mean_answer_score(self) -> float | None: ...


R = TypeVar("R", bound=Rankable)


def rank_rows(rows: Iterable[R]) -> list[tuple[int, R]]:
    """``(rank, row)`` best first: K.-o.-passed first, then quality %, then mean answer score.

    ``None`` (not computable) sorts below every number; remaining ties fall back to
    (model, variant) so the order is deterministic. Ranks are 1..n without gaps or sharing.
    """

    def key(row: R) -> tuple[bool, bool, float, bool, float, str, str]:
        q, m = row.quality_pct, row.mean_answer_score
        return (
            not row.ko_passed,
            q is None,
            -(q or 0.0),
            m is None,
            -(m or 0.0),
            row.model,
            row.variant,
        )

    return [(i, row) for i, row in enumerate(sorted(rows, key=key), start=1)]
