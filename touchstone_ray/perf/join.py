"""``compare`` with perf bundles: capacity joined onto eval rows on (model, host)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from touchstone_ray.bundle import Layout
from touchstone_ray.errors import BundleError
from touchstone_ray.perf.report import is_perf_bundle

if TYPE_CHECKING:
    from touchstone_ray.report.compare import CompareRow

__all__ = ["capacity_by_model_host", "is_perf_bundle", "join_capacity"]


def capacity_by_model_host(roots: Sequence[Path]) -> dict[tuple[str, str], tuple[int, str]]:
    """``(model, host) → (users at once, "ttft=…,tpot=…")`` from the ``summary.json`` of each
    perf bundle (a later bundle wins). Raises BundleError for a perf bundle without one."""
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for root in roots:
        try:
            summary = json.loads(Layout(root).summary.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BundleError(f"{root}: summary.json is missing or unreadable ({exc})") from None
        for entry in (summary.get("capacity") or {}).values():
            slo = ",".join(f"{k}={v:g}" for k, v in entry["slo"].items())
            out[(entry["model"], entry["host"])] = (int(entry["capacity"]), slo)
    return out


def join_capacity(
    rows: list[CompareRow], capacity: dict[tuple[str, str], tuple[int, str]]
) -> list[CompareRow]:
    """``rows`` with ``users_at_slo``/``users_slo`` set where a row's model ran on exactly
    one host and that (model, host) has a capacity. The row's model may be a label
    ``id@host``; its host names are read from ``hosts`` (``host: GPU; host: –``)."""
    out = []
    for row in rows:
        hosts = [part.split(": ", 1)[0] for part in row.hosts.split("; ") if ": " in part]
        model = row.model.split("@", 1)[0] if "@" in row.model else row.model
        found = None
        if len(hosts) == 1:
            found = capacity.get((row.model, hosts[0])) or capacity.get((model, hosts[0]))
        if found is not None:
            row = dataclasses.replace(row, users_at_slo=found[0], users_slo=found[1])
        out.append(row)
    return out
