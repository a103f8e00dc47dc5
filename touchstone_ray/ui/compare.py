"""The compare page (issue item 4): tick rows (bundle × model × variant) from any bundles;
the table lists what the rows share and puts only what differs in the column heads.

Rows are :func:`touchstone_ray.report.compare.compare_rows` of the ticked bundles (its
figures: quality %, K.-o., TTFT p50 s, median decode tok/s, memory MB with its source); the
facts compared are the bundle, pack and version, hosts with their GPUs, engine (the model's
``engine`` in ``bundle.json``), judges (the scorecard's), touchstone version, model and
variant. Downloads: the leaderboard CSV and the meta-report Markdown of
:func:`~touchstone_ray.report.compare.render_compare`, with or without judgements (without:
quality and K.-o. left empty, for an outside rater).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from urllib.parse import quote

from touchstone_ray.bundle import Bundle, find_bundles
from touchstone_ray.errors import BundleError
from touchstone_ray.lang import labels, ui_labels
from touchstone_ray.report.compare import (
    CompareRow,
    compare_cells,
    compare_head,
    compare_rows,
    render_compare,
)
from touchstone_ray.scoring.scorecard import load_scorecard
from touchstone_ray.ui._page import e, th

__all__ = ["Picked", "compare_download", "compare_html", "picked_rows", "row_id"]

SEP = "|"


def row_id(rel: str, model: str, variant: str) -> str:
    """The value of one ``row`` query parameter: ``<bundle>|<model>|<variant>``."""
    return f"{rel}{SEP}{model}{SEP}{variant}"


@dataclasses.dataclass(frozen=True)
class Picked:
    """One ticked row: its compare figures and the facts that may differ between rows (label
    key of :func:`touchstone_ray.lang.ui_labels` → value)."""

    rid: str
    row: CompareRow
    facts: dict[str, str | None]


def _facts(root: Path, row: CompareRow) -> dict[str, str | None]:
    manifest = Bundle(root).read_manifest()
    engines = {m.model: str(m.engine) for m in manifest.models}
    judges: str | None  # None: not judged
    try:
        judges = ", ".join(load_scorecard(root).judges) or "—"
    except BundleError:
        judges = None
    return {
        "fact_bundle": row.bundle,
        "fact_pack": row.pack,
        "fact_hosts": row.hosts,
        "fact_engine": engines.get(row.model, "—"),
        "fact_judges": judges,
        "fact_touchstone": str(manifest.touchstone_version or "—"),
        "fact_model": row.model,
        "fact_variant": row.variant,
    }


def eval_bundles(runs: Path) -> list[Path]:
    """The eval bundles under ``runs`` (perf bundles have no rows to compare)."""
    out = []
    for root in find_bundles(runs):
        try:
            if Bundle(root).kind() == "eval":
                out.append(root)
        except BundleError:
            continue
    return out


def picked_rows(runs: Path, wanted: list[str], lang: str | None = None) -> tuple[list[Picked], str]:
    """The ticked rows (``wanted`` row ids, in that order) and their language (``lang``, else
    as :func:`~touchstone_ray.report.compare.compare_rows` picks it). Ids of bundles outside
    ``runs`` or rows that do not exist are ignored. Raises :class:`BundleError` for a ticked
    bundle the report cannot read."""
    by_rel = {root.relative_to(runs).as_posix(): root for root in eval_bundles(runs)}
    need: dict[str, list[str]] = {}
    for rid in wanted:
        rel = rid.rsplit(SEP, 2)[0]
        if rel in by_rel:
            need.setdefault(rel, []).append(rid)
    found: dict[str, Picked] = {}
    langs = set()
    for rel in need:
        rows, row_lang = compare_rows([by_rel[rel]], lang)
        langs.add(row_lang)
        for row in rows:
            rid = row_id(rel, row.model, row.variant)
            if rid in need[rel]:
                found[rid] = Picked(rid, row, _facts(by_rel[rel], row))
    picked = [found[r] for r in wanted if r in found]
    return picked, lang or (langs.pop() if len(langs) == 1 else "en")


def _chooser(runs: Path, wanted: list[str], u: dict[str, str]) -> str:
    items = []
    for root in eval_bundles(runs):
        rel = root.relative_to(runs).as_posix()
        try:
            rows, _ = compare_rows([root])
        except BundleError as exc:
            items.append(f'<li>{e(rel)} <span class="err">{e(exc)}</span></li>')
            continue
        boxes = "".join(
            f'<label><input type="checkbox" name="row" value="{e(rid)}"'
            f"{' checked' if rid in wanted else ''}> {e(r.model)} · {e(r.variant)}</label> "
            for r in rows
            for rid in [row_id(rel, r.model, r.variant)]
        )
        items.append(f"<li><strong>{e(rel)}</strong><br>{boxes}</li>")
    return (
        '<form method="get" action="/compare" id="compare-pick"><ul>'
        + "".join(items)
        + f'</ul><button type="submit">{e(u["compare_button"])}</button></form>'
    )


def compare_html(runs: Path, wanted: list[str], lang: str = "en") -> str:
    """The compare page body in ``lang``: the chooser and, for ticked rows, the shared facts,
    the table (figure heads with their glossary tooltip) and the download links."""
    u = ui_labels(lang)
    body = f"<h1>{e(u['compare_title'])}</h1>" + _chooser(runs, wanted, u)
    if not wanted:
        return body
    picked, _ = picked_rows(runs, wanted, lang)
    if not picked:
        return body + f'<p class="muted">{e(u["none_exists"])}</p>'
    t = labels(lang)

    def fact(p: Picked, n: str) -> str:
        value = p.facts[n]
        return u["not_judged"] if value is None else value

    names = list(picked[0].facts)
    shared = [n for n in names if len({p.facts[n] for p in picked}) == 1]
    differs = [n for n in names if n not in shared]
    facts = "".join(f"<li><strong>{e(u[n])}</strong>: {e(fact(picked[0], n))}</li>" for n in shared)
    with_rate = any(p.row.sustainable_rps is not None for p in picked)
    head = "".join(f'<th class="differs">{e(u[n])}</th>' for n in differs) + "".join(
        th(lang, h) for h in compare_head(t, with_rate=with_rate)[4:]
    )
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{e(fact(p, n))}</td>" for n in differs)
        + "".join(f"<td>{e(c)}</td>" for c in compare_cells(p.row, t, with_rate=with_rate)[4:])
        + "</tr>"
        for p in picked
    )
    query = "&".join(f"row={quote(p.rid)}" for p in picked)
    return body + (
        f'<h2>{e(u["shared"])}</h2><ul id="shared">{facts}</ul>'
        f'<h2>{e(u["rows"])}</h2><table id="compare"><thead><tr>{head}</tr></thead>'
        f'<tbody>{rows}</tbody></table><p><a id="csv" href="/compare.csv?{query}">'
        f'{e(u["csv"])}</a> · <a id="md" href="/compare.md?{query}">{e(u["meta_md"])}</a> · '
        f'<a id="md-unjudged" href="/compare.md?{query}&judged=0">{e(u["meta_unjudged"])}</a></p>'
    )


def compare_download(runs: Path, wanted: list[str], kind: str, judged: bool) -> str:
    """The CSV (``kind`` ``csv``) or Markdown (``md``) of the ticked rows; without
    ``judged`` quality and K.-o. are left empty."""
    picked, lang = picked_rows(runs, wanted)
    rows = [p.row for p in picked]
    if not judged:
        rows = [
            dataclasses.replace(r, quality_pct=None, ko_passed=None, ko_reason="") for r in rows
        ]
    _, markdown, table = render_compare(rows, lang)
    return table if kind == "csv" else markdown
