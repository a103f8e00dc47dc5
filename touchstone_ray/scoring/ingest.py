"""An outside rater's filled rating task (``report --unjudged`` → ``rating-task.md``, part A;
``report --critique`` → ``critique-task.md``, part B) taken in as a judge:
``touchstone-ray ingest --bundle B --reply FILE --as NAME``.

The reply holds part A's ``reports``, part B's ``critique`` (with its ``task``; read by
:mod:`.critique`), or both. Every part is checked before anything is written.

The reply is YAML (block or flow style), as the rating task shows it::

    rater: "who or what rated"            # optional, free text
    reports:                              # one entry per model × variant rated (≥ 1)
      - model: m-fast
        variant: baseline
        scores:                           # every dimension of the pack
          Q1: {score: 4, rationale: "…", cited_prompts: [A1, B3]}
          Q2: {score: 3, rationale: "…"}
        red_flagged: [E1]                 # prompt ids with a red flag (optional, default [])

Validation (:func:`load_reply`) rejects, with one :class:`~touchstone_ray.errors.BundleError`
line naming the file and the YAML path: an unreadable file, invalid YAML, a document that is
not a mapping, unknown keys, no reports, a (model, variant) the bundle does not have or rated
twice, an unknown or missing dimension, a score that is not an integer 1..5, and cited or
red-flagged ids that are not prompts of the pack. ``NAME`` must be a valid judge id and not
the folder of a local judge (one with verdicts).

:func:`ingest_reply` stores the reports as ``judgements/<NAME>/reports.jsonl``
(:class:`~touchstone_ray.records.HolisticReport` lines plus ``red_flagged`` and ``source``; no
verdicts: holistic reports only) and ``judgements/<NAME>/ingested.json``. An outside rater is
never part of the scorecard's aggregate; :func:`rater_agreement` compares it with each local
judge of the scorecard, per row both rated:

- ``mean_abs_delta``: per dimension, mean |rater score − judge score|;
- ``ko_concordance``: share of rows where both reach the same K.-o. outcome (the rater's from
  :func:`~.formulas.passes_ko` on its scores, its ``red_flagged`` and the row's failed
  judge-free checks, the judge's from the scorecard's per-judge view);
- ``quality_pct_diff``: mean of (rater quality % − judge quality %).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from touchstone_ray.bundle import (
    JUDGE_ID_PATTERN,
    Bundle,
    JudgeFiles,
    Layout,
    StoredReport,
    judge_ids,
)
from touchstone_ray.errors import BundleError
from touchstone_ray.pack import Pack
from touchstone_ray.records import HolisticReport
from touchstone_ray.scoring.critique import (
    CRITIQUE_FILE,
    INGESTED_MARKER,
    CritiqueError,
    critique_items,
    parse_critique,
)
from touchstone_ray.scoring.formulas import MissingDimensionsError, passes_ko, quality_pct
from touchstone_ray.scoring.scorecard_model import Scorecard
from touchstone_ray.storage import atomic_write_json
from touchstone_ray.yamlio import RuleError, load_yaml_mapping, validate_document

__all__ = [
    "INGESTED_MARKER",
    "RatedDimension",
    "RatedRow",
    "RatingReply",
    "ingest_reply",
    "load_reply",
    "outside_raters",
    "rater_agreement",
    "stored_critique",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class RatedDimension(_Strict):
    """One dimension's rating."""

    score: int = Field(ge=1, le=5, strict=True)
    """Integer 1..5."""
    rationale: str = ""
    """Why; should cite prompt ids."""
    cited_prompts: list[str] = []
    """Prompt ids the rationale relies on."""


class RatedRow(_Strict):
    """The rating of one (model, variant)."""

    model: str = Field(min_length=1)
    variant: str = Field(min_length=1)
    scores: dict[str, RatedDimension]
    """Dimension id → rating; every dimension of the pack."""
    red_flagged: list[str] = []
    """Prompt ids on which the rater saw a red flag."""


class RatingReply(_Strict):
    """A filled rating task."""

    rater: str = ""
    """Who or what rated (free text)."""
    reports: list[RatedRow] = Field(min_length=1)
    """At least one rated row."""


def _check(reply: RatingReply, pack: Pack, rows: set[tuple[str, str]]) -> None:
    dims = [d.id for d in pack.dimensions]
    prompt_ids = {p.id for p in pack.prompts()}
    seen: dict[tuple[str, str], int] = {}
    for i, row in enumerate(reply.reports):
        key = (row.model, row.variant)
        if key not in rows:
            known = ", ".join(f"{m}/{v}" for m, v in sorted(rows))
            raise RuleError(
                f"reports[{i}]", f"no such model/variant in the bundle (has {known})", "/".join(key)
            )
        if key in seen:
            raise RuleError(
                f"reports[{i}]", f"rated twice, first at reports[{seen[key]}]", "/".join(key)
            )
        seen[key] = i
        for dim in row.scores:
            if dim not in dims:
                raise RuleError(
                    f"reports[{i}].scores.{dim}", f"unknown dimension, expected {dims}", dim
                )
        missing = [d for d in dims if d not in row.scores]
        if missing:
            raise RuleError(
                f"reports[{i}].scores", f"missing dimensions {missing}", sorted(row.scores)
            )
        for dim, rated in row.scores.items():
            for j, pid in enumerate(rated.cited_prompts):
                if pid not in prompt_ids:
                    raise RuleError(
                        f"reports[{i}].scores.{dim}.cited_prompts[{j}]", "unknown prompt id", pid
                    )
        for j, pid in enumerate(row.red_flagged):
            if pid not in prompt_ids:
                raise RuleError(f"reports[{i}].red_flagged[{j}]", "unknown prompt id", pid)


def _read_mapping(path: Path) -> dict[str, Any]:
    try:
        return load_yaml_mapping(path, "rating reply")
    except ValueError as exc:
        raise BundleError(f"{path}: {exc}") from None


def load_reply(path: Path, pack: Pack, rows: set[tuple[str, str]]) -> RatingReply:
    """The validated reply at ``path`` for ``pack`` and the bundle's ``rows`` ((model, variant)
    pairs); raises :class:`BundleError` (one line, CLI exit 2) for every rule of the module
    docstring."""
    return _validate_reply(_read_mapping(path), path, pack, rows)


def _validate_reply(
    data: dict[str, Any], path: Path, pack: Pack, rows: set[tuple[str, str]]
) -> RatingReply:
    reply = validate_document(RatingReply, data, str(path), BundleError)
    try:
        _check(reply, pack, rows)
    except RuleError as exc:
        raise BundleError(f"{path}: {exc}") from None
    return reply


def _check_name(bundle: Bundle, name: str) -> None:
    if not re.fullmatch(JUDGE_ID_PATTERN, name):
        raise BundleError(
            f"--as: {name!r} is not a valid judge id (letters, digits, '._-', at most 64)"
        )
    layout = bundle.layout
    if layout.verdicts(name).exists() and not layout.judge_marker(name, INGESTED_MARKER).exists():
        raise BundleError(
            f"--as: {name!r} is a local judge of this bundle (it has verdicts); choose another name"
        )


def _row_quality(pack: Pack, scores: dict[str, float]) -> float | None:
    try:
        return quality_pct(scores, pack)
    except MissingDimensionsError:
        return None


def _check_pair(name: str) -> tuple[str, str]:
    """``(prompt id, check id)`` of a scorecard's ``<prompt>/<check>`` (check ids have no
    ``/``)."""
    prompt, _, check = name.rpartition("/")
    return prompt, check


def rater_agreement(
    pack: Pack, rater_reports: Sequence[StoredReport], card: Scorecard
) -> dict[str, dict[str, Any]]:
    """Local judge id → ``{n_rows, mean_abs_delta: {dim: float|None}, ko_concordance,
    quality_pct_diff}`` of the outside rater's ``rater_reports`` (its stored reports, with
    ``red_flagged``) against each judge of ``card`` (its ``judges`` and per-judge views in
    ``details``). Figures are ``None`` without a common row."""
    views = {(d.model, d.variant): d.judges for d in card.details}
    failed_checks = {  # judge-free: they knock out the rater's view as much as a judge's
        (r.model, r.variant): [_check_pair(name) for name in r.checks_failed] for r in card.rows
    }
    dims = [d.id for d in pack.dimensions]
    out: dict[str, dict[str, Any]] = {}
    for judge in card.judges:
        deltas: dict[str, list[float]] = {d: [] for d in dims}
        same_ko: list[bool] = []
        q_diff: list[float] = []
        for rated in rater_reports:
            view = views.get((rated.model, rated.variant), {}).get(judge)
            if view is None:
                continue
            scores = {k: float(v) for k, v in rated.dim_scores.items()}
            for dim in dims:
                theirs = view.dim_scores.get(dim)
                if theirs is not None:
                    deltas[dim].append(abs(scores[dim] - theirs))
            failed = failed_checks.get((rated.model, rated.variant), [])
            passed, _ = passes_ko(scores, list(rated.red_flagged or []), pack, failed)
            same_ko.append(passed == view.ko_passed)
            mine, theirs_q = _row_quality(pack, scores), view.quality_pct
            if mine is not None and theirs_q is not None:
                q_diff.append(mine - theirs_q)
        out[judge] = {
            "n_rows": len(same_ko),
            "mean_abs_delta": {d: statistics.fmean(v) if v else None for d, v in deltas.items()},
            "ko_concordance": sum(same_ko) / len(same_ko) if same_ko else None,
            "quality_pct_diff": statistics.fmean(q_diff) if q_diff else None,
        }
    return out


def outside_raters(root: Path) -> dict[str, list[StoredReport]]:
    """Outside rater name → its stored reports, for every ``judgements/<NAME>/`` of the
    bundle at ``root`` that carries :data:`INGESTED_MARKER` (sorted by name)."""
    out: dict[str, list[StoredReport]] = {}
    layout = Layout(root)
    for judge in judge_ids(layout):
        if layout.judge_marker(judge, INGESTED_MARKER).exists():
            out[judge] = list(JudgeFiles(layout, judge).reports().values())
    return out


def _is_critique(data: dict[str, Any]) -> bool:
    """The reply carries part B (``critique`` or ``task``)."""
    return "critique" in data or "task" in data


def ingest_reply(bundle_dir: str | Path, reply_path: str | Path, name: str) -> dict[str, Any]:
    """Validate the reply at ``reply_path`` and store it as outside rater ``name`` in the bundle;
    returns ``{"rows": n, "agreement": rater_agreement(...) or {}, "critiqued": m}`` (agreement
    empty without a scorecard or without part A; ``critiqued``: part B items rated, only when
    the reply has part B). A second ingest under the same name replaces the first (the last
    record per row wins; a new critique replaces the old). Raises :class:`BundleError` (exit 2)
    before writing anything."""
    from touchstone_ray.scoring.scorecard import load_scorecard

    bundle = Bundle.open(Path(bundle_dir))
    pack = bundle.pack()
    rows = {(str(r.get("model")), str(r.get("variant"))) for r in bundle.responses()}
    _check_name(bundle, name)
    path = Path(reply_path)
    data = _read_mapping(path)
    part_b: dict[str, Any] = {k: data.pop(k) for k in ("critique", "task") if k in data}
    critique: dict[str, Any] | None = None
    if part_b:
        items = critique_items(bundle.root, pack)
        # without part A every other key must be part B's (an unknown one is refused there)
        seen = {"rater": data.get("rater", ""), **part_b} if "reports" in data else data | part_b
        try:
            rater, rated = parse_critique(seen, items)
        except CritiqueError as exc:
            raise BundleError(f"{path}: {exc}") from None
        by_id = {it.id: it for it in items}
        critique = {
            "rater": rater,
            "task": part_b.get("task"),
            "reply": str(path.resolve()),
            "ingested_at": time.time(),
            "items": [{**asdict(by_id[i]), "rates": r} for i, r in rated.items()],
        }
    reply = _validate_reply(data, path, pack, rows) if "reports" in data or not part_b else None
    store = JudgeFiles(Layout(bundle.root), name)
    store.folder.mkdir(parents=True, exist_ok=True)
    records = []
    try:
        for row in reply.reports if reply else []:
            report = HolisticReport(
                model=row.model,
                variant=row.variant,
                judge=name,
                dim_scores={d: r.score for d, r in row.scores.items()},
                dim_rationales={d: r.rationale for d, r in row.scores.items()},
                cited_prompts={d: list(r.cited_prompts) for d, r in row.scores.items()},
            )
            record = {
                **report.model_dump(mode="json"),
                "red_flagged": sorted(set(row.red_flagged)),
                "source": "ingest",
            }
            store.write_report(record)
            records.append(StoredReport.model_validate(record))
    finally:
        store.close()
    if critique is not None:
        atomic_write_json(bundle.layout.judge_marker(name, CRITIQUE_FILE), critique)
    marker = bundle.layout.judge_marker(name, INGESTED_MARKER)
    before: dict[str, Any] = {}
    if marker.exists():
        try:
            before = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            before = {}
    atomic_write_json(
        marker,
        {
            "name": name,
            "rater": reply.rater if reply else str(critique["rater"] if critique else ""),
            "reply": str(path.resolve()),
            "ingested_at": time.time(),
            "rows": len(records) if reply else int(before.get("rows", 0)),
        },
    )
    result: dict[str, Any] = {"rows": len(records), "agreement": {}}
    if critique is not None:
        result["critiqued"] = len(critique["items"])
    if not records:
        return result
    try:
        card = load_scorecard(bundle.root)
    except BundleError:
        return result
    result["agreement"] = rater_agreement(pack, records, card)
    return result


def stored_critique(root: Path, name: str) -> dict[str, Any] | None:
    """The critique stored for outside rater ``name`` (``judgements/<NAME>/critique.json``),
    or ``None``."""
    path = Layout(root).judge_marker(name, CRITIQUE_FILE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def agreement_json(result: dict[str, Any]) -> str:
    """``result`` of :func:`ingest_reply` as indented JSON (for printing)."""
    return json.dumps(result, ensure_ascii=False, indent=2)
