"""Everything a report reads from a bundle, loaded once (SPEC §7), plus the SPEC §9 aggregates.

Sources: ``bundle.json`` (setup facts, hosts, footprint), ``pack.yaml`` (frozen pack),
``responses/*.jsonl`` (de-duplicated by key), ``hosts/*.jsonl`` (telemetry),
``events.jsonl`` (``model_start`` / ``model_done`` phases) and, for a judged report,
``scorecard.json`` (read as it is: the SPEC §7 contract fields, extra sections when present)
with ``judgements/<judge>/verdicts.jsonl`` and ``reports.jsonl`` of the scorecard's judges.

Aggregates per (model, variant) are :func:`~touchstone_ray.scoring.row_stats` (SPEC §9: which
cells count for speed, p50/p95 with linear interpolation, medians for tok/s; resource figures
over every cell). In a judged report the figures the scorecard row already has
(:data:`~touchstone_ray.scoring.scorecard_model.ROW_STATS_FIGURES`) are the scorecard's, so a
figure has one value wherever it is shown. Times are seconds, memory MB, throughput tokens/s.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from touchstone_ray.bundle import (
    Bundle,
    JudgeFiles,
    Layout,
    Manifest,
    read_events,
    read_host_samples,
)
from touchstone_ray.errors import BundleError, PackError
from touchstone_ray.pack import Pack
from touchstone_ray.records import EvalResponse, HolisticReport, HostSample, Verdict
from touchstone_ray.scoring.aggregates import RowStats, row_stats
from touchstone_ray.scoring.scorecard_model import ROW_STATS_FIGURES, Scorecard, ScorecardRow

__all__ = ["ReportData", "RowKey", "RowStats", "load_report_data", "row_stats"]

RowKey = tuple[str, str]
"""``(model, variant)``."""


@dataclass(frozen=True)
class Phase:
    """One model's time on a host (epoch s, from ``events.jsonl``)."""

    model: str
    t_start: float
    t_end: float | None


@dataclass
class ReportData:
    """A bundle as the report sees it. ``card`` is ``None`` for an unjudged report."""

    root: Path
    manifest: Manifest
    pack: Pack
    responses: list[EvalResponse]
    rows: list[RowKey]
    """Ranking order (judged) or matrix order: manifest models × pack variants."""
    stats: dict[RowKey, RowStats]
    """Per row its SPEC §9 aggregates (the scorecard's figures where it has them)."""
    samples: dict[str, list[HostSample]]
    phases: dict[str, list[Phase]]
    card: Scorecard | None = None
    card_rows: dict[RowKey, ScorecardRow] = field(default_factory=dict)
    judges: list[str] = field(default_factory=list)
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    """Cell key → the judges' verdicts (scorecard judge order)."""
    reports: dict[RowKey, dict[str, HolisticReport]] = field(default_factory=dict)
    judge_models: dict[str, str] = field(default_factory=dict)

    @property
    def lang(self) -> str:
        """The pack's language (``de`` or ``en``)."""
        return self.pack.language

    @property
    def judged(self) -> bool:
        """Whether judgements are shown."""
        return self.card is not None

    @property
    def simulated(self) -> bool:
        """The manifest or the scorecard says a simulated engine or judge was used."""
        card_sim = self.card.simulated if self.card else False
        return bool(self.manifest.simulated) or card_sim

    def concurrency(self, model: str) -> int | None:
        """``concurrency`` of ``model`` in the bundle's frozen fleet config (``None`` unknown)."""
        return self.manifest.model_concurrency().get(model)

    @property
    def name(self) -> str:
        """The bundle folder name."""
        return self.root.name

    def host_gpus(self, host: str) -> list[str]:
        """GPU descriptions of ``host``: the manifest's ``gpus``, else the names and memory
        seen in its telemetry samples (``NVIDIA H200 (141 GB)``)."""
        facts = self.manifest.hosts.get(host)
        out = facts.gpu_labels() if facts else []
        if out:
            return out
        seen: dict[int, str] = {}
        for sample in self.samples.get(host, []):
            for g in sample.gpus or []:
                if g.index not in seen and g.name:
                    total = f" ({g.mem_total_mb / 1024:.0f} GB)" if g.mem_total_mb else ""
                    seen[g.index] = f"{g.name}{total}"
        return [seen[i] for i in sorted(seen)]


def _load_phases(layout: Layout) -> dict[str, list[Phase]]:
    open_: dict[tuple[str, str], float] = {}
    out: dict[str, list[Phase]] = defaultdict(list)
    for ev in read_events(layout):
        kind, host, model, ts = ev.get("event"), ev.get("host"), ev.get("model"), ev.get("ts")
        if not isinstance(host, str) or not isinstance(model, str):
            continue
        if not isinstance(ts, int | float):
            continue
        if kind == "model_start":
            open_[(host, model)] = float(ts)
        elif kind == "model_done" and (host, model) in open_:
            out[host].append(Phase(model, open_.pop((host, model)), float(ts)))
    for (host, model), t0 in open_.items():
        out[host].append(Phase(model, t0, None))
    return {h: sorted(p, key=lambda x: x.t_start) for h, p in out.items()}


def _read_card(root: Path) -> Scorecard:
    from touchstone_ray.scoring.scorecard import load_scorecard

    if root.is_dir() and not Layout(root).scorecard_json.exists():
        raise BundleError(
            f"{root}: no scorecard.json yet; run `touchstone-ray judge --bundle {root} "
            "--judge-config <judge.yaml>` first, or use `report --unjudged`"
        )
    return load_scorecard(root)


def _load_judgements(data: ReportData) -> None:
    """Fill verdicts, reports and judge models from ``judgements/<judge>/`` (last record wins,
    as the judge store writes them; records that are not valid are left out)."""
    for judge in data.judges:
        files = JudgeFiles(Layout(data.root), judge)
        for verdict in files.verdicts().values():
            if verdict.judge_model is not None:
                data.judge_models.setdefault(judge, verdict.judge_model)
            data.verdicts.setdefault(verdict.key, []).append(verdict.contract())
        for row, report in files.reports().items():
            data.reports.setdefault(row, {})[judge] = report.contract()


def _with_card_figures(stats: RowStats, card_row: ScorecardRow | None) -> RowStats:
    """``stats`` with the figures the scorecard row has (``ROW_STATS_FIGURES`` it was read
    with: an older row lacks the newer ones), so the report shows the scorecard's value of a
    figure, never a second computation beside it."""
    if card_row is None:
        return stats
    have = card_row.model_fields_set
    return replace(stats, **{f: getattr(card_row, f) for f in ROW_STATS_FIGURES if f in have})


def load_report_data(root: Path, *, judged: bool) -> ReportData:
    """Load the bundle at ``root``. ``judged`` requires ``scorecard.json`` and reads the
    judgements of its judges; otherwise judgements are ignored entirely.

    Raises :class:`BundleError` for a missing or invalid bundle, pack or scorecard.
    """
    root = Path(root)
    bundle = Bundle.open(root)
    manifest = bundle.manifest()
    try:
        pack = bundle.pack()
    except (PackError, OSError) as exc:
        raise BundleError(f"{root}: frozen pack.yaml unusable ({exc})") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        responses = bundle.pack_responses(pack)[0] if bundle.layout.responses_dir.is_dir() else []
        samples = read_host_samples(bundle.layout)
        phases = _load_phases(bundle.layout)
    by_row: dict[RowKey, list[EvalResponse]] = defaultdict(list)
    for r in responses:
        by_row[(r.model, r.variant)].append(r)
    data = ReportData(
        root=root,
        manifest=manifest,
        pack=pack,
        responses=responses,
        rows=list(by_row),
        stats={k: row_stats(v) for k, v in by_row.items()},
        samples=samples,
        phases=phases,
    )
    if judged:
        card = _read_card(root)
        data.card = card
        ranked = [(r.model, r.variant) for r in card.rows]
        data.card_rows = {(r.model, r.variant): r for r in card.rows}
        data.rows = ranked + [k for k in data.rows if k not in data.card_rows]
        data.stats = {
            k: _with_card_figures(s, data.card_rows.get(k)) for k, s in data.stats.items()
        }
        data.judges = list(card.judges)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _load_judgements(data)
    return data
