"""Ray metrics of the eval (SPEC §8), exported by each node's client actor.

``ray.util.metrics`` adds the ``ray_`` prefix (counters get ``_total``): e.g.
``ray_touchstone_cells_total{model,host,status}`` on that node's metrics export port.
Metrics never break a run: any failure to create or record one is ignored.
"""

from __future__ import annotations

import contextlib
from typing import Any

TTFT_BOUNDARIES_S = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0]
TPS_BOUNDARIES = [1.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0]

PROMETHEUS_CELL_METRICS = (
    "ray_touchstone_cells_total",
    "ray_touchstone_cells_in_flight",
    "ray_touchstone_ttft_seconds",  # histogram: _bucket, _sum, _count
    "ray_touchstone_decode_tokens_per_second",  # histogram
)
"""Names under which this module's metrics reach Prometheus (``cluster/grafana``)."""
PROMETHEUS_HOST_METRICS = (
    "ray_touchstone_host_sys_used_mb",
    "ray_touchstone_host_mem_pressure",
    "ray_touchstone_gpu_mem_used_mb",
    "ray_touchstone_gpu_util_pct",
)
"""The monitor actor's gauges (:mod:`touchstone_ray.telemetry.monitor`), as Prometheus sees them."""


class CellMetrics:
    """Counters, gauges and histograms of one client actor."""

    def __init__(self) -> None:
        self._m: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            from ray.util import metrics

            self._m = {
                "cells": metrics.Counter(
                    "touchstone_cells",
                    description="Cells finished, by model, host and status (ok|error).",
                    tag_keys=("model", "host", "status"),
                ),
                "in_flight": metrics.Gauge(
                    "touchstone_cells_in_flight",
                    description="Requests in flight per model.",
                    tag_keys=("model",),
                ),
                "ttft": metrics.Histogram(
                    "touchstone_ttft_seconds",
                    description="Time to first token (s).",
                    boundaries=TTFT_BOUNDARIES_S,
                    tag_keys=("model",),
                ),
                "tps": metrics.Histogram(
                    "touchstone_decode_tokens_per_second",
                    description="Decode throughput (tok/s).",
                    boundaries=TPS_BOUNDARIES,
                    tag_keys=("model",),
                ),
            }

    def in_flight(self, model: str, value: int) -> None:
        """Set the in-flight gauge of ``model``."""
        with contextlib.suppress(Exception):
            if "in_flight" in self._m:
                self._m["in_flight"].set(value, tags={"model": model})

    def cell_done(self, record: dict[str, Any]) -> None:
        """Count a finished cell and observe its TTFT and decode tok/s."""
        with contextlib.suppress(Exception):
            if not self._m:
                return
            model = str(record["model"])
            status = "ok" if record.get("ok") else "error"
            self._m["cells"].inc(1, tags={"model": model, "host": record["host"], "status": status})
            if record.get("ttft_s") is not None:
                self._m["ttft"].observe(record["ttft_s"], tags={"model": model})
            if record.get("decode_tps") is not None:
                self._m["tps"].observe(record["decode_tps"], tags={"model": model})
