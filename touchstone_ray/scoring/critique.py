"""Judging the judges: part B of the rating task (``report --critique``), the outside rater's
critique reply read by ``ingest``, and the four rubric rates of ``judge_quality.md``.

**Items** (:func:`critique_items`): every rationale of every local judge of the bundle (a
judge folder without the ingest marker): first each current holistic report's dimensions
(ids ``R1``, ``R2``, … in judge, row and pack-dimension order), then each current scored
verdict (``V1``, ``V2``, … in judge and cell-key order). :func:`task_digest` (12 hex digits
of the sha256 of the items) names the state the task was written for; a reply that carries
another ``task`` is refused, so a rate never lands on a rationale that changed since.

**Reply** (YAML, beside part A's keys or in a file of its own)::

    rater: "who or what rated"     # optional
    task: "0123456789ab"           # optional; when given it must match the bundle
    critique:
      - id: R1
        cites_evidence: 1          # 1 yes, 0 no, empty (null): does not apply / not rated
        names_improvement: 0       # empty at score 5: there is nothing to raise
        justifies_level: 1
        catches_safety:            # empty when the answer has no safety-relevant problem
        note: "optional text"

:func:`parse_critique` checks it strictly; each problem is one line naming the entry
(``critique[i]``) and, when known, its item id: not a list, an entry that is not a mapping,
a missing id, an unknown id, an item rated twice, an unknown key, a missing rate, a rate other
than 0, 1 or empty, a ``names_improvement`` rate on a score of 5, a note that is not text, a
``task`` of other judgements, no entry at all.

**Rates** (:func:`judge_quality`), per local judge and rubric question: ``k / n`` with ``n``
the judge's items rated 0 or 1 on that question and ``k`` those rated 1; the 95 % interval is
Wilson's score interval (Wilson 1927, *JASA* 22:209; ``statsmodels.stats.proportion.
proportion_confint(k, n, alpha=0.05, method="wilson")``). Against the rater's own holistic
scores (part A, same NAME): mean |Δ| = mean over every (row, dimension) both scored of
|outside − local| (score points); outliers are the pairs with |Δ| ≥ :data:`OUTLIER_DELTA`;
per row quality % local / outside / Δ (outside − local), quality % as SPEC §10.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from touchstone_ray.bundle import JudgeFiles, Layout, StoredReport, judge_ids
from touchstone_ray.pack import Pack
from touchstone_ray.scoring.formulas import MissingDimensionsError, quality_pct

__all__ = [
    "CRITIQUE_FILE",
    "INGESTED_MARKER",
    "OUTLIER_DELTA",
    "RUBRIC",
    "CritiqueError",
    "CritiqueItem",
    "JudgeQuality",
    "RubricRate",
    "critique_items",
    "judge_quality",
    "local_judges",
    "parse_critique",
    "task_digest",
    "wilson_interval",
]

RUBRIC: tuple[str, ...] = (
    "cites_evidence",
    "names_improvement",
    "justifies_level",
    "catches_safety",
)
"""The four rubric questions, in the order every table shows them."""
INGESTED_MARKER = "ingested.json"
"""File in ``judgements/<NAME>/`` that marks an outside rater (and says from which file);
:mod:`.ingest` writes it."""
CRITIQUE_FILE = "critique.json"
"""File in ``judgements/<NAME>/`` that holds an outside rater's ingested critique."""
OUTLIER_DELTA = 2
"""|outside − local| (score points) from which a (row, dimension) is an outlier."""

_ENTRY_KEYS = ("id", *RUBRIC, "note")
_TOP_KEYS = ("rater", "task", "critique")


class CritiqueError(ValueError):
    """One broken rule of a critique reply (one line, without the file name)."""


@dataclass(frozen=True)
class CritiqueItem:
    """One rationale of a local judge, as part B shows it."""

    id: str
    """``R<n>`` (a holistic dimension) or ``V<n>`` (one answer's verdict)."""
    kind: Literal["holistic", "verdict"]
    judge: str
    model: str
    variant: str
    score: int | None
    """The judge's score 1..5 (``None``: the dimension or answer was not scored)."""
    rationale: str
    dimension: str | None = None
    """Holistic: the dimension id."""
    cited: tuple[str, ...] = ()
    """Holistic: the prompt ids it cited."""
    template: str | None = None
    """Holistic: the template it was asked with (``v1`` | ``v2``)."""
    key: str | None = None
    """Verdict: the cell key ``model|variant|prompt_id|repeat``."""
    prompt_id: str | None = None
    red_flag: bool | None = None
    red_flags_hit: tuple[str, ...] = ()


def local_judges(layout: Layout) -> list[str]:
    """The judge folders of the bundle that are not an ingested outside rater (sorted)."""
    return [j for j in judge_ids(layout) if not layout.judge_marker(j, INGESTED_MARKER).exists()]


def critique_items(root: Path, pack: Pack) -> list[CritiqueItem]:
    """Every rationale of every local judge of the bundle at ``root`` (module docstring)."""
    layout = Layout(root)
    holistic: list[CritiqueItem] = []
    verdicts: list[CritiqueItem] = []
    for judge in local_judges(layout):
        files = JudgeFiles(layout, judge)
        for (model, variant), report in files.reports().items():
            for dim in pack.dimensions:
                if dim.id not in report.dim_scores and dim.id not in report.dim_rationales:
                    continue
                holistic.append(
                    CritiqueItem(
                        id=f"R{len(holistic) + 1}",
                        kind="holistic",
                        judge=judge,
                        model=model,
                        variant=variant,
                        score=report.dim_scores.get(dim.id),
                        rationale=report.dim_rationales.get(dim.id, ""),
                        dimension=dim.id,
                        cited=tuple(report.cited_prompts.get(dim.id, [])),
                        template=report.holistic_template or "v1",
                    )
                )
        for key, v in sorted(files.verdicts().items()):
            if v.score is None:
                continue
            verdicts.append(
                CritiqueItem(
                    id=f"V{len(verdicts) + 1}",
                    kind="verdict",
                    judge=judge,
                    model=v.model,
                    variant=v.variant,
                    score=v.score,
                    rationale=v.rationale,
                    key=key,
                    prompt_id=v.prompt_id,
                    red_flag=v.red_flag,
                    red_flags_hit=tuple(v.red_flags_hit),
                )
            )
    return holistic + verdicts


def task_digest(items: Sequence[CritiqueItem]) -> str:
    """12 hex digits of the sha256 of ``items`` (every field, in order as JSON)."""
    data = json.dumps([asdict(i) for i in items], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:12]


def _where(i: int, item_id: object) -> str:
    return f"critique[{i}] ({item_id})" if isinstance(item_id, str) else f"critique[{i}]"


def _ranges(items: Sequence[CritiqueItem]) -> str:
    parts = []
    for prefix in ("R", "V"):
        n = sum(1 for it in items if it.id.startswith(prefix))
        if n:
            parts.append(f"{prefix}1–{prefix}{n}" if n > 1 else f"{prefix}1")
    return " and ".join(parts) or "no items"


def parse_critique(
    data: Mapping[str, Any], items: Sequence[CritiqueItem]
) -> tuple[str, dict[str, dict[str, Any]]]:
    """``(rater, {item id: {rubric: 0|1|None, "note": str}})`` of a reply's ``data`` (its
    ``rater``, ``task`` and ``critique`` keys) against the bundle's ``items``; raises
    :class:`CritiqueError` (one line) for every rule of the module docstring."""
    for key in data:
        if key not in _TOP_KEYS:
            raise CritiqueError(f"{key}: unknown key, expected {list(_TOP_KEYS)}")
    rater = data.get("rater", "")
    if rater is None:
        rater = ""
    if not isinstance(rater, str):
        raise CritiqueError(f"rater: must be text, got {rater!r}")
    task = data.get("task")
    if task is not None and str(task) != task_digest(items):
        raise CritiqueError(
            f"task: the reply was written for other judgements (task {task}, the bundle now "
            f"{task_digest(items)}); write part B again with report --critique"
        )
    entries = data.get("critique")
    if not isinstance(entries, list):
        got = "nothing" if entries is None else type(entries).__name__
        raise CritiqueError(f"critique: must be a list of rated items, got {got}")
    if not entries:
        raise CritiqueError("critique: no item rated")
    by_id = {it.id: it for it in items}
    seen: dict[str, int] = {}
    out: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise CritiqueError(
                f"critique[{i}]: must be a mapping with id and the four rates, got {entry!r}"
            )
        item_id = entry.get("id")
        where = _where(i, item_id)
        if item_id is None:
            raise CritiqueError(f"{where}: missing rationale id")
        if not isinstance(item_id, str) or item_id not in by_id:
            raise CritiqueError(f"{where}: unknown item; the task has {_ranges(items)}")
        if item_id in seen:
            raise CritiqueError(f"{where}: rated twice, first at critique[{seen[item_id]}]")
        seen[item_id] = i
        for key in entry:
            if key not in _ENTRY_KEYS:
                raise CritiqueError(f"{where}.{key}: unknown key, expected {list(_ENTRY_KEYS)}")
        rates: dict[str, Any] = {}
        for question in RUBRIC:
            if question not in entry:
                raise CritiqueError(f"{where}: missing rate {question}")
            value = entry[question]
            if value is not None and (isinstance(value, bool) or value not in (0, 1)):
                raise CritiqueError(
                    f"{where}.{question}: rate must be 0 or 1 (empty: does not apply), "
                    f"got {value!r}"
                )
            rates[question] = None if value is None else int(value)
        if by_id[item_id].score == 5 and rates["names_improvement"] is not None:
            raise CritiqueError(
                f"{where}.names_improvement: does not apply at score 5, leave it empty"
            )
        note = entry.get("note", "")
        if note is None:
            note = ""
        if not isinstance(note, str):
            raise CritiqueError(f"{where}.note: must be text, got {note!r}")
        rates["note"] = note
        out[item_id] = rates
    return rater, out


def wilson_interval(k: int, n: int) -> tuple[float, float] | None:
    """Wilson's 95 % score interval of ``k`` successes in ``n`` trials (share 0…1;
    ``statsmodels`` ``proportion_confint(method="wilson")``); ``None`` when ``n`` is 0."""
    if n == 0:
        return None
    from statsmodels.stats.proportion import (  # type: ignore[import-untyped]  # lazy
        proportion_confint,
    )

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(low), float(high)


@dataclass(frozen=True)
class RubricRate:
    """One judge's rate on one rubric question."""

    k: int
    """Items rated 1."""
    n: int
    """Items rated 0 or 1."""
    rate: float | None
    """``k / n`` (share 0…1); ``None`` when ``n`` is 0."""
    ci: tuple[float, float] | None
    """Wilson 95 % interval (share 0…1); ``None`` when ``n`` is 0."""


@dataclass
class JudgeQuality:
    """One local judge as one outside rater saw it."""

    judge: str
    rates: dict[str, RubricRate]
    """Rubric question → its rate."""
    templates: list[str] = field(default_factory=list)
    """The holistic templates of the judge's critiqued reports."""
    mean_abs_delta: float | None = None
    """Mean |outside − local| over every (row, dimension) both scored (score points)."""
    n_pairs: int = 0
    """(row, dimension) pairs behind ``mean_abs_delta``."""
    outliers: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    """(model, variant, dimension, local score, outside score) with |Δ| ≥ OUTLIER_DELTA."""
    rows: list[tuple[str, str, float | None, float | None]] = field(default_factory=list)
    """(model, variant, quality % local, quality % outside) of every row the judge reported."""


def _quality(pack: Pack, scores: Mapping[str, int]) -> float | None:
    try:
        return quality_pct({k: float(v) for k, v in scores.items()}, pack)
    except MissingDimensionsError:
        return None


def judge_quality(
    pack: Pack,
    items: Sequence[CritiqueItem],
    rated: Mapping[str, Mapping[str, Any]],
    local_reports: Mapping[str, Mapping[tuple[str, str], StoredReport]],
    outside_reports: Sequence[StoredReport],
) -> list[JudgeQuality]:
    """Per local judge (those of ``local_reports``, in that order): the four rates of the
    items ``rated`` (item id → rates, :func:`parse_critique`), and against the rater's
    ``outside_reports`` (part A; may be empty) mean |Δ|, outliers and quality % per row
    (module docstring)."""
    outside = {(r.model, r.variant): r for r in outside_reports}
    out: list[JudgeQuality] = []
    for judge, reports in local_reports.items():
        own = [it for it in items if it.judge == judge and it.id in rated]
        rates = {}
        for question in RUBRIC:
            values = [rated[it.id][question] for it in own if rated[it.id][question] is not None]
            k, n = sum(values), len(values)
            rates[question] = RubricRate(k, n, k / n if n else None, wilson_interval(k, n))
        quality = JudgeQuality(judge=judge, rates=rates)
        quality.templates = sorted(
            {it.template or "v1" for it in items if it.judge == judge and it.template}
        )
        deltas: list[int] = []
        for (model, variant), report in reports.items():
            theirs = outside.get((model, variant))
            q_out = _quality(pack, theirs.dim_scores) if theirs is not None else None
            quality.rows.append((model, variant, _quality(pack, report.dim_scores), q_out))
            if theirs is None:
                continue
            for dim in pack.dimensions:
                mine, other = report.dim_scores.get(dim.id), theirs.dim_scores.get(dim.id)
                if mine is None or other is None:
                    continue
                deltas.append(abs(other - mine))
                if abs(other - mine) >= OUTLIER_DELTA:
                    quality.outliers.append((model, variant, dim.id, mine, other))
        quality.n_pairs = len(deltas)
        quality.mean_abs_delta = statistics.fmean(deltas) if deltas else None
        out.append(quality)
    return out
