"""The overview (issue item 1): one row per bundle under ``--runs``, grouped by pack.

Rows come from :func:`touchstone_ray.bundle.find_bundles` on every request, so a bundle that
appears while the UI runs is listed at the next load (the page re-fetches its table every
few seconds). Status is :meth:`Bundle.run_state`; a judged bundle's best row comes from its
``scorecard.json`` (:func:`~touchstone_ray.scoring.scorecard.load_scorecard`): the row ranked
first, its ``rubric_level``, ``ko_passed`` and ``quality_pct`` (%). A tools bundle is grouped
under its pack and shows its best model's pass rate (%) instead
(:func:`~touchstone_ray.ui.tools_pages.tools_overview`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from touchstone_ray.bundle import Bundle, find_bundles
from touchstone_ray.errors import BundleError
from touchstone_ray.lang import tools_labels, ui_labels
from touchstone_ray.scoring.scorecard import load_scorecard
from touchstone_ray.scoring.scorecard_model import ScorecardRow
from touchstone_ray.ui._page import e, th
from touchstone_ray.ui.tools_pages import tools_overview

__all__ = ["BundleSummary", "overview_html", "summaries", "summarize"]


@dataclass
class BundleSummary:
    """What the overview shows of one bundle. ``started_at`` is epoch s, ``quality_pct`` %."""

    rel: str
    """Path relative to ``--runs`` (posix), the bundle's id in every UI address."""
    name: str
    kind: str
    pack: str
    state: str
    models: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    started_at: float | None = None
    best: str | None = None
    rubric_level: str | None = None
    ko_passed: bool | None = None
    quality_pct: float | None = None
    resume: str | None = None
    error: str | None = None
    pass_pct: float | None = None
    """A tools bundle: the pass share of its best model (%); ``best`` names it."""


def _best(root: Path) -> ScorecardRow | None:
    try:
        rows = load_scorecard(root).rows
    except BundleError:
        return None
    return min(rows, key=lambda row: row.rank, default=None)


def summarize(root: Path, runs: Path, now: float | None = None) -> BundleSummary:
    """The overview row of the bundle at ``root`` (under ``runs``); an unreadable manifest
    gives a row with ``error`` set instead of raising."""
    bundle = Bundle(root)
    rel = root.relative_to(runs).as_posix()
    try:
        manifest = bundle.read_manifest()
        kind = bundle.kind()
        state = bundle.run_state(now)
    except BundleError as exc:
        return BundleSummary(rel, root.name, "?", "?", "unreadable", error=str(exc))
    pack = manifest.pack
    pack_label = f"{pack.id} v{pack.version}" if pack and pack.id else f"({kind})"
    tools = tools_overview(root, manifest, state) if kind == "tools" else None
    if tools is not None:
        pack_label = tools.pack
    hosts = sorted(manifest.hosts) or sorted({m.host for m in manifest.models if m.host})
    started = manifest.started_at
    summary = BundleSummary(
        rel=rel,
        name=root.name,
        kind=kind,
        pack=pack_label,
        state=state,
        models=[m.model or str(m.id) for m in manifest.models],
        variants=list(manifest.variants or []),
        hosts=hosts,
        started_at=float(started) if started is not None else None,
    )
    if state == "crashed":
        summary.resume = bundle.resume_command()
    if tools is not None:
        summary.best, summary.pass_pct = tools.best, tools.pass_pct
    if state == "judged":
        best = _best(root)
        if best is not None:
            summary.best = f"{best.model} · {best.variant}"
            summary.rubric_level = best.rubric_level
            summary.ko_passed = best.ko_passed
            summary.quality_pct = best.quality_pct
    return summary


def summaries(runs: Path, now: float | None = None) -> list[BundleSummary]:
    """Every bundle under ``runs``, newest first."""
    rows = [summarize(root, runs, now) for root in find_bundles(runs)]
    return sorted(rows, key=lambda s: (s.started_at or 0.0, s.rel), reverse=True)


def _matches(s: BundleSummary, filters: dict[str, str]) -> bool:
    pack, model, host = filters.get("pack"), filters.get("model"), filters.get("host")
    return (
        (not pack or s.pack.split(" ")[0] == pack)
        and (not model or model in s.models)
        and (not host or host in s.hosts)
    )


def _select(name: str, label: str, values: list[str], chosen: str, lang: str) -> str:
    opts = [f'<option value="">{e(ui_labels(lang)["all"])}</option>'] + [
        f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(v)}</option>'
        for v in values
    ]
    return f'<label>{label}<br><select name="{name}">{"".join(opts)}</select></label>'


def _date(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "—"


def _ko(s: BundleSummary, u: dict[str, str]) -> str:
    if s.ko_passed is None:
        return ""
    cls, text = ("ko-pass", u["ko_passed_badge"]) if s.ko_passed else ("ko-fail", "K.-o.")
    return f' <span class="badge {cls}">{e(text)}</span>'


def _row(s: BundleSummary, lang: str) -> str:
    u = ui_labels(lang)
    link = quote(s.rel)
    # a perf bundle's result needs its summary.json, written when the run ends
    result = f'<a href="/run/{link}">{e(u["result"])}</a>'
    pages = result if s.kind in ("eval", "tools") or s.state != "running" else ""
    if s.state in ("running", "crashed"):
        live = f'<a href="/live/{link}">{e(u["live"])}</a>'
        pages = live + (" · " + pages if pages else "")
    shown = u.get(f"state_{s.state}", s.state)
    state = f'<span class="badge s-{e(s.state)}">{e(shown)}</span>'
    if s.resume:
        state += f'<br><code class="resume">{e(s.resume)}</code>'
    if s.error:
        state += f'<br><span class="err">{e(s.error)}</span>'
    quality = f"{s.quality_pct:.1f} %" if s.quality_pct is not None else "—"
    best = f"{e(s.best)}<br>{e(s.rubric_level)}{_ko(s, u)}" if s.best else "—"
    if s.kind == "tools":
        t = tools_labels(lang)
        best = e(s.best) if s.best else f'<span class="muted">{e(t["ui_no_summary"])}</span>'
        quality = "—"
        if s.pass_pct is not None:
            quality = f'{s.pass_pct:.1f} %<br><span class="muted">{e(t["ui_pass"])}</span>'
    return (
        f'<tr data-bundle="{e(s.rel)}"><td>{e(s.name)}<br>{pages}</td><td>{e(s.kind)}</td>'
        f"<td>{state}</td><td>{e(len(s.models))} × {e(len(s.variants))}<br>"
        f'<span class="muted">{e(", ".join(s.models))}</span></td>'
        f"<td>{e(', '.join(s.hosts))}</td><td>{_date(s.started_at)}</td>"
        f'<td>{best}</td><td class="quality">{quality}</td></tr>'
    )


HEAD = (
    "h_bundle",
    "h_kind",
    "h_status",
    "h_models_variants",
    "h_hosts",
    "h_date",
    "h_best",
    "h_quality",
)
"""The overview table's column heads (keys of :func:`touchstone_ray.lang.ui_labels`)."""


def table_html(rows: list[BundleSummary], filters: dict[str, str], lang: str = "en") -> str:
    """The grouped tables (one per pack) of the rows that pass ``filters`` (``pack``,
    ``model``, ``host``), labelled in ``lang``."""
    u = ui_labels(lang)
    groups: dict[str, list[BundleSummary]] = defaultdict(list)
    for s in rows:
        if _matches(s, filters):
            groups[s.pack].append(s)
    if not groups:
        return f'<p class="muted">{e(u["no_match"])}</p>'
    head = "<tr>" + "".join(th(lang, u[k]) for k in HEAD) + "</tr>"
    parts = []
    for pack in sorted(groups):
        body = "".join(_row(s, lang) for s in groups[pack])
        parts.append(
            f'<section class="pack-group" data-pack="{e(pack)}"><h2>{e(pack)}</h2>'
            f"<table><thead>{head}</thead><tbody>{body}</tbody></table></section>"
        )
    return "".join(parts)


def overview_html(runs: Path, filters: dict[str, str], lang: str = "en") -> str:
    """The overview page's body in ``lang``: filters and the grouped tables."""
    u = ui_labels(lang)
    rows = summaries(runs)
    packs = sorted({s.pack.split(" ")[0] for s in rows})
    models = sorted({m for s in rows for m in s.models})
    hosts = sorted({h for s in rows for h in s.hosts})
    form = (
        '<form class="filters" method="get" action="/">'
        + _select("pack", u["f_pack"], packs, filters.get("pack", ""), lang)
        + _select("model", u["f_model"], models, filters.get("model", ""), lang)
        + _select("host", u["f_host"], hosts, filters.get("host", ""), lang)
        + f'<button type="submit">{e(u["filter"])}</button></form>'
    )
    under = u["runs_under"].format(path=runs)
    return (
        f'<h1>{e(u["runs_title"])} <span class="muted">{e(under)}</span></h1>{form}'
        f'<div id="groups">{table_html(rows, filters, lang)}</div>'
    )
