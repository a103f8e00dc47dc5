"""Parsing a judge's reply (SPEC §10, a Contract: any model can be a judge).

Per answer the judge answers ``{"score": 1-5, "red_flag": bool, "rationale": str}`` with
optional ``red_flags_hit`` / ``green_flags_hit`` lists. The parser is tolerant of form and
strict about values:

- accepted: a bare JSON object; fenced JSON (```` ```json … ``` ````); JSON after prose (the
  first balanced ``{…}`` that parses); trailing commas; ``<think>…</think>`` before it; a bare
  numeric reply (``"3"``, ``"score: 4"``) and ``"4/5"`` — a fraction only with denominator 5;
  a score given as such a string inside the JSON; ``4.0``.
- rejected (a :class:`ParseFailure`, which the runner stores as ``judge_error`` — unscored,
  never a low score): no JSON and no number (a refusal is named as such), truncated JSON,
  a missing ``score``, a score outside 1..5 (``0``, ``6``, ``85``, ``"7/20"``; no clamping),
  a non-integer score (``3.5``; no rounding), a ``red_flag`` that is not a boolean.
- defaults: missing lists → ``[]``; a missing ``red_flag`` → ``false``; a missing rationale
  → ``""``.

Holistic replies ``{"<dim id>": {"score": 1-5, "rationale": str, "cited_prompts"?: [ids]}}``
(or a bare number per dimension) parse per dimension: a dimension that is missing or invalid
is listed in :attr:`ParsedHolistic.missing` (status ``degraded``), never scored 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from touchstone_ray.judging._jsonscan import THINK_RE, extract_json_object
from touchstone_ray.records import HolisticReport

__all__ = [
    "ParseFailure",
    "ParsedHolistic",
    "ParsedVerdict",
    "extract_json_object",
    "extract_prompt_ids",
    "parse_answer_reply",
    "parse_holistic_reply",
    "parse_score",
]

SCORE_MIN = 1
SCORE_MAX = 5

_NUMERIC_RE = re.compile(
    r"(?:(?:score|punkte|bewertung)\s*[:=]?\s*)?"
    r"(?P<num>[+-]?\d+(?:\.\d+)?)\s*(?:/\s*(?P<den>\d+(?:\.\d+)?))?\s*\.?",
    re.IGNORECASE,
)
_REFUSAL_RE = re.compile(
    r"\b(i\s*(?:'m|am)\s+sorry|i\s+(?:can(?:'|no)t|cannot|won't|will\s+not)|"
    r"unable\s+to|as\s+an\s+ai|es\s+tut\s+mir\s+leid|ich\s+kann\s+(?:das\s+)?(?:nicht|keine)|"
    r"ich\s+darf\s+(?:das\s+)?nicht)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParseFailure:
    """A reply that could not be used; stored as a ``judge_error`` verdict with ``raw``."""

    reason: str
    """One line saying why, e.g. ``score 85 out of range 1..5``."""
    status: Literal["judge_error"] = "judge_error"


@dataclass(frozen=True)
class ParsedVerdict:
    """A usable per-answer reply."""

    score: int
    """1..5."""
    red_flag: bool = False
    rationale: str = ""
    red_flags_hit: list[str] = field(default_factory=list)
    green_flags_hit: list[str] = field(default_factory=list)
    status: Literal["scored"] = "scored"


@dataclass(frozen=True)
class ParsedHolistic:
    """A usable holistic reply: the dimensions it scored and those it did not."""

    dim_scores: dict[str, int]
    """Dimension id → score 1..5, only for dimensions answered validly."""
    dim_rationales: dict[str, str]
    cited_prompts: dict[str, list[str]]
    """Dimension id → prompt ids cited (given by the judge, else found in the rationale)."""
    missing: dict[str, str]
    """Dimension id → why it has no score (absent or invalid); empty when complete."""

    @property
    def status(self) -> Literal["ok", "degraded"]:
        """``degraded`` when any dimension is missing."""
        return "degraded" if self.missing else "ok"

    def to_report(self, *, model: str, variant: str, judge: str) -> HolisticReport:
        """The :class:`~touchstone_ray.records.HolisticReport` record for this reply."""
        return HolisticReport(
            model=model,
            variant=variant,
            judge=judge,
            dim_scores=dict(self.dim_scores),
            dim_rationales=dict(self.dim_rationales),
            cited_prompts={k: list(v) for k, v in self.cited_prompts.items()},
            status=self.status,
        )


class _Invalid(ValueError):
    """A value that breaks the contract; its message becomes the failure reason."""


def parse_score(value: object) -> int:
    """A score 1..5 from an int, an integral float, ``"4"`` or ``"4/5"``; raises ``ValueError``.

    Rejects (no clamping, no rounding): out-of-range values, non-integers, booleans, and a
    fraction whose denominator is not 5.
    """
    if isinstance(value, bool) or value is None:
        raise _Invalid(f"score {value!r} is not a number")
    if isinstance(value, str):
        match = _NUMERIC_RE.fullmatch(value.strip())
        if match is None:
            raise _Invalid(f"score {value!r} is not a number")
        den = match.group("den")
        if den is not None and float(den) != SCORE_MAX:
            raise _Invalid(f"score {value.strip()!r}: denominator must be {SCORE_MAX}")
        value = float(match.group("num"))
    if not isinstance(value, int | float):
        raise _Invalid(f"score {value!r} is not a number")
    if isinstance(value, float) and not value.is_integer():
        raise _Invalid(f"score {value} is not an integer")
    score = int(value)
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise _Invalid(f"score {score} out of range {SCORE_MIN}..{SCORE_MAX}")
    return score


def _as_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "yes", "no"}:
        return value.strip().lower() in {"true", "yes"}
    raise _Invalid(f"red_flag {value!r} is not a boolean")


def _as_text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [item if isinstance(item, str) else _as_text(item) for item in value]
    return [_as_text(value)]


def _lower_keys(obj: dict[str, Any]) -> dict[str, Any]:
    return {str(k).strip().lower(): v for k, v in obj.items()}


def _no_json_reason(text: str, reason: str) -> str:
    if not text.strip():
        return "empty reply"
    if _REFUSAL_RE.search(text):
        return "refusal: the judge declined to score"
    return reason


def parse_answer_reply(raw: str) -> ParsedVerdict | ParseFailure:
    """Parse one per-answer judge reply (see the module docstring for what is accepted)."""
    text = THINK_RE.sub("", raw).strip()
    if _NUMERIC_RE.fullmatch(text):
        try:
            return ParsedVerdict(score=parse_score(text))
        except _Invalid as exc:
            return ParseFailure(str(exc))
    found = extract_json_object(text)
    if isinstance(found, str):
        return ParseFailure(_no_json_reason(text, found))
    obj = _lower_keys(found)
    if "score" not in obj:
        return ParseFailure("missing 'score'")
    try:
        return ParsedVerdict(
            score=parse_score(obj["score"]),
            red_flag=_as_bool(obj.get("red_flag")),
            rationale=_as_text(obj.get("rationale")),
            red_flags_hit=_as_list(obj.get("red_flags_hit")),
            green_flags_hit=_as_list(obj.get("green_flags_hit")),
        )
    except _Invalid as exc:
        return ParseFailure(str(exc))


def extract_prompt_ids(text: str, known: Collection[str] | None = None) -> list[str]:
    """Prompt ids cited in ``text``, in order of first appearance, without duplicates.

    With ``known`` ids, any of them standing alone (``B3``) or bracketed (``[B3]``) counts;
    without, only bracketed ids of the form ``[A1]`` (a bare ``Q1`` could be a dimension).
    """
    if known:
        alternatives = "|".join(re.escape(k) for k in sorted(known, key=len, reverse=True))
        pattern = re.compile(rf"(?<![\w-])({alternatives})(?![\w-])")
    else:
        pattern = re.compile(r"\[([A-Za-z]{1,3}[0-9]{1,3})\]")
    return list(dict.fromkeys(pattern.findall(text)))


def parse_holistic_reply(
    raw: str, dimension_ids: Sequence[str], prompt_ids: Collection[str] | None = None
) -> ParsedHolistic | ParseFailure:
    """Parse a holistic reply for ``dimension_ids``; ``prompt_ids`` filters citations.

    A failure only when no JSON object is found at all; otherwise every dimension that is
    absent or invalid lands in ``missing`` with its reason. Cited prompt ids given by the judge
    are kept when known (unknown ones dropped); when none remain they are taken from the
    rationale via :func:`extract_prompt_ids`.
    """
    text = THINK_RE.sub("", raw).strip()
    found = extract_json_object(text)
    if isinstance(found, str):
        return ParseFailure(_no_json_reason(text, found))
    by_lower = {str(k).strip().lower(): v for k, v in found.items()}
    scores: dict[str, int] = {}
    rationales: dict[str, str] = {}
    cited: dict[str, list[str]] = {}
    missing: dict[str, str] = {}
    for dim in dimension_ids:
        entry = by_lower.get(dim.lower())
        if entry is None:
            missing[dim] = "missing"
            continue
        body = _lower_keys(entry) if isinstance(entry, dict) else {"score": entry}
        try:
            scores[dim] = parse_score(body.get("score"))
        except _Invalid as exc:
            missing[dim] = str(exc)
            continue
        rationales[dim] = _as_text(body.get("rationale"))
        given = [
            p for p in _as_list(body.get("cited_prompts")) if not prompt_ids or p in prompt_ids
        ]
        cited[dim] = list(dict.fromkeys(given)) or extract_prompt_ids(rationales[dim], prompt_ids)
    if not scores:
        return ParseFailure(
            "no dimension scored: " + "; ".join(f"{d}: {r}" for d, r in missing.items())
        )
    return ParsedHolistic(scores, rationales, cited, missing)
