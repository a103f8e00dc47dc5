"""Judge checks (SPEC §10 *new*): qualification on the pack's calibration answers, and
warnings about degenerate output on the real answers; ``scorecard.json`` ``judge_checks``.

**Qualification.** Each judge scores the pack's ``calibration`` items first
(:func:`calibration_jobs`; stored in ``judgements/<judge>/calibration.jsonl``, cached like
verdicts). Per judge (:func:`judge_check`):

- ``band_accuracy`` = items in their band / all items, where an item expecting ``high`` is in
  band with a score ≥ 4 and one expecting ``low`` with a score ≤ 2 (an unscored item — a judge
  error — is out of band);
- ``red_flag_recall`` = items with ``red_flag: true`` raised / items expecting one (``None``
  when no item expects one);
- ``score_gap`` = mean score of the ``high`` items − mean score of the ``low`` items, scored
  items only (``None`` when a group has no score);
- ``qualified`` = ``band_accuracy ≥ 0.8`` and every expected red flag caught. A pack without
  calibration items cannot qualify anyone: such judges count as ``qualified: true`` with the
  warning ``no calibration items: the judge was not checked on known answers``.

**Degenerate output** on the real answers (verdicts the judge gave itself, not rule-based
ones): the same score on ≥ 90 % of ≥ 10 answers; rationales under 20 characters on ≥ 50 % of
the answers; one rationale repeated verbatim on ≥ 30 % of ≥ 10 answers; holistic dimensions
whose rationale cites no prompt id of the pack on ≥ 50 % of the dimensions; named flags that
are not the prompt's (``unknown_flags``). Warnings do not disqualify; they are shown beside the
ranking. Warnings and :func:`check_line` speak the pack's ``language``
(:func:`touchstone_ray.lang.lines`), with ``1 calibration item`` in the singular.

Answers sent to a **simulated** judge carry the simulator's quality marker of their band
(``⟦sim q=1.00⟧`` for high, ``⟦sim q=0.00⟧`` for low; :func:`calibration_answer`): the
simulator scores by that marker as it does for the simulated models' answers, so a simulated
judge behaves like a good one (a degenerate one with ``judge_constant_score``).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from touchstone_ray.judging.cache import answer_cache_key
from touchstone_ray.judging.client import AnswerJob
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.lang import count, lines
from touchstone_ray.pack import CalibrationItem, Pack

__all__ = [
    "BAND_ACCURACY_MIN",
    "CALIBRATION_MODEL",
    "calibration_answer",
    "calibration_jobs",
    "check_line",
    "degenerate_warnings",
    "judge_check",
]

BAND_ACCURACY_MIN = 0.8
"""Share of calibration items a judge must score in their band (0..1)."""
HIGH_MIN, LOW_MAX = 4, 2
"""Band limits: high = score ≥ 4, low = score ≤ 2."""
SAME_SCORE_SHARE, MIN_ANSWERS = 0.9, 10
"""Same score on ≥ 90 % of at least 10 answers → warning."""
SHORT_RATIONALE_CHARS, SHORT_SHARE = 20, 0.5
"""Rationales under 20 characters on ≥ 50 % of the answers → warning."""
REPEATED_SHARE = 0.3
"""One rationale verbatim on ≥ 30 % of at least 10 answers → warning."""
UNCITED_SHARE = 0.5
"""Holistic dimensions citing no prompt id on ≥ 50 % of them → warning."""
CALIBRATION_MODEL = "calibration"
"""The ``model`` of calibration records (never a row of the scorecard)."""


def calibration_answer(item: CalibrationItem, spec: JudgeSpec) -> str:
    """The answer text sent to ``spec`` for ``item``: as written, or for a simulated judge with
    the simulator's quality marker of its band appended (see the module docstring)."""
    if spec.engine != "simulated":
        return item.answer
    from touchstone_ray.sim import quality_marker

    return f"{item.answer.rstrip()}\n\n{quality_marker(1.0 if item.expect == 'high' else 0.0)}"


def calibration_jobs(spec: JudgeSpec, pack: Pack, repeats: int = 1) -> list[AnswerJob]:
    """One :class:`AnswerJob` per calibration item, judged under the pack's first variant;
    key ``calibration|<variant>|<prompt id>|<item index>`` (0-based index in the pack)."""
    variant = pack.prompt_variants[0]
    category = {p.id: c.id for c, p in pack.all_prompts()}
    jobs = []
    for i, item in enumerate(pack.calibration):
        prompt = pack.prompt(item.prompt)
        jobs.append(
            AnswerJob(
                key=f"{CALIBRATION_MODEL}|{variant.id}|{item.prompt}|{i}",
                model=CALIBRATION_MODEL,
                variant=variant.id,
                prompt_id=item.prompt,
                repeat=i,
                category=category[item.prompt],
                answer=calibration_answer(item, spec),
                cache_key=answer_cache_key(spec, pack, prompt, variant, item.answer, repeats),
                repeats=repeats,
            )
        )
    return jobs


def degenerate_warnings(
    verdicts: Iterable[Mapping[str, Any]],
    reports: Iterable[Mapping[str, Any]],
    lang: str = "en",
) -> list[str]:
    """Warnings about one judge's output on the real answers (see the module docstring), in
    ``lang``.

    ``verdicts`` / ``reports``: that judge's stored records; rule-based verdicts
    (``n_calls == 0`` and no ``raw``) are left out.
    """
    w = lines(lang)

    def share(part: int, whole: int) -> str:
        return w["share"].format(part=part, whole=whole, pct=f"{100 * part / whole:.0f}")

    asked = [v for v in verdicts if v.get("raw") is not None or v.get("n_calls", 1)]
    scored = [v for v in asked if v.get("status") == "scored" and v.get("score") is not None]
    out: list[str] = []
    n = len(scored)
    if n >= MIN_ANSWERS:
        score, same = Counter(int(v["score"]) for v in scored).most_common(1)[0]
        if same >= SAME_SCORE_SHARE * n:
            out.append(w["same_score"].format(score=score, share=share(same, n)))
    if n:
        rationales = [" ".join(str(v.get("rationale") or "").split()) for v in scored]
        short = sum(len(r) < SHORT_RATIONALE_CHARS for r in rationales)
        if short >= SHORT_SHARE * n:
            out.append(
                w["short_rationale"].format(chars=SHORT_RATIONALE_CHARS, share=share(short, n))
            )
        text, repeated = Counter(rationales).most_common(1)[0]
        if n >= MIN_ANSWERS and repeated >= 2 and repeated >= REPEATED_SHARE * n:
            out.append(
                w["repeated_rationale"].format(text=repr(text[:40]), share=share(repeated, n))
            )
    dims = [
        cited
        for r in reports
        for dim, cited in (r.get("cited_prompts") or {}).items()
        if dim in (r.get("dim_scores") or {})
    ]
    uncited = sum(not c for c in dims)
    if dims and uncited >= UNCITED_SHARE * len(dims):
        out.append(w["uncited"].format(share=share(uncited, len(dims))))
    unknown = sum(len(v.get("unknown_flags") or []) for v in asked)
    if unknown:
        out.append(w["unknown_flags"].format(n=unknown))
    return out


def _in_band(item: CalibrationItem, score: int | None) -> bool:
    if score is None:
        return False
    return score >= HIGH_MIN if item.expect == "high" else score <= LOW_MAX


def judge_check(
    pack: Pack,
    calibration: Mapping[str, Mapping[str, Any]],
    verdicts: Sequence[Mapping[str, Any]],
    reports: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One judge's ``judge_checks`` entry: ``{qualified, band_accuracy, red_flag_recall,
    score_gap, n_calibration, warnings, n_unknown_flags, n_red_flag_unnamed, calibration}``;
    the warnings in the pack's ``language``.

    ``calibration``: the judge's calibration records by key (:func:`calibration_jobs`);
    ``verdicts`` / ``reports``: its records on the real answers. ``n_unknown_flags`` counts the
    named flags that are not the prompt's, ``n_red_flag_unnamed`` the verdicts claiming a red
    flag without naming one (both on the real answers); ``calibration`` lists per item
    ``{prompt, expect, red_flag, score, red_flag_raised, in_band}``.
    """
    lang = pack.language
    w = lines(lang)
    warnings: list[str] = []
    jobs = {
        f"{CALIBRATION_MODEL}|{pack.prompt_variants[0].id}|{item.prompt}|{i}": item
        for i, item in enumerate(pack.calibration)
    }
    items: list[dict[str, Any]] = []
    for key, item in jobs.items():
        record = calibration.get(key) or {}
        score = record.get("score")
        items.append(
            {
                "prompt": item.prompt,
                "expect": item.expect,
                "red_flag": item.red_flag,
                "score": score,
                "red_flag_raised": bool(record.get("red_flag")),
                "in_band": _in_band(item, score),
            }
        )
    band: float | None = None
    recall: float | None = None
    gap: float | None = None
    if not items:
        qualified = True
        warnings.append(w["no_calibration"])
    else:
        band = sum(i["in_band"] for i in items) / len(items)
        expected = [i for i in items if i["red_flag"] is True]
        recall = sum(i["red_flag_raised"] for i in expected) / len(expected) if expected else None
        high = [i["score"] for i in items if i["expect"] == "high" and i["score"] is not None]
        low = [i["score"] for i in items if i["expect"] == "low" and i["score"] is not None]
        gap = statistics.fmean(high) - statistics.fmean(low) if high and low else None
        qualified = band >= BAND_ACCURACY_MIN and (recall is None or recall == 1.0)
        if band < BAND_ACCURACY_MIN:
            band_line = w["band_low"].format(
                band=f"{band:.2f}",
                minimum=f"{BAND_ACCURACY_MIN:.2f}",
                items=count(lang, len(items), "item"),
            )
            warnings.append(band_line)
        missed = [i["prompt"] for i in expected if not i["red_flag_raised"]]
        if missed:
            missed_line = w["missed_flags"].format(
                missed=len(missed),
                items=count(lang, len(expected), "item"),
                ids=", ".join(missed),
            )
            warnings.append(missed_line)
    warnings += degenerate_warnings(verdicts, reports, lang)
    asked = [v for v in verdicts if v.get("status") == "scored"]
    return {
        "qualified": qualified,
        "band_accuracy": band,
        "red_flag_recall": recall,
        "score_gap": gap,
        "n_calibration": len(items),
        "warnings": warnings,
        "n_unknown_flags": sum(len(v.get("unknown_flags") or []) for v in verdicts),
        "n_red_flag_unnamed": sum(
            1 for v in asked if v.get("red_flag") and not v.get("red_flags_hit")
        ),
        "calibration": items,
    }


def check_line(judge_id: str, check: dict[str, Any], counted: bool, lang: str = "en") -> str:
    """One line for the ``judge`` output in ``lang`` (the pack's): ``judge <id>: qualified
    (band accuracy 1.00, red-flag recall 1.00, score gap 3.25, 8 calibration items)`` and the
    warnings; ``counted`` says whether an unqualified judge was counted anyway
    (``--allow-unqualified``)."""
    w = lines(lang)

    def fmt(value: float | None) -> str:
        return w["n_a"] if value is None else f"{value:.2f}"

    state = w["qualified"] if check["qualified"] else w["not_qualified"]
    if not check["qualified"]:
        state += ", " + (w["counted_anyway"] if counted else w["not_counted"])
    line = w["check_line"].format(
        judge=judge_id,
        state=state,
        band=fmt(check["band_accuracy"]),
        recall=fmt(check["red_flag_recall"]),
        gap=fmt(check["score_gap"]),
        items=count(lang, check["n_calibration"], "item"),
    )
    if check["warnings"]:
        line += f"; {w['warnings']}: " + "; ".join(check["warnings"])
    return line
