"""``compare`` with perf bundles: capacity joined onto eval rows on (model, host), and one
row of its own for each (model, host) of a perf bundle that no eval row has."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from touchstone_ray.bundle import Layout, Manifest
from touchstone_ray.doc import NONE
from touchstone_ray.errors import BundleError
from touchstone_ray.perf.report import is_perf_bundle
from touchstone_ray.report._compare_row import CompareRow

__all__ = [
    "capacity_by_model_host",
    "is_perf_bundle",
    "join_capacity",
    "perf_only_rows",
    "sweep_by_model_host",
]


def _summary(root: Path) -> dict[str, Any]:
    try:
        data = json.loads(Layout(root).summary.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{root}: summary.json is missing or unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{root}: summary.json is not a JSON object")
    return data


def capacity_by_model_host(roots: Sequence[Path]) -> dict[tuple[str, str], tuple[int, str]]:
    """``(model, host) → (users at once, "ttft=…,tpot=…")`` from the ``summary.json`` of each
    perf bundle (a later bundle wins). Raises BundleError for a perf bundle without one."""
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for root in roots:
        summary = _summary(root)
        for entry in (summary.get("capacity") or {}).values():
            slo = ",".join(f"{k}={v:g}" for k, v in entry["slo"].items())
            out[(entry["model"], entry["host"])] = (int(entry["capacity"]), slo)
    return out


def sweep_by_model_host(roots: Sequence[Path]) -> dict[tuple[str, str], float | None]:
    """``(model, host) → sustainable rate`` (requests/s, ``None`` when the sweep sustained no
    rate) from the ``summary.json`` ``sweep`` of each perf bundle (a later bundle wins).
    Raises BundleError for a perf bundle without one."""
    out: dict[tuple[str, str], float | None] = {}
    for root in roots:
        for entry in (_summary(root).get("sweep") or {}).values():
            rate = entry.get("sustainable_rate")
            out[(entry["model"], entry["host"])] = None if rate is None else float(rate)
    return out


def _row_hosts(row: CompareRow) -> list[str]:
    """The host names of a row's ``hosts`` text (``host: GPU; host: –``)."""
    return [part.split(": ", 1)[0] for part in row.hosts.split("; ") if ": " in part]


def join_capacity(
    rows: list[CompareRow],
    capacity: dict[tuple[str, str], tuple[int, str]],
    sweep: dict[tuple[str, str], float | None] | None = None,
) -> list[CompareRow]:
    """``rows`` with ``users_at_slo``/``users_slo`` set where a row's model ran on exactly
    one host and that (model, host) has a capacity, and ``sustainable_rps`` where it has a
    ``--sweep`` result (``sweep``). The row's model may be a label ``id@host``; its host
    names are read from ``hosts`` (``host: GPU; host: –``)."""
    out = []
    for row in rows:
        hosts = _row_hosts(row)
        model = row.model.split("@", 1)[0] if "@" in row.model else row.model
        found = None
        if len(hosts) == 1:
            found = capacity.get((row.model, hosts[0])) or capacity.get((model, hosts[0]))
            rate = (sweep or {}).get((row.model, hosts[0]), (sweep or {}).get((model, hosts[0])))
            if rate is not None:
                row = dataclasses.replace(row, sustainable_rps=rate)
        if found is not None:
            row = dataclasses.replace(row, users_at_slo=found[0], users_slo=found[1])
        out.append(row)
    return out


def _covered(rows: Sequence[CompareRow]) -> set[tuple[str, str]]:
    """``(model, host)`` pairs the eval rows have, under both a label ``id@host`` and its id."""
    out = set()
    for row in rows:
        for host in _row_hosts(row):
            out.add((row.model, host))
            out.add((row.model.split("@", 1)[0], host))
    return out


def _single_user_point(points: list[dict[str, Any]], model: str, host: str) -> dict[str, Any]:
    """The summary point of ``model`` on ``host`` at the smallest cold context, concurrency 1
    (the closest to an eval cell: one user, nothing cached); ``{}`` when there is none."""
    cold = [
        p
        for p in points
        if p.get("model") == model
        and p.get("host") == host
        and not p.get("cached")
        and p.get("concurrency") == 1
    ]
    return min(cold, key=lambda p: int(p.get("context_target_tokens") or 0), default={})


def _gpus(manifest: Manifest, host: str, no_gpu: str) -> str:
    facts = manifest.hosts.get(host)
    return ", ".join(facts.gpu_names() if facts else []) or no_gpu


def perf_only_rows(
    roots: Sequence[Path], rows: Sequence[CompareRow], lang: str = "en"
) -> list[CompareRow]:
    """One row per (model, host) of the perf bundles ``roots`` that none of the eval
    ``rows`` has and that has a point in ``summary.json`` (a later bundle wins), in the
    order the manifest planned them (the fleet config's): pack, variant and the
    quality columns empty (``–``, ``None`` in the CSV); TTFT p50 (s) and median decode tok/s
    of the smallest cold context at concurrency 1 of ``summary.json`` (``None`` without such
    a point, or when every request of it was excluded); memory: the peak ``engine_rss_mb``
    of the point requests (source ``engine``), else their peak ``sys_used_mb`` (``system``);
    the users at once under the SLO where ``--capacity`` ran, the sustainable rate where
    ``--sweep`` ran. Raises BundleError for a perf
    bundle without a readable ``summary.json`` or request shards."""
    from touchstone_ray.lang import labels
    from touchstone_ray.perf.bundle import PerfBundle, read_points

    no_gpu = labels(lang)["no_gpu"]
    covered = _covered(rows)
    found: dict[tuple[str, str], CompareRow] = {}
    for root in roots:
        manifest = PerfBundle(root).manifest()
        summary = _summary(root)
        points = [p for p in summary.get("points") or [] if isinstance(p, dict)]
        capacity = {(e["model"], e["host"]): e for e in (summary.get("capacity") or {}).values()}
        sweep = {(e["model"], e["host"]): e for e in (summary.get("sweep") or {}).values()}
        engine_mb: dict[tuple[str, str], float] = {}
        system_mb: dict[tuple[str, str], float] = {}
        for r in read_points(root):
            pair = (r.model, r.host)
            if r.engine_rss_mb is not None:
                engine_mb[pair] = max(engine_mb.get(pair, 0.0), r.engine_rss_mb)
            if r.sys_used_mb is not None:
                system_mb[pair] = max(system_mb.get(pair, 0.0), r.sys_used_mb)
        planned = [(p.model, p.host) for p in manifest.points or []]
        pairs = list(dict.fromkeys(planned + [(str(p["model"]), str(p["host"])) for p in points]))
        measured = {(str(p["model"]), str(p["host"])) for p in points}
        for model, host in pairs:
            if (model, host) in covered or (model, host) not in measured:
                continue
            single = _single_user_point(points, model, host)
            cap = capacity.get((model, host))
            engine = engine_mb.get((model, host))
            system = system_mb.get((model, host))
            memory = engine if engine is not None else system
            found[(model, host)] = CompareRow(
                bundle=root.name,
                pack=NONE,
                hosts=f"{host}: {_gpus(manifest, host, no_gpu)}",
                model=model,
                variant=NONE,
                quality_pct=None,
                ko_passed=None,
                ko_reason="",
                ttft_p50_s=(single.get("ttft_s") or {}).get("p50"),
                decode_tps_median=single.get("decode_tps_median"),
                peak_ram_mb=system,
                simulated=bool(manifest.simulated),
                engine_rss_peak_mb=engine,
                memory_mb=memory,
                memory_source=(
                    "engine" if engine is not None else "system" if system is not None else None
                ),
                users_at_slo=int(cap["capacity"]) if cap else None,
                users_slo=",".join(f"{k}={v:g}" for k, v in cap["slo"].items()) if cap else None,
                sustainable_rps=(sweep.get((model, host)) or {}).get("sustainable_rate"),
            )
    return list(found.values())
