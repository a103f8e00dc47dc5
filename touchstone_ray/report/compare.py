"""``touchstone-ray compare``: one table across bundles, hardware × quality.

One row per (bundle, model, variant): bundle, host(s) with their GPUs, model, variant,
quality %, K.-o., TTFT p50 (s), median decode tok/s and memory (MB). A judged bundle
(one with ``scorecard.json``) gives quality and K.-o. from its scorecard; an unjudged one
shows ``–`` there. Speed and memory come from the scorecard row when present, else from
the responses (SPEC §9: ok, non-cold-start, uncontended, unthrottled cells).

Memory across machines: the engine's own peak RSS (``engine_rss_peak_mb``) when its process
was found, since it does not depend on what else the machine runs; else the system's peak
RAM. ``memory_source`` (``engine`` | ``system``) says which, and the table marks it.

Printed as an aligned table; with ``--out`` also written as ``compare.md`` and
``compare.csv`` (raw numbers, snake_case headers) into that folder.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from touchstone_ray.bundle import Layout
from touchstone_ray.doc.fmt import NONE, mb, num, pct
from touchstone_ray.errors import UsageError
from touchstone_ray.lang import labels
from touchstone_ray.report._compare_row import CompareRow
from touchstone_ray.report._data import ReportData, load_report_data
from touchstone_ray.report.perf_join import (
    capacity_by_model_host,
    is_perf_bundle,
    join_capacity,
    perf_only_rows,
    sweep_by_model_host,
)
from touchstone_ray.scoring.scorecard_model import ScorecardRow
from touchstone_ray.storage import atomic_write_text

__all__ = [
    "CompareRow",
    "compare_bundles",
    "compare_cells",
    "compare_head",
    "compare_rows",
    "render_compare",
]


def _rows_of(data: ReportData, lang: str) -> list[CompareRow]:
    no_gpu = labels(lang)["no_gpu"]
    out = []
    for key in data.rows:
        stats = data.stats.get(key)
        card = data.card_rows.get(key)
        hosts = stats.hosts if stats else ()
        where = "; ".join(f"{h}: {', '.join(data.host_gpus(h)) or no_gpu}" for h in hosts)

        def pick(
            field: str, fallback: float | None, card: ScorecardRow | None = card
        ) -> float | None:
            value = getattr(card, field) if card is not None else None
            return float(value) if value is not None else fallback

        peak_ram = pick("peak_ram_mb", stats.peak_ram_mb if stats else None)
        engine = pick("engine_rss_peak_mb", stats.engine_rss_peak_mb if stats else None)
        source = "engine" if engine is not None else "system" if peak_ram is not None else None
        out.append(
            CompareRow(
                bundle=data.name,
                pack=f"{data.pack.id} v{data.pack.version}",
                hosts=where or NONE,
                model=key[0],
                variant=key[1],
                quality_pct=pick("quality_pct", None),
                ko_passed=card.ko_passed if card is not None else None,
                ko_reason=card.ko_reason if card is not None else "",
                ttft_p50_s=pick("ttft_p50_s", stats.ttft_p50_s if stats else None),
                decode_tps_median=pick(
                    "decode_tps_median", stats.decode_tps_median if stats else None
                ),
                peak_ram_mb=peak_ram,
                simulated=data.simulated,
                engine_rss_peak_mb=engine,
                memory_mb=engine if engine is not None else peak_ram,
                memory_source=source,
            )
        )
    return out


def compare_rows(roots: Sequence[Path], lang: str | None = None) -> tuple[list[CompareRow], str]:
    """The rows of every bundle (given order, then ranking order; then one row per (model,
    host) of a perf bundle that no eval row has, see
    :func:`~touchstone_ray.report.perf_join.perf_only_rows`) and the report language: ``lang``
    when given (the web UI's page language), else the packs' language when all agree, else
    ``en``; the rows' texts (``no GPU``) are in it. Raises
    :class:`~touchstone_ray.errors.BundleError` naming the first unusable bundle."""
    if not roots:
        raise UsageError("compare: name at least one bundle")
    rows: list[CompareRow] = []
    langs = set()
    perf = [Path(r) for r in roots if is_perf_bundle(Path(r))]
    for root in roots:
        root = Path(root)
        if root in perf:
            continue
        judged = Layout(root).scorecard_json.is_file()
        data = load_report_data(root, judged=judged)
        langs.add(data.lang)
        rows += _rows_of(data, lang or data.lang)
    if lang is None:
        lang = langs.pop() if len(langs) == 1 else "en"
    if perf:
        rows = join_capacity(rows, capacity_by_model_host(perf), sweep_by_model_host(perf))
        rows += perf_only_rows(perf, rows, lang)
    return rows, lang


def compare_cells(
    row: CompareRow, t: dict[str, str], with_users: bool = False, with_rate: bool = False
) -> list[str]:
    """The comparison table's cells of ``row`` as text (labels ``t``), in
    :func:`compare_head` order; ``with_users`` adds the users-at-SLO column, ``with_rate``
    the sustainable rate of ``perf --sweep`` (requests/s)."""
    if row.ko_passed is None:
        ko = NONE
    else:
        ko = t["passed"] if row.ko_passed else f"{t['failed']}: {row.ko_reason}"
    return (
        [
            row.bundle,
            row.hosts,
            row.model,
            row.variant,
            pct(row.quality_pct),
            ko,
            num(row.ttft_p50_s, 3),
            num(row.decode_tps_median, 1),
            mb(row.memory_mb)
            + (f" ({t['mem_' + row.memory_source]})" if row.memory_source else ""),
        ]
        + (
            []
            if not with_users
            else [NONE if row.users_at_slo is None else f"{row.users_at_slo} ({row.users_slo})"]
        )
        + ([num(row.sustainable_rps, 2)] if with_rate else [])
    )


def compare_head(t: dict[str, str], with_users: bool = False, with_rate: bool = False) -> list[str]:
    """The comparison table's column titles (labels ``t``)."""
    return (
        [
            t["bundle"],
            f"{t['host']} / {t['gpus']}",
            t["model"],
            t["variant"],
            t["quality"],
            t["ko"],
            t["ttft_p50"],
            t["tps"],
            t["memory_mb"],
        ]
        + ([t["users_slo"]] if with_users else [])
        + ([t["sustainable_rps"]] if with_rate else [])
    )


def _csv(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def render_compare(rows: Sequence[CompareRow], lang: str) -> tuple[str, str, str]:
    """The comparison as (terminal text, Markdown, CSV)."""
    t = labels(lang)
    with_users = any(r.users_at_slo is not None for r in rows)
    with_rate = any(r.sustainable_rps is not None for r in rows)
    head = compare_head(t, with_users, with_rate)
    body = [compare_cells(r, t, with_users, with_rate) for r in rows]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    text = "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in body)])

    def md(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    parts = ["# touchstone compare", ""]
    if any(r.simulated for r in rows):
        parts += [f"> [!warning]\n> {t['simulated']}", ""]
    parts += [md(head), md(["---"] * len(head)), *(md(r) for r in body)]
    markdown = "\n".join(parts) + "\n"

    buf = io.StringIO()
    fields = list(CompareRow.__dataclass_fields__)
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _csv(v) for k, v in asdict(r).items()})
    return text, markdown, buf.getvalue()


def compare_bundles(roots: Sequence[Path], out: Path | None = None) -> tuple[str, list[Path]]:
    """Compare ``roots``; returns the printable table and, with ``out``, the written
    ``compare.md`` and ``compare.csv``."""
    rows, lang = compare_rows(roots)
    text, markdown, table = render_compare(rows, lang)
    written: list[Path] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for name, content in (("compare.md", markdown), ("compare.csv", table)):
            atomic_write_text(out / name, content)
            written.append(out / name)
    return text, written
