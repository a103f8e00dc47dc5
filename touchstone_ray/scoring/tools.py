"""The figures of a tools bundle (SPEC §7c): per model and per item, and ``summary.json``.

**Reading** (:func:`load_tools_bundle`): ``bundle.json`` must say ``kind: tools``; the pack is
the frozen ``pack.yaml`` (:func:`~touchstone_ray.toolpack.load_tools_pack`); the cells are
every ``cells/*.jsonl`` read tolerantly (SPEC §7 reading rules: a torn last line is skipped, a
malformed line or one that is not a :class:`~touchstone_ray.tool_records.ToolsRecord` is
skipped with a warning and counted, records de-duplicate by ``key``: an ok record wins, the
first ok wins). Only records of the pack's items count. Nothing is written while reading.

**Planned cells** per model: Σ ``repeats`` of the items the run selected: the manifest's
``selection`` ``{"items": [ids]}`` (``--items``) or ``{"limit": N}`` (``--limit``, the first N
items in pack order), else every item.

**Per model** (:class:`ModelFigures`), over that model's records:

- a cell is *scored* when ``ok`` and ``passed`` is not null (at least one check measured);
  ``passed`` counts scored cells with ``passed: true``; ``pass_share = passed / scored``
  (0…1) with Wilson's 95 % score interval (``statsmodels`` ``proportion_confint(method=
  "wilson")``, :func:`~touchstone_ray.scoring.critique.wilson_interval`). Transport errors
  (``ok: false``) are not model results: out of the share, counted apart; an ok cell whose
  every check was not measured is ``not_scored``.
- checks ``ok`` / ``failed`` / ``not measured`` (``ok`` null): every check outcome of the
  model's ok cells.
- ``length_cutoffs``: ok cells with ``finish_reason: length`` in any turn;
  ``empty_args``: calls whose arguments are empty (``{}``, ``[]``, ``""``, null) to a tool
  whose schema has ``required`` parameters or that the pack does not have (the
  ``no_empty_args`` rule, counted over every call); ``schema_errors``: failed
  ``schema_valid`` checks; ``transport_errors``: cells with ``ok: false``; ``http_4xx``: of
  those, ``error_kind: http_4xx`` (a server that refused the request).
- tokens per cell = Σ over its turns (a turn without a count adds nothing; a cell without any
  count has none): completion and reasoning, median per cell and total (tokens), ok cells.
- ``run_s_total`` = Σ ``run_s`` (s); ``run_s_median`` per cell (s); ``wall_s`` = last
  ``t_end`` − first ``t_start`` of the model's cells (s); ``turns_median`` per ok cell;
  ``decode_tps_median`` = median over the turns of ok cells, neither contended nor
  throttled, of (completion tokens − 1) / (e2e − TTFT) (SPEC §9; tokens/s; a turn with
  fewer than 2 tokens or no time after its first token is left out).

**Per item** (:class:`ItemRow`), per model (:class:`ItemCells`): the mark ``✓`` (every scored
cell passed), ``✗`` (none did), ``k/n`` (some), ``–`` (none scored); checks ok of measured;
finish reasons of every turn counted; calls per turn of each cell (``[[1, 0], …]`` one list
per cell, repeats in order); the ids of the checks that failed, and of those not measured.

**summary.json** (:func:`write_tools_summary`; ``ToolsSummary.model_dump(mode="json")``)::

    {"schema_version": 1, "kind": "tools",
     "pack_id", "pack_version", "pack_title", "language",
     "pack_fingerprint", "checks_fingerprint",     # the manifest's, else the pack's
     "simulated": bool, "status": "running|done|failed|null",
     "n_items": int,                               # items selected
     "malformed_lines": int,                       # lines skipped while reading
     "models": [{"model", "engine", "hosts": [..], "cells_planned", "cells", "cells_missing",
                 "scored", "passed", "failed", "not_scored", "pass_share",
                 "pass_ci_low", "pass_ci_high",
                 "checks_ok", "checks_failed", "checks_not_measured",
                 "length_cutoffs", "calls", "empty_args", "schema_errors",
                 "transport_errors", "http_4xx",
                 "completion_tokens_median", "completion_tokens_total",
                 "reasoning_tokens_median", "reasoning_tokens_total",
                 "run_s_total", "run_s_median", "wall_s", "turns_median",
                 "decode_tps_median"}, ...],       # fleet config order
     "items": [{"item_id", "title", "checks": [ids],
                "models": {"<model>": {"cells", "scored", "passed", "mark",
                                       "checks_ok", "checks_measured",
                                       "finish_reasons": {"<reason>": n},
                                       "calls_per_turn": [[n, ...], ...],
                                       "failed_checks": [ids], "not_measured": [ids],
                                       "transport_errors"}}}, ...],   # pack order
     "pass_speed": [{"model", "pass_share", "pass_ci_low", "pass_ci_high",
                     "run_s_median", "decode_tps_median"}, ...]}

Shares are 0…1, times s, tokens tokens, speed tokens/s; ``null`` means not measured.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from touchstone_ray.bundle import Layout, Manifest, ShardFolder, read_manifest
from touchstone_ray.descriptive import median
from touchstone_ray.errors import BundleError, PackError
from touchstone_ray.scoring.critique import wilson_interval
from touchstone_ray.storage import ShardScan, atomic_write_json, dedupe_by_key, iter_jsonl
from touchstone_ray.tool_records import ToolsRecord
from touchstone_ray.toolpack import ToolItem, ToolsPack, load_tools_pack

__all__ = [
    "SUMMARY_SCHEMA_VERSION",
    "ItemCells",
    "ItemRow",
    "ModelFigures",
    "PassSpeed",
    "ToolsBundleData",
    "ToolsSummary",
    "cell_completion_tokens",
    "cell_reasoning_tokens",
    "has_empty_args",
    "is_tools_bundle",
    "item_figures",
    "load_tools_bundle",
    "load_tools_summary",
    "model_figures",
    "pass_mark",
    "read_tools_records",
    "selected_items",
    "tools_summary",
    "write_tools_summary",
]

SUMMARY_SCHEMA_VERSION = 1
"""``schema_version`` of ``summary.json`` (module docstring)."""
EMPTY_ARGUMENTS: tuple[Any, ...] = ({}, [], "", None)
"""Arguments that count as empty (``no_empty_args``)."""
PASS, FAIL, NO_MARK = "✓", "✗", "–"
"""The per-item marks: every scored cell passed, none did, none scored."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)


class ModelFigures(_Result):
    """The figures of one model over its cells (module docstring for each definition)."""

    model: str
    """The model's label."""
    engine: str | None = None
    """The configured engine of its endpoint (from its records, else the manifest)."""
    hosts: list[str] = []
    """Hosts its cells ran on (sorted)."""
    cells_planned: int = 0
    """Cells the run selected for it (Σ repeats)."""
    cells: int = 0
    """Cells with a record (ok or not)."""
    cells_missing: int = 0
    """Planned cells without any record (the run stopped, or is still going)."""
    scored: int = 0
    """Ok cells with at least one measured check."""
    passed: int = 0
    """Scored cells that passed."""
    failed: int = 0
    """Scored cells that did not pass."""
    not_scored: int = 0
    """Ok cells whose every check was not measured."""
    pass_share: float | None = None
    """``passed / scored`` (0…1); ``None`` with nothing scored."""
    pass_ci_low: float | None = None
    """Wilson 95 % lower bound of ``pass_share``."""
    pass_ci_high: float | None = None
    """Wilson 95 % upper bound of ``pass_share``."""
    checks_ok: int = 0
    """Check outcomes ok, over the ok cells."""
    checks_failed: int = 0
    """Check outcomes failed."""
    checks_not_measured: int = 0
    """Check outcomes that could not run (``ok`` null)."""
    length_cutoffs: int = 0
    """Ok cells with ``finish_reason: length`` in any turn."""
    calls: int = 0
    """Tool calls over every turn of the ok cells."""
    empty_args: int = 0
    """Of those, calls with empty arguments to a tool that has required parameters."""
    schema_errors: int = 0
    """Failed ``schema_valid`` checks."""
    transport_errors: int = 0
    """Cells with ``ok: false`` (no model result)."""
    http_4xx: int = 0
    """Of those, requests the server refused (``error_kind: http_4xx``)."""
    completion_tokens_median: float | None = None
    """Median per ok cell of its completion tokens (Σ turns; tokens)."""
    completion_tokens_total: int | None = None
    """Σ completion tokens of the ok cells (tokens); ``None`` when none was counted."""
    reasoning_tokens_median: float | None = None
    """Median per ok cell of its reasoning tokens (tokens)."""
    reasoning_tokens_total: int | None = None
    """Σ reasoning tokens (tokens); ``None`` when none was counted."""
    run_s_total: float | None = None
    """Σ ``run_s`` over every cell (s)."""
    run_s_median: float | None = None
    """Median ``run_s`` of the ok cells (s)."""
    wall_s: float | None = None
    """Last ``t_end`` − first ``t_start`` of the model's cells (s)."""
    turns_median: float | None = None
    """Median turns per ok cell."""
    decode_tps_median: float | None = None
    """Median decode tokens/s over the turns that count (module docstring)."""


class ItemCells(_Result):
    """One item's cells of one model."""

    cells: int = 0
    """Records (ok or not)."""
    scored: int = 0
    """Scored cells."""
    passed: int = 0
    """Scored cells that passed."""
    mark: str = NO_MARK
    """``✓`` | ``✗`` | ``k/n`` | ``–`` (:func:`pass_mark`)."""
    checks_ok: int = 0
    """Check outcomes ok over the ok cells."""
    checks_measured: int = 0
    """Check outcomes measured (ok or failed)."""
    finish_reasons: dict[str, int] = {}
    """Finish reason of every turn → count (``none`` where the server sent none)."""
    calls_per_turn: list[list[int]] = []
    """Per ok cell (repeats in order), the number of calls in each turn."""
    failed_checks: list[str] = []
    """Ids of checks that failed in any cell (pack order)."""
    not_measured: list[str] = []
    """Ids of checks not measured in any cell (pack order)."""
    transport_errors: int = 0
    """Cells with ``ok: false``."""


class ItemRow(_Result):
    """One item of the pack and its cells per model."""

    item_id: str
    title: str = ""
    checks: list[str] = []
    """The item's check ids, in pack order."""
    models: dict[str, ItemCells] = {}
    """Model label → its cells of this item (models without a record left out)."""


class PassSpeed(_Result):
    """One model's point of the pass-rate-vs-speed chart."""

    model: str
    pass_share: float | None
    pass_ci_low: float | None
    pass_ci_high: float | None
    run_s_median: float | None
    """Median time per cell (s)."""
    decode_tps_median: float | None
    """Median decode speed (tokens/s)."""


class ToolsSummary(_Result):
    """``summary.json`` of a tools bundle (module docstring)."""

    schema_version: int = SUMMARY_SCHEMA_VERSION
    kind: str = "tools"
    pack_id: str
    pack_version: int
    pack_title: str = ""
    language: str = "en"
    pack_fingerprint: str | None = None
    checks_fingerprint: str | None = None
    simulated: bool = False
    status: str | None = None
    n_items: int = 0
    malformed_lines: int = 0
    models: list[ModelFigures] = Field(default_factory=list)
    items: list[ItemRow] = Field(default_factory=list)
    pass_speed: list[PassSpeed] = Field(default_factory=list)

    def model_row(self, model: str) -> ModelFigures | None:
        """The figures of ``model``; ``None`` when the summary has none."""
        return next((m for m in self.models if m.model == model), None)


@dataclass
class ToolsBundleData:
    """A tools bundle read for scoring (:func:`load_tools_bundle`)."""

    root: Path
    manifest: Manifest
    pack: ToolsPack
    records: list[ToolsRecord]
    """De-duplicated records of the pack's selected items, in model, item, repeat order."""
    malformed: int = 0
    """Lines skipped while reading (malformed, or not a tools record)."""

    @property
    def lang(self) -> str:
        """The pack's language (reports speak it)."""
        return self.pack.language

    def manifest_field(self, name: str) -> Any:
        """A top-level field of ``bundle.json`` by name (``None`` when absent)."""
        return self.manifest.to_dict().get(name)

    @property
    def pack_fingerprint(self) -> str:
        """The manifest's ``pack_fingerprint``, else the frozen pack's."""
        return str(self.manifest_field("pack_fingerprint") or self.pack.fingerprint())

    @property
    def checks_fingerprint(self) -> str:
        """The manifest's ``checks_fingerprint``, else the frozen pack's."""
        return str(self.manifest_field("checks_fingerprint") or self.pack.checks_fingerprint())

    @property
    def items(self) -> list[ToolItem]:
        """The items the run selected (:func:`selected_items`)."""
        return selected_items(self.pack, self.manifest)

    def models(self) -> list[str]:
        """Model labels: the manifest's in fleet config order, then any other in the records."""
        labels = self.manifest.model_labels()
        return list(dict.fromkeys([*labels, *(r.model for r in self.records)]))


def is_tools_bundle(root: Path) -> bool:
    """Whether ``root/bundle.json`` says ``kind: tools`` (``False`` when unreadable)."""
    try:
        return read_manifest(Layout(Path(root)).manifest).kind == "tools"
    except (OSError, BundleError):
        return False


def selected_items(pack: ToolsPack, manifest: Manifest) -> list[ToolItem]:
    """The items of ``pack`` the run selected: ``selection.items`` (ids, in pack order),
    ``selection.limit`` (the first N), else all (module docstring)."""
    selection = manifest.selection or {}
    ids = selection.get("items")
    if isinstance(ids, list):
        wanted = {str(i) for i in ids}
        return [it for it in pack.items if it.id in wanted]
    limit = selection.get("limit")
    if isinstance(limit, int) and limit >= 0:
        return list(pack.items[:limit])
    return list(pack.items)


def read_tools_records(root: Path) -> tuple[list[ToolsRecord], int]:
    """Every record of ``root/cells/*.jsonl``, de-duplicated by key (an ok record wins, the
    first ok wins), and the number of lines skipped (malformed, or not a tools record: each
    with a ``UserWarning`` naming file and line). A torn last line is skipped silently.
    Nothing is written."""
    shards = Layout(Path(root)).shards(ShardFolder.CELLS)
    raw: list[dict[str, Any]] = []
    skipped = 0
    for shard in shards:
        scan = ShardScan()
        raw.extend(iter_jsonl(shard, scan))
        skipped += len(scan.malformed)
    records: list[ToolsRecord] = []
    for key, data in dedupe_by_key(raw).items():
        try:
            records.append(ToolsRecord.model_validate(data))
        except ValidationError as exc:
            skipped += 1
            where = f"{root}/{ShardFolder.CELLS.value}"
            warnings.warn(
                f"{where}: record {key!r} is not a tools record ({exc.error_count()} errors); "
                "skipped",
                stacklevel=2,
            )
    return records, skipped


def load_tools_bundle(root: Path) -> ToolsBundleData:
    """Read the tools bundle at ``root`` (module docstring). Raises :class:`BundleError` when
    ``bundle.json`` is missing, unreadable or not ``kind: tools``, or ``pack.yaml`` is missing
    or not a valid tools pack."""
    root = Path(root)
    layout = Layout(root)
    manifest = read_manifest(layout.manifest)
    if manifest.kind != "tools":
        raise BundleError(
            f"{root}: not a tools bundle (bundle.json has kind: {manifest.kind or 'eval'})"
        )
    try:
        pack = load_tools_pack(layout.pack)
    except PackError as exc:
        raise BundleError(f"{root}: the frozen pack cannot be read: {exc}") from None
    records, malformed = read_tools_records(root)
    return ToolsBundleData(root, manifest, pack, _ordered(records, manifest, pack), malformed)


def _ordered(records: list[ToolsRecord], manifest: Manifest, pack: ToolsPack) -> list[ToolsRecord]:
    """The records of the pack's selected items in model (fleet config), item (pack) and
    repeat order; other records are dropped."""
    items = {it.id: i for i, it in enumerate(selected_items(pack, manifest))}
    models = {m: i for i, m in enumerate(manifest.model_labels())}
    kept = [r for r in records if r.item_id in items]
    return sorted(
        kept, key=lambda r: (models.get(r.model, len(models)), r.model, items[r.item_id], r.repeat)
    )


# per cell ----------------------------------------------------------------------------------
def _sum_known(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def cell_completion_tokens(record: ToolsRecord) -> int | None:
    """Σ completion tokens over the cell's turns (tokens); ``None`` when no turn has one."""
    return _sum_known(t.completion_tokens for t in record.turns)


def cell_reasoning_tokens(record: ToolsRecord) -> int | None:
    """Σ reasoning tokens over the cell's turns (tokens); ``None`` when no turn has one."""
    return _sum_known(t.reasoning_tokens for t in record.turns)


def _required_tools(pack: ToolsPack) -> set[str]:
    """Tools whose schema has a non-empty ``required`` list."""
    return {t.name for t in pack.tools if t.parameters.get("required")}


def has_empty_args(name: str, arguments: Any, pack: ToolsPack) -> bool:
    """Whether a call of ``name`` with ``arguments`` counts as empty: the arguments are one of
    :data:`EMPTY_ARGUMENTS` (a whitespace-only string too) and the tool has required
    parameters or is not a tool of ``pack``."""
    if isinstance(arguments, str):
        arguments = arguments.strip()
    if not any(arguments == e and type(arguments) is type(e) for e in EMPTY_ARGUMENTS):
        return False
    known = {t.name for t in pack.tools}
    return name not in known or name in _required_tools(pack)


def _decode_tps(record: ToolsRecord) -> list[float]:
    if record.host_contended or record.throttled:
        return []
    out = []
    for turn in record.turns:
        n, e2e, ttft = turn.completion_tokens, turn.e2e_s, turn.ttft_s
        if n is not None and n >= 2 and e2e is not None and ttft is not None and e2e > ttft:
            out.append((n - 1) / (e2e - ttft))
    return out


def pass_mark(scored: int, passed: int) -> str:
    """``✓`` when every one of ``scored`` cells passed, ``✗`` when none did, ``k/n`` for some,
    ``–`` when none was scored."""
    if scored == 0:
        return NO_MARK
    if passed == scored:
        return PASS
    if passed == 0:
        return FAIL
    return f"{passed}/{scored}"


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def model_figures(
    model: str,
    records: Sequence[ToolsRecord],
    pack: ToolsPack,
    planned: int = 0,
    engine: str | None = None,
) -> ModelFigures:
    """The figures of ``model`` over its ``records`` (module docstring); ``planned`` cells
    selected for it, ``engine`` the manifest's when no record names one."""
    mine = [r for r in records if r.model == model]
    ok = [r for r in mine if r.ok]
    scored = [r for r in ok if r.passed is not None]
    passed = sum(1 for r in scored if r.passed)
    interval = wilson_interval(passed, len(scored))
    outcomes = [c for r in ok for c in r.checks]
    calls = [c for r in ok for t in r.turns for c in t.tool_calls]
    completion = [cell_completion_tokens(r) for r in ok]
    reasoning = [cell_reasoning_tokens(r) for r in ok]
    run_s = [r.run_s for r in mine if r.run_s is not None]
    starts = [r.t_start for r in mine if r.t_start is not None]
    ends = [r.t_end for r in mine if r.t_end is not None]
    errors = [r for r in mine if not r.ok]
    return ModelFigures(
        model=model,
        engine=next((r.engine for r in mine), engine),
        hosts=sorted({r.host for r in mine}),
        cells_planned=planned,
        cells=len(mine),
        cells_missing=max(planned - len(mine), 0),
        scored=len(scored),
        passed=passed,
        failed=len(scored) - passed,
        not_scored=len(ok) - len(scored),
        pass_share=passed / len(scored) if scored else None,
        pass_ci_low=interval[0] if interval else None,
        pass_ci_high=interval[1] if interval else None,
        checks_ok=sum(1 for c in outcomes if c.ok is True),
        checks_failed=sum(1 for c in outcomes if c.ok is False),
        checks_not_measured=sum(1 for c in outcomes if c.ok is None),
        length_cutoffs=sum(1 for r in ok if any(t.finish_reason == "length" for t in r.turns)),
        calls=len(calls),
        empty_args=sum(1 for c in calls if has_empty_args(c.name, c.arguments, pack)),
        schema_errors=sum(1 for c in outcomes if c.type == "schema_valid" and c.ok is False),
        transport_errors=len(errors),
        http_4xx=sum(1 for r in errors if r.error_kind == "http_4xx"),
        completion_tokens_median=_float(median(completion)),
        completion_tokens_total=_sum_known(completion),
        reasoning_tokens_median=_float(median(reasoning)),
        reasoning_tokens_total=_sum_known(reasoning),
        run_s_total=sum(run_s) if run_s else None,
        run_s_median=_float(median(r.run_s for r in ok)),
        wall_s=max(ends) - min(starts) if starts and ends else None,
        turns_median=_float(median(len(r.turns) for r in ok)),
        decode_tps_median=_float(median(v for r in ok for v in _decode_tps(r))),
    )


def _in_order(ids: Iterable[str], order: Sequence[str]) -> list[str]:
    found = set(ids)
    return [i for i in order if i in found] + sorted(found - set(order))


def item_figures(item: ToolItem, records: Sequence[ToolsRecord], models: Sequence[str]) -> ItemRow:
    """The row of ``item``: its cells per model (module docstring); ``records`` may hold
    other items' records too."""
    check_ids = [c.id for c in item.checks]
    per_model: dict[str, ItemCells] = {}
    for model in models:
        mine = [r for r in records if r.model == model and r.item_id == item.id]
        if not mine:
            continue
        mine.sort(key=lambda r: r.repeat)
        ok = [r for r in mine if r.ok]
        scored = [r for r in ok if r.passed is not None]
        passed = sum(1 for r in scored if r.passed)
        outcomes = [c for r in ok for c in r.checks]
        finish = Counter(t.finish_reason or "none" for r in ok for t in r.turns)
        per_model[model] = ItemCells(
            cells=len(mine),
            scored=len(scored),
            passed=passed,
            mark=pass_mark(len(scored), passed),
            checks_ok=sum(1 for c in outcomes if c.ok is True),
            checks_measured=sum(1 for c in outcomes if c.ok is not None),
            finish_reasons=dict(sorted(finish.items())),
            calls_per_turn=[[len(t.tool_calls) for t in r.turns] for r in ok],
            failed_checks=_in_order((c.id for c in outcomes if c.ok is False), check_ids),
            not_measured=_in_order((c.id for c in outcomes if c.ok is None), check_ids),
            transport_errors=len(mine) - len(ok),
        )
    return ItemRow(item_id=item.id, title=item.title, checks=check_ids, models=per_model)


def tools_summary(data: ToolsBundleData) -> ToolsSummary:
    """The summary of a read tools bundle (module docstring)."""
    items = data.items
    planned = sum(it.repeats for it in items)
    engines = {m.model: m.engine for m in data.manifest.models}
    models = data.models()
    figures = [model_figures(m, data.records, data.pack, planned, engines.get(m)) for m in models]
    return ToolsSummary(
        pack_id=data.pack.id,
        pack_version=data.pack.version,
        pack_title=data.pack.title,
        language=data.lang,
        pack_fingerprint=data.pack_fingerprint,
        checks_fingerprint=data.checks_fingerprint,
        simulated=bool(data.manifest.simulated),
        status=data.manifest.status,
        n_items=len(items),
        malformed_lines=data.malformed,
        models=figures,
        items=[item_figures(it, data.records, models) for it in items],
        pass_speed=[
            PassSpeed(
                model=f.model,
                pass_share=f.pass_share,
                pass_ci_low=f.pass_ci_low,
                pass_ci_high=f.pass_ci_high,
                run_s_median=f.run_s_median,
                decode_tps_median=f.decode_tps_median,
            )
            for f in figures
        ],
    )


def write_tools_summary(root: Path) -> Path:
    """Compute the summary of the tools bundle ``root`` and write ``summary.json`` atomically;
    returns its path. Raises :class:`BundleError` like :func:`load_tools_bundle`."""
    data = load_tools_bundle(root)
    path = Layout(Path(root)).summary
    atomic_write_json(path, tools_summary(data).model_dump(mode="json"))
    return path


def load_tools_summary(root: Path) -> ToolsSummary:
    """``summary.json`` of the tools bundle ``root``. Raises :class:`BundleError` when it is
    missing, not JSON or not a tools summary."""
    path = Layout(Path(root)).summary
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ToolsSummary.model_validate(data)
    except FileNotFoundError:
        raise BundleError(f"{path}: missing; run `report --bundle {root}` to write it") from None
    except (OSError, ValueError) as exc:  # ValidationError is a ValueError
        raise BundleError(f"{path}: not a tools summary ({str(exc).splitlines()[0]})") from None
