"""Sections every report has, judged or not: title and setup, method, hardware and
configuration, speed and resources, glossary; plus the frontmatter facts."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from touchstone_ray import lang
from touchstone_ray.bundle import Footprint, HostFacts, RayInfo
from touchstone_ray.doc import (
    Block,
    Bullets,
    Callout,
    Code,
    Heading,
    Inline,
    Link,
    Para,
    Strong,
    Table,
    cell,
    heading_text,
    num_cell,
)
from touchstone_ray.doc.fmt import NONE, iso_utc, joined, utc
from touchstone_ray.pack import Pack, Prompt
from touchstone_ray.report._data import ReportData, RowKey
from touchstone_ray.report._footprint import engine_footprint
from touchstone_ray.report._speed import memory_chart

__all__ = [
    "frontmatter",
    "glossary",
    "hardware",
    "ko_rule_lines",
    "links",
    "method",
    "prompt_heading",
    "prompt_link",
    "row_label",
    "setup_blocks",
]


def row_label(row: RowKey) -> str:
    """``model / variant``."""
    return f"{row[0]} / {row[1]}"


def prompt_heading(prompt: Prompt) -> str:
    """The heading text of a prompt in the answers section."""
    return heading_text(f"{prompt.id} · {prompt.title}")


def prompt_link(data: ReportData, prompt_id: str) -> Link | str:
    """A link to the prompt's heading (plain id when the pack has no such prompt)."""
    try:
        return Link(prompt_id, prompt_heading(data.pack.prompt(prompt_id)))
    except KeyError:
        return prompt_id


def links(data: ReportData, ids: list[str]) -> tuple[Inline, ...]:
    """Inline parts ``A1, B3`` as links (``–`` when empty)."""
    if not ids:
        return (NONE,)
    parts: list[Inline] = []
    for i, pid in enumerate(ids):
        if i:
            parts.append(", ")
        parts.append(prompt_link(data, pid))
    return tuple(parts)


def setup_blocks(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The simulated warning (when it applies) and one line of setup facts."""
    m = data.manifest
    blocks: list[Block] = []
    if data.simulated:
        title, _, text = t["simulated"].partition(": ")
        blocks.append(Callout("warning", title, blocks=(Para((text or title,)),), collapsed=False))
    started, finished = m.started_at, m.finished_at
    dur = (
        f" ({finished - started:.1f} s)"
        if isinstance(started, int | float) and isinstance(finished, int | float)
        else ""
    )
    n_ok = sum(r.ok for r in data.responses)
    n_failed = len(data.responses) - n_ok
    pack = data.pack
    parts: list[Any] = [
        Strong(t["bundle"]),
        ": ",
        Code(data.name),
        " · ",
        Strong("Pack"),
        ": ",
        f"{pack.title} (",
        Code(f"{pack.id} v{pack.version}"),
        ") · ",
        Strong(t["status"]),
        f": {_fact(m, 'status')} · ",
        Strong(t["started"]),
        f": {utc(started)} · ",
        Strong(t["finished"]),
        f": {utc(finished)}{dur} · ",
        Strong(t["cells"]),
        f": {n_ok} {t['ok']}, {n_failed} {t['failed_cells']}",
    ]
    if data.judged:
        vote = data.card.agreement.red_flag_vote if data.card else NONE
        parts += [" · ", Strong(t["judges"]), f": {joined(data.judges)} ({t['vote']} {vote})"]
    blocks.append(Para(tuple(parts)))
    return blocks


def ko_rule_lines(pack: Pack, t: dict[str, str]) -> tuple[str, str]:
    """The pack's two K.-o. branches in words (labels ``t``, the pack's language): the
    red-flag branch of its scope (naming the ``knock_out`` checks, where the pack has some)
    and the dimension floor (SPEC §10 ``passes_ko``)."""
    ko = pack.ko_rule
    dim = next(d for d in pack.dimensions if d.id == ko.dimension)
    curated = ", ".join(ko.red_flag_prompts) or NONE
    red = t["ko_red_curated"] if ko.red_flag_scope == "curated" else t["ko_red_all"]
    red = red.format(ids=curated)
    knock_out = [f"{p.id}/{c.id}" for p in pack.prompts() for c in p.checks if c.knock_out]
    if knock_out:
        red += t["ko_red_checks"].format(ids=", ".join(knock_out))
    floor = t["ko_floor"].format(dim=ko.dimension, name=dim.name, threshold=ko.threshold)
    return red, floor


def method(data: ReportData, t: dict[str, str], level: int = 2) -> list[Block]:
    """Formula, dimensions, both K.-o. branches with this pack's values, scale and rules."""
    pack = data.pack
    weights = " + ".join(f"{d.weight}·{d.id}" for d in pack.dimensions)
    red, floor = ko_rule_lines(pack, t)
    return [
        Heading(level, t["method"]),
        Heading(level + 1, t["formula"]),
        Para((Code("quality_pct = Σ(score_d × weight_d) / (5 × Σ weight_d) × 100"),)),
        Para((Code(f"= ({weights}) / {pack.max_weighted} × 100"),)),
        Table(
            (t["key"], t["dimension"], t["weight"], t["about"]),
            tuple(
                (cell(Code(d.id)), cell(d.name), num_cell(f"×{d.weight}", d.weight), cell(d.about))
                for d in pack.dimensions
            ),
        ),
        Heading(level + 1, t["ko_rule"]),
        Bullets(
            ((red,), (floor,)),
            ordered=True,
        ),
        Heading(level + 1, t["scale"]),
        Table(
            (t["fill_score"], t["definition"]),
            tuple((num_cell(str(k), k), cell(v)) for k, v in sorted(pack.scale.items())),
        ),
        Heading(level + 1, t["rules"]),
        Bullets(
            (
                (t["rule_reasoning"],),
                (t["rule_empty"],),
                (t["rule_failed"],),
                (t["rule_judge_error"],),
                (t["rule_rank"],),
            )
        ),
    ]


_MODEL_SETTINGS = ("extra_body", "sim", "keep_alive", "timeout_s", "base_url")
"""The keys of a model entry shown as its settings in the fleet table (when set)."""


def _fact(facts: BaseModel, name: str) -> str:
    """``str`` of the manifest field ``name`` as read (a null reads ``None``), ``–`` when the
    manifest lacks it."""
    return str(getattr(facts, name)) if name in facts.model_fields_set else NONE


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def _host_table(data: ReportData, host: str, t: dict[str, str]) -> Table:
    facts = data.manifest.hosts.get(host) or HostFacts()
    rows_here = [k for k in data.rows if host in (data.stats[k].hosts if k in data.stats else ())]
    engines = sorted({e for k in rows_here for e in data.stats[k].engines})
    models = list(dict.fromkeys(k[0] for k in rows_here))
    fp = facts.touchstone_footprint or Footprint()
    per_pid = fp.rss_mb or {}
    footprint = NONE
    if fp.total_rss_mb is not None:
        footprint = f"{fp.total_rss_mb:.0f} MB"
        if per_pid:
            footprint += (
                " ("
                + ", ".join(f"PID {pid}: {v:.0f} MB" for pid, v in sorted(per_pid.items()))
                + ")"
            )
    ram = facts.ram_gb
    pairs: list[tuple[str, str]] = [
        (t["cpu"], _fact(facts, "cpu")),
        (t["cores"], _fact(facts, "cpu_count")),
        (t["ram"], f"{ram} GB" if ram is not None else NONE),
        (t["gpus"], joined(data.host_gpus(host), t["none_found"])),
        (t["os"], _fact(facts, "os")),
        (
            t["node"],
            f"{str(facts.node_id or NONE)[:12]} · "
            f"{_fact(facts, 'hostname')} · {_fact(facts, 'ip')}",
        ),
        (t["engine"], joined(engines)),
        (t["models_on_host"], joined(models)),
        (t["footprint"], footprint),
    ]
    if facts.monitoring_lost_at is not None:
        lost = f"{utc(facts.monitoring_lost_at)} ({facts.monitoring_lost_reason})"
        pairs.append((t["monitoring_lost"], lost))
    return Table((t["host"], host), tuple((cell(Strong(k)), cell(v)) for k, v in pairs))


def hardware(data: ReportData, t: dict[str, str], level: int = 2) -> list[Block]:
    """Per host: facts, engines, footprint and its memory timeline; then models, sampling and
    the variants' system prompts."""
    hosts = list(data.manifest.hosts) or sorted({r.host for r in data.responses})
    for h in sorted(data.samples):
        if h not in hosts:
            hosts.append(h)
    blocks: list[Block] = [Heading(level, t["hardware"])]
    for host in hosts:
        blocks += [Heading(level + 1, f"{t['host']} {host}"), _host_table(data, host, t)]
        blocks += engine_footprint(data, host, t)
        blocks.append(memory_chart(data, host, t))
    rows = []
    for m in data.manifest.models:
        settings = {k: getattr(m, k) for k in _MODEL_SETTINGS if getattr(m, k)}
        rows.append(
            (
                cell(Code(m.model)),
                cell(_fact(m, "engine")),
                cell(str(m.host or "local")),
                num_cell(_fact(m, "concurrency"), m.concurrency),
                cell(_compact(settings) if settings else NONE),
            )
        )
    blocks += [
        Heading(level + 1, t["fleet"]),
        Table((t["model"], t["engine"], t["host"], t["concurrency"], t["settings"]), tuple(rows)),
    ]
    ray = data.manifest.ray or RayInfo()
    sampling = data.manifest.sampling or data.pack.sampling.model_dump()
    blocks.append(
        Para(
            (
                Strong(t["sampling"]),
                f": {_compact(sampling)} · Ray {_fact(ray, 'version')}",
                f" · touchstone {_fact(data.manifest, 'touchstone_version')}",
            )
        )
    )
    blocks.append(Heading(level + 1, t["system_prompts"]))
    for v in data.pack.prompt_variants:
        if v.system_prompt is None:
            blocks.append(Para((Code(v.id), f": {t['no_system_prompt']}")))
        else:
            blocks.append(Callout("quote", f"{t['system_prompt']} {v.id}", text=v.system_prompt))
    return blocks


def glossary(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Every metric with its definition and unit."""
    rows = tuple(
        (cell(Strong(term)), cell(definition), cell(unit))
        for term, definition, unit in lang.glossary(data.lang)
    )
    return [Heading(2, t["glossary"]), Table((t["term"], t["definition"], t["unit"]), rows)]


def frontmatter(data: ReportData) -> dict[str, Any]:
    """Setup facts and headline results as Obsidian properties (flat, Bases-friendly)."""
    m = data.manifest
    hosts = list(m.hosts) or sorted({r.host for r in data.responses})
    gpus = sorted({g for h in hosts for g in data.host_gpus(h)})
    fm: dict[str, Any] = {
        "type": "touchstone-report",
        "bundle": data.name,
        "pack": data.pack.id,
        "pack_version": data.pack.version,
        "pack_title": data.pack.title,
        "language": data.lang,
        "judged": data.judged,
        "simulated": data.simulated,
        "status": m.status,
        "started_utc": _iso(m.started_at),
        "finished_utc": _iso(m.finished_at),
        "touchstone_version": m.touchstone_version,
        "ray_version": m.ray.version if m.ray else None,
        "hosts": hosts,
        "gpus": gpus,
        "engines": sorted({e for s in data.stats.values() for e in s.engines}),
        "models": list(dict.fromkeys(r[0] for r in data.rows)),
        "variants": [v.id for v in data.pack.prompt_variants],
        "cells": len(data.responses),
        "cells_failed": sum(not r.ok for r in data.responses),
    }
    if data.judged:
        passed = [r for r in data.card_rows.values() if r.ko_passed]
        best = data.card_rows.get(data.rows[0]) if data.rows else None
        fm.update(
            {
                "judges": data.judges,
                "rows_total": len(data.card_rows),
                "rows_ko_passed": len(passed),
                "best_model": best.model if best else None,
                "best_variant": best.variant if best else None,
                "best_quality_pct": _round(best.quality_pct) if best else None,
                "best_ko_passed": best.ko_passed if best else None,
            }
        )
    fm["tags"] = ["touchstone", f"touchstone/{data.pack.id}"]
    return fm


def _iso(ts: Any) -> str | None:
    return iso_utc(ts) if isinstance(ts, int | float) else None


def _round(value: Any) -> float | None:
    return round(float(value), 1) if isinstance(value, int | float) else None
