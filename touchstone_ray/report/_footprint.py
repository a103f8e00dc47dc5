"""The engine's own footprint per model and host, beside the system figures (SPEC §7, §9).

Per host, one row per model that ran there: how its serving process was found (PID and by
port or ``engine_process``) or why not (``bundle.json`` ``hosts.<host>.engines``), the engine's
peak RSS (max ``engine_rss_mb``), its growth over the baseline (max ``engine_rss_delta_mb``),
peak GPU memory (max ``engine_gpu_mem_mb``), mean CPU (% of one core), and beside them the
system's peak RAM and model delta, and the contended cells. Memory MB.

With ``scheduling.models_per_host`` > 1 models share a host and its baseline, so the system
delta mixes them: a note says that the per-engine figures are the ones to trust. Hosts without
any engine data (older bundles, simulated fleets whose models all lack a process) show no
table, so their reports are unchanged.
"""

from __future__ import annotations

import yaml

from touchstone_ray.bundle import EngineFound, Layout
from touchstone_ray.doc import Block, Callout, Code, Table, cell, num_cell
from touchstone_ray.doc.fmt import NONE, mb, num
from touchstone_ray.records import EvalResponse
from touchstone_ray.report._data import ReportData
from touchstone_ray.scoring.aggregates import row_stats
from touchstone_ray.telemetry.engines import endpoint_of

__all__ = ["engine_footprint", "models_per_host"]


def models_per_host(data: ReportData) -> int:
    """``scheduling.models_per_host`` of the frozen ``config.yaml`` (1 when unreadable)."""
    try:
        config = yaml.safe_load(Layout(data.root).config.read_text(encoding="utf-8"))
        value = config["scheduling"]["models_per_host"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return 1
    return value if isinstance(value, int) else 1


def _process(status: EngineFound | None, t: dict[str, str]) -> str:
    if status is None:
        return NONE
    if status.pid is not None:
        return f"PID {status.pid} ({t['engine_found_' + str(status.found_by)]})"
    return str(status.reason or NONE)


def engine_footprint(data: ReportData, host: str, t: dict[str, str]) -> list[Block]:
    """The footprint table of ``host`` (and the multi-model note), or ``[]`` without data."""
    base_urls = {m.model: m.base_url for m in data.manifest.models}
    facts = data.manifest.hosts.get(host)
    status = (facts.engines if facts else None) or {}
    by_model: dict[str, list[EvalResponse]] = {}
    for r in data.responses:
        if r.host == host:
            by_model.setdefault(r.model, []).append(r)
    if not status and not any(r.engine_rss_mb is not None for rs in by_model.values() for r in rs):
        return []
    rows = []
    for model, rs in by_model.items():
        st = status.get(endpoint_of(model, base_urls.get(model)))
        stats = row_stats(rs)
        peak, delta = stats.engine_rss_peak_mb, stats.engine_rss_delta_mb
        gpu, cpu = stats.engine_gpu_mem_mb, stats.engine_cpu_pct
        sys_peak, sys_delta, contended = stats.peak_ram_mb, stats.model_delta_mb, stats.n_contended
        rows.append(
            (
                cell(Code(model)),
                cell(_process(st, t)),
                num_cell(mb(peak), peak),
                num_cell(mb(delta), delta),
                num_cell(mb(gpu), gpu),
                num_cell(num(cpu, 0), cpu),
                num_cell(mb(sys_peak), sys_peak),
                num_cell(mb(sys_delta), sys_delta),
                num_cell(str(contended), contended),
            )
        )
    head = (
        t["model"],
        t["engine_process"],
        t["engine_rss_peak"],
        t["engine_rss_delta"],
        t["engine_gpu_mem"],
        t["engine_cpu"],
        t["peak_ram"],
        t["model_delta"],
        t["contended_cells"],
    )
    blocks: list[Block] = [Table(head, tuple(rows), sortable=True)]
    if models_per_host(data) > 1 and len(by_model) > 1:
        blocks.append(
            Callout("warning", t["multi_model_title"], text=t["multi_model_note"], collapsed=False)
        )
    return blocks
