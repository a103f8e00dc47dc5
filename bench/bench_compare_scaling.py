"""Scaling over simulated hosts: cells per second with 1, 2 and 4 hosts.

A ``ray.cluster_utils.Cluster`` on this machine: a head (the driver's node, no models) and 4
worker nodes labelled ``touchstone.host=h1..h4`` (1 logical CPU each), started once and shared
by every run (idle nodes stay up). Each run is the real CLI joining the cluster
(``touchstone-ray eval --address``) with a fleet config of k hosts (k = 1, 2, 4), one model per
host, ``engine: simulated`` — the simulator runs inside that host's client actor, on its node
— with a fixed capacity per server: concurrency 4, TTFT 100 ms, 100 tok/s, 200 tokens
(2.09 s per cell, so at most 4 / 2.09 = 1.91 cells/s per host). Every host runs the whole pack
(``--cells`` cells, 1 variant, warm-up off), so a run has k × cells cells.

Figures per k (min / median / max over repetitions): cells/s over the cells
(first ``model_start`` → last ``model_done``) and over the whole matrix (``run_start`` →
``run_done``), and the scaling efficiency: cells/s at k ÷ (k × cells/s at 1 host), taken within
one repetition. Goal: ≥ 90 % of linear at 4 hosts (matrix time).

The hosts are simulated: all k servers, client actors, monitors and raylets share this
machine's cores (2 here), so the figure measures how touchstone's driver and per-host actors
scale, not how real hardware would.

With its host agents up (``touchstone-ray agents up``, then one small warm-up run, both
outside the timed part; issue [standing-fleet]), unless ``--no-agents``: then every run starts
a client actor per host of its own, as on a cluster without agents.

    python bench/bench_compare_scaling.py [--reps 3] [--hosts 1,2,4] [--cells 40]
        [--no-agents] [--write]

Prints one JSON summary on stdout; ``--write`` updates its section of ``docs/benchmarks.md``.
About 5 minutes with the defaults on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    MODEL_ID,
    agents,
    dump,
    events,
    log,
    machine,
    ray_env,
    run_eval_cli,
    scratch,
    spread,
    synthetic_pack,
    to_json,
    write_yaml,
)
from bench_compare_dispatch import (
    PAGE,
    LoadSampler,
    fmt,
    fmt_spread,
    machine_md,
    write_section,
)

from touchstone_ray.bundle import Layout, ResponseShards

SIM_KNOBS = {"ttft_ms": 100, "tps": 100, "answer_tokens": 200}
CONCURRENCY = 4
PER_CELL_S = SIM_KNOBS["ttft_ms"] / 1000 + (SIM_KNOBS["answer_tokens"] - 1) / SIM_KNOBS["tps"]
# issue [standing-fleet]: 1 -> 4 hosts >= 0.95 of linear on the whole run, the cells >= 0.98
GOAL_MATRIX = 0.95
GOAL_CELLS = 0.98
HOST_LABEL = "touchstone.host"


def start_cluster(tmp: Path, n_workers: int) -> Any:
    """Head + ``n_workers`` labelled worker nodes; ``HOME``/``RAY_TMPDIR`` in ``tmp`` (set in
    this process's environment, which the eval children inherit with the auth token)."""
    env = ray_env(tmp)
    os.environ.update(HOME=env["HOME"], RAY_TMPDIR=env["RAY_TMPDIR"])
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    for i in range(n_workers):
        cluster.add_node(num_cpus=1, labels={HOST_LABEL: f"h{i + 1}"})
    cluster.wait_for_nodes()
    return cluster


def fleet(k: int, out: Path) -> dict[str, Any]:
    hosts = [f"h{i + 1}" for i in range(k)]
    return {
        "ray": {"include_dashboard": False},
        "hosts": {h: {"label": h} for h in hosts},
        "models": [
            {
                "id": MODEL_ID,
                "engine": "simulated",
                "host": h,
                "concurrency": CONCURRENCY,
                "timeout_s": 120,
                "sim": dict(SIM_KNOBS),
            }
            for h in hosts
        ],
        "scheduling": {"warmup": False, "max_attempts": 3},
        "monitor": {"interval_s": 0.5},
        "out": str(out),
    }


def run_k(address: str, k: int, pack_path: Path, work: Path, cells: int) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    cfg = write_yaml(work / "config.yaml", fleet(k, work / "out"))
    run = run_eval_cli(
        ["--pack", str(pack_path), "--config", str(cfg), "--address", address],
        dict(os.environ),
        0.5,
        timeout_s=600,
    )
    bundle = run.bundle
    if run.rc != 0 or bundle is None:
        raise RuntimeError(f"eval failed (rc {run.rc}): {run.stderr[-1500:]}")
    evs = events(bundle)
    first = {}
    last = {}
    for ev in evs:
        first.setdefault(ev["event"], ev["ts"])
        last[ev["event"]] = ev["ts"]
    ok = 0
    hosts_seen: dict[str, int] = {}
    for rec in ResponseShards(Layout(bundle)).iter_records():
        if rec.get("ok"):
            ok += 1
            hosts_seen[rec["host"]] = hosts_seen.get(rec["host"], 0) + 1
    matrix_s = last["run_done"] - first["run_start"]
    cells_s = last["model_done"] - first["model_start"]
    return {
        "k": k,
        "cells": k * cells,
        "ok": ok,
        "cells_by_host": hosts_seen,
        "matrix_s": matrix_s,
        "cells_s": cells_s,
        "before_cells_s": first["model_start"] - first["run_start"],
        "matrix_cells_per_s": ok / matrix_s,
        "cells_per_s": ok / cells_s,
        "connect_s": first["run_start"] - run.t0_epoch,
        "wall_s": run.wall_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--hosts", default="1,2,4")
    parser.add_argument("--cells", type=int, default=40, help="cells per host")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--no-agents", action="store_true", help="each run starts client actors of its own"
    )
    parser.add_argument(
        "--from-json", type=Path, help="only re-render the page section from a saved summary"
    )
    args = parser.parse_args(argv)
    if args.from_json:
        write_section("scaling", markdown(json.loads(args.from_json.read_text())))
        return 0
    ks = [int(x) for x in args.hosts.split(",")]
    started = time.monotonic()
    runs: dict[int, list[dict[str, Any]]] = {}
    failures: list[str] = []
    with LoadSampler() as load, scratch("tscs") as tmp:
        t0 = time.monotonic()
        cluster = start_cluster(tmp, max(ks))
        cluster_start_s = time.monotonic() - t0
        log(f"cluster of 1 head + {max(ks)} hosts up in {cluster_start_s:.1f} s")
        try:
            pack_path = write_yaml(tmp / "pack.yaml", synthetic_pack(args.cells, 1, 1, "scale"))
            if not args.no_agents:  # outside the timed part, as a standing cluster has them
                agents("up", cluster.address, dict(os.environ))
                warm = write_yaml(tmp / "warm.yaml", synthetic_pack(2, 1, 1, "warm"))
                run_k(cluster.address, max(ks), warm, tmp / "warm", 2)
            for rep in range(args.reps):
                order = ks if rep % 2 == 0 else list(reversed(ks))
                for k in order:
                    log(f"rep {rep + 1}/{args.reps}: {k} host(s)")
                    try:
                        res = run_k(cluster.address, k, pack_path, tmp / f"r{rep}k{k}", args.cells)
                    except Exception as exc:
                        failures.append(f"rep {rep + 1} k={k}: {type(exc).__name__}: {exc}")
                        log(f"  failed: {failures[-1][:400]}")
                        continue
                    res["rep"] = rep
                    runs.setdefault(k, []).append(res)
                    log(
                        f"  {res['ok']}/{res['cells']} ok, {res['matrix_cells_per_s']:.2f} "
                        f"cells/s (matrix), {res['cells_per_s']:.2f} (cells)"
                    )
        finally:
            cluster.shutdown()
        load_summary = load.summary()
    summary = summarize(ks, runs, args)
    summary.update(
        agents=not args.no_agents,
        failures=failures,
        cluster_start_s=round(cluster_start_s, 1),
        load_1m=load_summary,
        machine=machine(),
        measured_at=time.strftime("%Y-%m-%d %H:%M %Z"),
        bench_wall_s=round(time.monotonic() - started, 1),
        runs={
            str(k): [
                {kk: (round(v, 3) if isinstance(v, float) else v) for kk, v in r.items()}
                for r in rs
            ]
            for k, rs in runs.items()
        },
    )
    dump(summary)
    if args.write:
        write_section("scaling", markdown(summary))
        log(f"wrote the scaling section of {PAGE}")
    return 0


def summarize(ks: list[int], runs: dict[int, list[dict[str, Any]]], args: Any) -> dict[str, Any]:
    base = {r["rep"]: r for r in runs.get(1, [])}
    fig: dict[str, Any] = {}
    for k in ks:
        rs = runs.get(k, [])
        eff_m, eff_c = [], []
        for r in rs:
            b = base.get(r["rep"])
            if b is not None:
                eff_m.append(r["matrix_cells_per_s"] / (k * b["matrix_cells_per_s"]))
                eff_c.append(r["cells_per_s"] / (k * b["cells_per_s"]))
        fig[str(k)] = {
            "ideal_cells_per_s": round(k * CONCURRENCY / PER_CELL_S, 3),
            "matrix_cells_per_s": spread([r["matrix_cells_per_s"] for r in rs]),
            "cells_per_s": spread([r["cells_per_s"] for r in rs]),
            "matrix_s": spread([r["matrix_s"] for r in rs]),
            "before_cells_s": spread([r["before_cells_s"] for r in rs]),
            "efficiency_matrix": spread(eff_m),
            "efficiency_cells": spread(eff_c),
            "ok": [r["ok"] for r in rs],
        }
    return {
        "bench": "compare_scaling",
        "setup": {
            "hosts": ks,
            "cells_per_host": args.cells,
            "concurrency_per_host": CONCURRENCY,
            "sim": SIM_KNOBS,
            "per_cell_s": PER_CELL_S,
            "reps": args.reps,
            "cluster": "ray.cluster_utils.Cluster: head (driver) + "
            f"{max(ks)} workers labelled touchstone.host=h1..h{max(ks)}, 1 logical CPU each, "
            "all on this machine; engine simulated (the server runs in each host's client "
            "actor)",
        },
        "figures": fig,
        "goal": goal(fig),
    }


def goal(fig: dict[str, Any]) -> dict[str, Any]:
    """The goal at the most hosts measured, from the ``figures`` of a summary."""
    top = max(fig, key=int)
    matrix = fig[top]["efficiency_matrix"]["median"]
    cells = fig[top]["efficiency_cells"]["median"]
    return {
        "at_hosts": int(top),
        "min_efficiency_matrix": GOAL_MATRIX,
        "min_efficiency_cells": GOAL_CELLS,
        "efficiency_matrix_median": matrix,
        "efficiency_cells_median": cells,
        "met": matrix is not None
        and cells is not None
        and matrix >= GOAL_MATRIX
        and cells >= GOAL_CELLS,
    }


def markdown(summary: dict[str, Any]) -> str:
    s = summary["setup"]
    lines = [
        "## Scaling over hosts (`bench/bench_compare_scaling.py`)",
        "",
        f"A `ray.cluster_utils.Cluster` on this machine (head + {max(s['hosts'])} labelled "
        "worker nodes, started once), `touchstone-ray eval --address` with k hosts, one "
        f"simulated server per host (concurrency {s['concurrency_per_host']}, TTFT 100 ms, "
        f"100 tok/s, 200 tokens: at most {s['concurrency_per_host'] / s['per_cell_s']:.2f} "
        f"cells/s per host), {s['cells_per_host']} cells per host, warm-up off. Median "
        f"(min–max) over {s['reps']} repetitions; efficiency = cells/s at k ÷ (k × cells/s "
        "at 1 host) within a repetition. Matrix: `run_start` → `run_done`; cells: first "
        "`model_start` → last `model_done`.",
        "",
        machine_md(summary)
        + f" The cluster took {summary['cluster_start_s']} s to start (not counted).",
        "",
        "| hosts | ideal cells/s | cells/s (matrix) | cells/s (cells) | efficiency (matrix) "
        "| efficiency (cells) | before first cell (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, f in summary["figures"].items():
        lines.append(
            f"| {k} | {f['ideal_cells_per_s']:.2f} | {fmt_spread(f['matrix_cells_per_s'])} | "
            f"{fmt_spread(f['cells_per_s'])} | {fmt_spread(f['efficiency_matrix'], 3)} | "
            f"{fmt_spread(f['efficiency_cells'], 3)} | {fmt_spread(f['before_cells_s'])} |"
        )
    g = goal(summary["figures"])
    lines += [
        "",
        f"**Goal at {g['at_hosts']} hosts, ≥ {GOAL_MATRIX} of linear on the matrix and "
        f"≥ {GOAL_CELLS} on the cells: {'met' if g['met'] else 'missed'}** (median efficiency "
        f"{fmt(g['efficiency_matrix_median'], 3)} on the matrix time, "
        f"{fmt(g['efficiency_cells_median'], 3)} on the cells alone).",
        "",
        "What this machine means for the figure: all simulated hosts, their simulators, client "
        "actors, monitors and raylets share "
        f"{summary['machine']['cores_logical']} cores. The cells are mostly waiting on the paced "
        "simulator, so they scale past the core count. "
        + (
            "The host agents were up before the timed part (`touchstone-ray agents up` and one "
            "small warm-up run), as on a standing cluster, so no run starts a worker process."
            if summary.get("agents")
            else "Without agents each host starts two worker processes at once, its client "
            "actor and its monitor, on the shared cores, so the time before the first cell "
            "grows with k. On real hosts each host starts its processes on its own cores."
        ),
    ]
    if summary.get("failures"):
        lines += ["", "Failed runs:", ""] + [f"- {f}" for f in summary["failures"]]
    lines += [
        "",
        "<details><summary>JSON summary</summary>",
        "",
        "```json",
        to_json(summary),
        "```",
        "",
        "</details>",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
