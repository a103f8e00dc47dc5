"""Speed and resources: the TTFT chart, the latency and resource tables (SPEC §9
aggregates: seconds, tokens/s, MB) and each host's memory timeline.

Every speed figure says how it was measured: single stream or under load (``concurrency`` >
1, its TTFT includes the server's queue), and how many cells were prompt-cache hits (left out
of the prompt-side figures by :mod:`touchstone_ray.scoring.aggregates`)."""

from __future__ import annotations

from touchstone_ray.doc import Block, Chart, Heading, Para, Table, cell, charts, num_cell
from touchstone_ray.doc.fmt import NONE, mb, num
from touchstone_ray.records import HostSample
from touchstone_ray.report._context import cut_prompts
from touchstone_ray.report._data import ReportData
from touchstone_ray.scoring.aggregates import counts_for_prompt, under_load

__all__ = ["load_label", "memory_chart", "speed"]


def load_label(concurrency: int | None, t: dict[str, str]) -> str:
    """``under load (c = N)`` for c > 1, ``single stream (c = 1)`` for 1, ``–`` unknown."""
    if concurrency is None:
        return NONE
    return t["under_load"].format(n=concurrency) if under_load(concurrency) else t["single_stream"]


def _memory_series(data: ReportData, host: str) -> charts.MemorySeries:
    samples = data.samples.get(host, [])
    phases = data.phases.get(host, [])
    starts = [s.ts for s in samples[:1]] + [p.t_start for p in phases[:1]]
    t0 = min(starts) if starts else 0.0
    throttled: list[float] = []
    pressure: list[float] = []
    prev_count: int | None = None
    for s in samples:
        reasons = {r for g in s.gpus or [] for r in g.throttle_reasons or []}
        count = s.cpu_throttle_count
        if reasons - {"gpu_idle"} or (
            count is not None and prev_count is not None and count > prev_count
        ):
            throttled.append(s.ts - t0)
        prev_count = count if count is not None else prev_count
        if s.mem_pressure in ("warn", "critical"):
            pressure.append(s.ts - t0)
    last = samples[-1].ts if samples else t0
    return charts.MemorySeries(
        t_s=[s.ts - t0 for s in samples],
        ram_gb=[None if s.sys_used_mb is None else s.sys_used_mb / 1024 for s in samples],
        gpu_gb=[
            sum(g.mem_used_mb for g in s.gpus if g.mem_used_mb is not None) / 1024
            if s.gpus and any(g.mem_used_mb is not None for g in s.gpus)
            else None
            for s in samples
        ],
        phases=[(p.model, p.t_start - t0, (p.t_end or last) - t0) for p in phases],
        throttled_s=throttled,
        pressure_s=pressure,
        engines_gb=_engine_series(samples),
    )


def _engine_series(samples: list[HostSample]) -> dict[str, list[float | None]]:
    """Per endpoint sampled on the host, its engine RSS (GB) at each sample."""
    names = list(dict.fromkeys(e.endpoint for s in samples for e in s.engines or []))
    out: dict[str, list[float | None]] = {}
    for name in names:
        series: list[float | None] = []
        for s in samples:
            e = next((e for e in s.engines or [] if e.endpoint == name), None)
            series.append(None if e is None or e.rss_mb is None else e.rss_mb / 1024)
        out[name] = series
    return out


def memory_chart(data: ReportData, host: str, t: dict[str, str]) -> Chart:
    """RAM and GPU memory of ``host`` over the run, model phases shaded."""
    labels = {
        "x": "s",
        "ram": "RAM (GB)",
        "gpu": f"{t['gpus']} (GB)",
        "throttled": t["throttled_mark"],
        "pressure": t["pressure_mark"],
        "empty": t["none_found"],
        "engine": t["engine_rss_line"],
    }
    return Chart(
        "memory-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in host),
        f"{t['memory_timeline']}: {host}",
        charts.memory_svg(host, _memory_series(data, host), labels=labels),
    )


def _latency_table(data: ReportData, t: dict[str, str]) -> Table:
    head = (
        t["model"],
        t["variant"],
        t["measured"],
        t["ttft_p50"],
        t["ttft_cold"],
        t["ttft_p95"],
        t["ttfa_p50"],
        t["e2e_p50"],
        t["e2e_p95"],
        t["tpot"],
        t["itl_p50"],
        t["tps"],
        t["prefill_tps"],
        t["cv_ttft"],
    )
    body = []
    for row in data.rows:
        s = data.stats.get(row)
        if s is None:
            continue
        body.append(
            (
                cell(row[0]),
                cell(row[1]),
                cell(load_label(data.concurrency(row[0]), t)),
                num_cell(num(s.ttft_p50_s, 3), s.ttft_p50_s),
                num_cell(num(s.ttft_cold_p50_s, 3), s.ttft_cold_p50_s),
                num_cell(num(s.ttft_p95_s, 3), s.ttft_p95_s),
                num_cell(num(s.ttfa_p50_s, 3), s.ttfa_p50_s),
                num_cell(num(s.e2e_p50_s, 3), s.e2e_p50_s),
                num_cell(num(s.e2e_p95_s, 3), s.e2e_p95_s),
                num_cell(num(s.tpot_median_s, 4), s.tpot_median_s),
                num_cell(num(s.itl_p50_median_s, 4), s.itl_p50_median_s),
                num_cell(num(s.decode_tps_median, 1), s.decode_tps_median),
                num_cell(num(s.prefill_tps_median, 1), s.prefill_tps_median),
                num_cell(num(s.ttft_cv_pct, 1), s.ttft_cv_pct),
            )
        )
    return Table(head, tuple(body), sortable=True)


def _resource_table(data: ReportData, t: dict[str, str]) -> Table:
    head = (
        t["model"],
        t["variant"],
        t["cells"],
        t["failed_short"],
        t["cold_short"],
        t["cached_short"],
        t["trunc_short"],
        t["peak_ram"],
        t["delta"],
        t["gpu_mem"],
        t["gpu_delta"],
        t["throttled_cells"],
        t["pressure"],
    )
    body = []
    for row in data.rows:
        s = data.stats.get(row)
        if s is None:
            continue
        body.append(
            (
                cell(row[0]),
                cell(row[1]),
                num_cell(str(s.n_cells), s.n_cells),
                num_cell(str(s.n_failed), s.n_failed),
                num_cell(str(s.n_cold), s.n_cold),
                num_cell(str(s.n_cached), s.n_cached),
                num_cell(str(s.n_truncated), s.n_truncated),
                num_cell(mb(s.peak_ram_mb), s.peak_ram_mb),
                num_cell(mb(s.model_delta_mb), s.model_delta_mb),
                num_cell(mb(s.peak_gpu_mem_mb), s.peak_gpu_mem_mb),
                num_cell(mb(s.gpu_mem_delta_mb), s.gpu_mem_delta_mb),
                num_cell(
                    NONE if s.throttled_cells is None else str(s.throttled_cells), s.throttled_cells
                ),
                cell(s.mem_pressure_max or NONE),
            )
        )
    return Table(head, tuple(body), sortable=True)


def speed(data: ReportData, t: dict[str, str], level: int) -> list[Block]:
    """Latency (TTFT chart and table, the cache-hit count), prompts the server cut, and
    resources (table), as headings of ``level``."""
    groups: dict[str, list[float]] = {}
    for r in data.responses:
        if counts_for_prompt(r) and r.ttft_s is not None:
            groups.setdefault(r.model, []).append(r.ttft_s)
    svg = charts.ttft_svg(groups, labels={"y": "TTFT (s)", "empty": t["none_found"]})
    blocks: list[Block] = [
        Heading(level, t["latency"]),
        Chart("ttft", t["ttft_chart"], svg),
        _latency_table(data, t),
    ]
    n_cached = sum(s.n_cached for s in data.stats.values())
    if n_cached:
        total = sum(s.n_cells for s in data.stats.values())
        blocks.append(Para((t["cache_note"].format(n=n_cached, total=total),)))
    blocks += cut_prompts(data, t, level)
    return [*blocks, Heading(level, t["resources"]), _resource_table(data, t)]
