"""A tools bundle in the web UI (SPEC §7c, issue 27 item 11): its overview row and its result
page, in its pack's language.

- **Overview** (:func:`tools_overview`): the bundle is grouped under ``<pack id> v<version>``
  (``bundle.json``'s ``pack``); its row names the model with the highest
  pass share (then the most cells passed, then fleet config order) as ``model · k/n`` and that
  share in %. The figures come from ``summary.json`` when the run is over and it is there, else
  from the cells as they stand (:mod:`touchstone_ray.scoring.tools`).
- **Result** (:func:`tools_result_html`): the tools report's sections
  (:func:`~touchstone_ray.report.tools.build_tools_document` without its cells, column heads
  with their definitions as tooltips), then every cell that passes the filters ``model``,
  ``item`` and ``failed`` (``1``: cells that failed or have no result) as an expandable block
  with its turns (answer, reasoning, calls and their arguments, the world's replies) and its
  checks (:func:`~touchstone_ray.report.tools.cell_blocks`), before the report's
  definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from touchstone_ray.bundle import Layout, Manifest
from touchstone_ray.doc import REPORT_CSS, Block, Heading, HtmlWriter
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.lang import tools_labels, ui_labels
from touchstone_ray.report.tools import build_tools_document, cell_blocks, tools_head_tips
from touchstone_ray.scoring.tools import (
    ModelFigures,
    ToolsSummary,
    load_tools_bundle,
    load_tools_summary,
    tools_summary,
)
from touchstone_ray.tool_records import ToolsRecord
from touchstone_ray.ui._page import e

__all__ = [
    "FILTERS",
    "ToolsOverview",
    "best_model",
    "filter_cells",
    "tools_overview",
    "tools_pack_label",
    "tools_result_html",
]

FILTERS = ("model", "item", "failed")
"""Query parameters of the cells filter."""


@dataclass(frozen=True)
class ToolsOverview:
    """What the overview shows of a tools bundle."""

    pack: str
    """``<pack id> v<version>`` (the group it is listed under)."""
    best: str | None = None
    """``model · k/n`` of the model with the highest pass share; ``None`` before any."""
    pass_pct: float | None = None
    """That model's pass share (%)."""


def tools_pack_label(manifest: Manifest) -> str:
    """``<pack id> v<version>`` of a tools bundle's manifest (its ``pack`` reference, else
    top-level ``pack_id`` / ``pack_version``); ``(tools)`` when it names none."""
    pack_id, version = (manifest.pack.id, manifest.pack.version) if manifest.pack else (None, None)
    if pack_id is None:
        data = manifest.to_dict()
        pack_id, version = data.get("pack_id"), data.get("pack_version")
    if pack_id is None:
        return "(tools)"
    return f"{pack_id} v{version}" if version is not None else str(pack_id)


def best_model(summary: ToolsSummary) -> ModelFigures | None:
    """The scored model with the highest pass share, then the most cells passed, then the
    first in fleet config order; ``None`` when none was scored."""
    scored = [m for m in summary.models if m.pass_share is not None]
    if not scored:
        return None
    order = {m.model: i for i, m in enumerate(summary.models)}
    return min(scored, key=lambda m: (-(m.pass_share or 0.0), -m.passed, order[m.model]))


def _summary(root: Path, state: str) -> ToolsSummary:
    if state != "running" and Layout(root).summary.is_file():
        try:
            return load_tools_summary(root)
        except TouchstoneError:
            pass
    return tools_summary(load_tools_bundle(root))


def tools_overview(root: Path, manifest: Manifest, state: str) -> ToolsOverview:
    """The overview's figures of the tools bundle ``root`` (module docstring); a bundle whose
    cells or pack cannot be read gives its pack label alone."""
    label = tools_pack_label(manifest)
    try:
        best = best_model(_summary(root, state))
    except TouchstoneError:
        return ToolsOverview(label)
    if best is None or best.pass_share is None:
        return ToolsOverview(label)
    return ToolsOverview(
        label, f"{best.model} · {best.passed}/{best.scored}", best.pass_share * 100
    )


def filter_cells(records: list[ToolsRecord], filters: dict[str, str]) -> list[ToolsRecord]:
    """The cells that pass ``filters`` (module docstring), in report order."""
    out = []
    for r in records:
        if filters.get("model") and r.model != filters["model"]:
            continue
        if filters.get("item") and r.item_id != filters["item"]:
            continue
        if filters.get("failed") == "1" and r.ok and r.passed is not False:
            continue
        out.append(r)
    return out


def _select(name: str, label: str, values: list[str], chosen: str, lang: str) -> str:
    opts = [f'<option value="">{e(ui_labels(lang)["all"])}</option>'] + [
        f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(v)}</option>'
        for v in values
    ]
    return f'<label>{e(label)}<br><select name="{name}">{"".join(opts)}</select></label>'


def tools_result_html(root: Path, filters: dict[str, str], action: str) -> tuple[str, str]:
    """``(title, body HTML)`` of the result page of the tools bundle ``root`` (module
    docstring). Raises :class:`~touchstone_ray.errors.BundleError` for a bundle that is not a
    readable tools bundle."""
    data = load_tools_bundle(root)
    summary = tools_summary(data)
    lang = summary.language
    t, u = tools_labels(lang), ui_labels(lang)
    doc = build_tools_document(data, summary, cells=False)
    tips = tools_head_tips(lang)
    w = HtmlWriter(tips.get)
    shown = filter_cells(data.records, filters)
    blocks: list[Block] = []
    for r in shown:
        blocks += cell_blocks(r, t)
    failed = " checked" if filters.get("failed") == "1" else ""
    form = (
        f'<form class="filters" id="cell-filters" method="get" action="{e(action)}">'
        + _select("model", t["model"], data.models(), filters.get("model", ""), lang)
        + _select("item", t["item"], [it.id for it in data.items], filters.get("item", ""), lang)
        + f'<label><input type="checkbox" name="failed" value="1"{failed}> '
        f"{e(t['failed'])}</label>" + f'<button type="submit">{e(u["filter"])}</button></form>'
    )
    count = f"{len(shown)} / {len(data.records)}"
    at = next(
        (i for i, b in enumerate(doc.blocks) if isinstance(b, Heading) and b.text == t["method"]),
        len(doc.blocks),
    )
    body = (
        f'<style>{REPORT_CSS}</style><div class="report">'
        + "".join(w.block(b) for b in doc.blocks[:at])
        + f'<h2 id="cells">{e(t["cells_section"])}</h2>{form}'
        + f'<p class="muted" id="cell-count">{e(count)}</p>'
        + f'<div id="cell-list">{"".join(w.block(b) for b in blocks)}</div>'
        + "".join(w.block(b) for b in doc.blocks[at:])
        + "</div>"
    )
    return doc.title, body
