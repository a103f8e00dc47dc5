"""Driver memory of ``touchstone-ray eval`` at 20k and 100k cells (issues [eval], [dispatch]).

Runs the real CLI against a fast simulator (OpenAI protocol, TTFT 1 ms, 5000 tok/s, 8 tokens)
in its own process on loopback: one model on host ``local``, concurrency 16, Ray without
dashboard. The pack is synthetic: N prompts × 20 repeats × 2 variants (500 → 20k cells,
2500 → 100k cells). The driver process itself (not its Ray children) is sampled with psutil every
0.2 s. Per size it reports, in MB: the peak over the driver's whole life, the peak while the
cells ran (``model_start`` → ``model_done``), RSS when the cells started and ended, the peak
after the cells (finalize, shutdown), the final sample, the growth per 1000 cells, and cells/s
(cells ÷ ``warmup`` → ``model_done``; and ÷ ``run_start`` → ``run_done``).

Goal: flat (the 100k peak within 10 % of the 20k peak) and peak ≤ 350 MB.

    python bench/bench_eval_memory.py [--reps 3] [--sizes 20000,100000] [--quick]

``--quick``: 1 rep. Prints one JSON summary on stdout; progress goes to stderr. About 6–7
minutes per rep with the defaults on a quiet 2-core machine, several times that on a busy one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    MODEL_ID,
    SimProcess,
    dump,
    events,
    fleet_config,
    log,
    machine,
    ray_env,
    run_eval_cli,
    scratch,
    spread,
    synthetic_pack,
    write_yaml,
)

SIM = {"ttft_ms": 1, "tps": 5000, "answer_tokens": 8, "models": [MODEL_ID]}
CONCURRENCY = 16
REPEATS = 20
VARIANTS = 2
GOAL_PEAK_MB = 350.0
FLAT_TOLERANCE = 0.10
"""'Flat': the largest size's peak at most this fraction above the smallest size's peak."""
FIGURES = (
    "peak_rss_mb",
    "final_rss_mb",
    "cells_start_rss_mb",
    "cells_end_rss_mb",
    "cells_peak_rss_mb",
    "stop_finalize_peak_rss_mb",
    "exit_peak_rss_mb",
    "growth_mb_per_1k_cells",
    "cells_per_s",
    "matrix_cells_per_s",
    "wall_s",
)
"""The figures summarised over reps (each run's full record is under ``runs``)."""


def one_run(n_cells: int) -> dict[str, Any]:
    """One ``touchstone-ray eval`` of ``n_cells`` cells; its memory and speed figures."""
    n_prompts = n_cells // (REPEATS * VARIANTS)
    assert n_prompts * REPEATS * VARIANTS == n_cells, "sizes must be multiples of 40"
    with scratch() as tmp, SimProcess(**SIM) as sim:
        pack = write_yaml(tmp / "pack.yaml", synthetic_pack(n_prompts, REPEATS, VARIANTS))
        cfg = write_yaml(tmp / "config.yaml", fleet_config(sim.url, CONCURRENCY, tmp / "out"))
        run = run_eval_cli(["--pack", str(pack), "--config", str(cfg)], ray_env(tmp), 0.2)
        bundle = run.bundle
        if run.rc != 0 or bundle is None:
            raise RuntimeError(f"eval failed (rc {run.rc}):\n{run.stderr[-3000:]}")
        ts: dict[str, float] = {}
        for ev in events(bundle):
            ts.setdefault(ev["event"], ev["ts"])
        served = sim.stats()
    cells_rss = run.rss_between(ts["model_start"], ts["model_done"])
    stop_rss = run.rss_between(ts["model_done"], ts["run_done"])
    exit_rss = run.rss_between(ts["run_done"], float("inf"))
    start_rss, end_rss = cells_rss[0], cells_rss[-1]
    cells_s = ts["model_done"] - ts.get("warmup", ts["model_start"])
    matrix_s = ts["run_done"] - ts["run_start"]
    figures = {
        "peak_rss_mb": run.peak_rss_mb,
        "final_rss_mb": run.final_rss_mb,
        "cells_peak_rss_mb": max(cells_rss),
        "cells_start_rss_mb": start_rss,
        "cells_end_rss_mb": end_rss,
        "stop_finalize_peak_rss_mb": max(stop_rss, default=None),
        "exit_peak_rss_mb": max(exit_rss, default=None),
        "growth_mb_per_1k_cells": (end_rss - start_rss) / n_cells * 1000,
        "cells_per_s": n_cells / cells_s,
        "matrix_cells_per_s": n_cells / matrix_s,
        "wall_s": run.wall_s,
        "n_samples": len(run.rss_mb),
        "requests_served": sum(served.get("requests", {}).values()),
    }
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sizes", default="20000,100000", help="cell counts, multiples of 40")
    parser.add_argument("--quick", action="store_true", help="one rep")
    args = parser.parse_args(argv)
    reps = 1 if args.quick else args.reps
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.monotonic()
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
    for rep in range(reps):
        for n in sizes:
            log(f"rep {rep + 1}/{reps}: {n} cells")
            result = one_run(n)
            log(
                f"  peak {result['peak_rss_mb']:.0f} MB, cells {result['cells_start_rss_mb']:.0f}"
                f" → {result['cells_end_rss_mb']:.0f} MB, {result['cells_per_s']:.0f} cells/s"
            )
            runs[n].append(result)
    figures = {
        str(n): {name: spread([r[name] for r in rs], 1) for name in FIGURES}
        for n, rs in runs.items()
    }
    small, large = str(min(sizes)), str(max(sizes))
    peak_large = figures[large]["peak_rss_mb"]["max"]
    peak_small = figures[small]["peak_rss_mb"]["median"]
    flat = peak_large <= peak_small * (1 + FLAT_TOLERANCE)
    summary = {
        "bench": "eval_memory",
        "machine": machine(),
        "setup": {
            "sim": SIM,
            "engine": "openai",
            "host": "local",
            "concurrency": CONCURRENCY,
            "pack": f"N prompts × {REPEATS} repeats × {VARIANTS} variants",
            "sample_interval_s": 0.2,
            "reps": reps,
        },
        "figures": figures,
        "goal": {
            "peak_rss_mb_max": GOAL_PEAK_MB,
            "flat_tolerance": FLAT_TOLERANCE,
            "peak_ok": peak_large <= GOAL_PEAK_MB,
            "flat_ok": flat,
            "met": flat and peak_large <= GOAL_PEAK_MB,
        },
        "runs": {str(n): rs for n, rs in runs.items()},
        "bench_wall_s": round(time.monotonic() - started, 1),
    }
    dump(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
