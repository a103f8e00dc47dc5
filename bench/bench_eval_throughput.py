"""Makespan of ``touchstone-ray eval`` vs a plain threads + httpx loop (issue [eval]).

The same workload through both, against one simulator in its own process (OpenAI protocol,
TTFT 100 ms, 100 tok/s, 20 tokens): 600 cells (30 prompts × 10 repeats × 2 variants), at
most 8 in flight.

* ``touchstone``: the real CLI (one model on host ``local``, concurrency 8, warm-up on, Ray
  without dashboard). Its makespan is the matrix time from ``events.jsonl``: ``run_start`` →
  ``run_done`` (client actor start, preflight, warm-up, cells, finalize; not Ray start-up).
  ``cells_s`` is the cells alone: ``warmup`` → ``model_done``.
* ``plain``: 8 threads sharing one ``httpx.Client``, each streaming the same 600 requests
  (same body as the OpenAI engine: messages, temperature, seed, ``stream_options``), parsing
  every SSE chunk, after one untimed warm-up request. Makespan: first request → last done.

Ratio = plain makespan ÷ touchstone makespan (1.0 = as fast). Goal: median ratio ≥ 0.90 on
the matrix time. The ideal makespan is 600 / 8 × (0.1 + 19 × 0.01) s = 21.75 s.

    python bench/bench_eval_throughput.py [--reps 3] [--cells 600] [--quick]

``--quick``: 1 rep. Prints one JSON summary on stdout; progress on stderr. About 3 minutes
with the defaults on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

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

from touchstone_ray.bundle import Layout, ResponseShards

SIM = {"ttft_ms": 100, "tps": 100, "answer_tokens": 20, "models": [MODEL_ID]}
CONCURRENCY = 8
REPEATS = 10
VARIANTS = 2
GOAL_RATIO = 0.90


def bodies(pack: dict[str, Any]) -> list[dict[str, Any]]:
    """The request bodies of every cell, in run order, as the OpenAI engine builds them."""
    out = []
    sampling = pack["sampling"]
    for variant in pack["prompt_variants"]:
        for category in pack["categories"]:
            for prompt in category["prompts"]:
                messages = []
                if variant.get("system_prompt") is not None:
                    messages.append({"role": "system", "content": variant["system_prompt"]})
                messages.append({"role": "user", "content": prompt["prompt"]})
                body = {
                    "model": MODEL_ID,
                    "messages": messages,
                    "temperature": sampling["temperature"],
                    "seed": sampling["seed"],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                out.extend(body for _ in range(prompt["repeats"]))
    return out


def stream_one(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, int]:
    """Stream one chat; returns (TTFT s, content chunks). Raises on a failed request."""
    t0 = time.perf_counter()
    ttft = -1.0
    chunks = 0
    with client.stream("POST", url, json=body) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            obj = json.loads(data)
            for choice in obj.get("choices") or []:
                if (choice.get("delta") or {}).get("content"):
                    chunks += 1
                    if ttft < 0:
                        ttft = time.perf_counter() - t0
    return ttft, chunks


def run_plain(base_url: str, reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """8 threads, one shared ``httpx.Client``; makespan of ``reqs``."""
    url = base_url + "/v1/chat/completions"
    limits = httpx.Limits(max_connections=CONCURRENCY * 2, max_keepalive_connections=CONCURRENCY)
    work: queue.Queue[dict[str, Any]] = queue.Queue()
    for body in reqs:
        work.put(body)
    ttfts: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    with httpx.Client(limits=limits, timeout=120) as client:
        stream_one(client, url, reqs[0])  # untimed warm-up, like touchstone's

        def worker() -> None:
            while True:
                try:
                    body = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    ttft, _ = stream_one(client, url, body)
                    with lock:
                        ttfts.append(ttft)
                except Exception as exc:
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        makespan = time.perf_counter() - t0
    ttfts.sort()
    return {
        "makespan_s": makespan,
        "ok": len(ttfts),
        "errors": len(errors),
        "ttft_p50_s": ttfts[len(ttfts) // 2] if ttfts else None,
    }


def run_touchstone(sim_url: str, pack_path: Path, tmp: Path) -> dict[str, Any]:
    """The real CLI; matrix time from ``events.jsonl``."""
    cfg = write_yaml(tmp / "config.yaml", fleet_config(sim_url, CONCURRENCY, tmp / "out"))
    run = run_eval_cli(["--pack", str(pack_path), "--config", str(cfg)], ray_env(tmp), 0.5)
    bundle = run.bundle
    if run.rc != 0 or bundle is None:
        raise RuntimeError(f"eval failed (rc {run.rc}):\n{run.stderr[-3000:]}")
    ts: dict[str, float] = {}
    for ev in events(bundle):
        ts.setdefault(ev["event"], ev["ts"])
    ttfts = []
    for rec in ResponseShards(Layout(bundle)).iter_records():
        if rec.get("ok") and rec.get("ttft_s") is not None:
            ttfts.append(rec["ttft_s"])
    ttfts.sort()
    return {
        "makespan_s": ts["run_done"] - ts["run_start"],
        "cells_s": ts["model_done"] - ts["warmup"],
        "start_to_first_cell_s": ts["warmup"] - ts["run_start"],
        "after_cells_s": ts["run_done"] - ts["model_done"],
        "launch_to_run_start_s": ts["run_start"] - run.t0_epoch,
        "wall_s": run.wall_s,
        "ok": len(ttfts),
        "ttft_p50_s": ttfts[len(ttfts) // 2] if ttfts else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cells", type=int, default=600, help="a multiple of 20")
    parser.add_argument("--quick", action="store_true", help="one rep")
    args = parser.parse_args(argv)
    reps = 1 if args.quick else args.reps
    n_prompts = args.cells // (REPEATS * VARIANTS)
    started = time.monotonic()
    ts_runs: list[dict[str, Any]] = []
    plain_runs: list[dict[str, Any]] = []
    ratios: list[float] = []
    cell_ratios: list[float] = []
    with scratch() as tmp:
        pack_data = synthetic_pack(n_prompts, REPEATS, VARIANTS)
        pack_path = write_yaml(tmp / "pack.yaml", pack_data)
        reqs = bodies(pack_data)
        for rep in range(reps):
            # one simulator per rep, serving both; alternate which side goes first
            with SimProcess(**SIM) as sim:
                order = ["touchstone", "plain"] if rep % 2 == 0 else ["plain", "touchstone"]
                for side in order:
                    log(f"rep {rep + 1}/{reps}: {side}")
                    if side == "plain":
                        plain_runs.append(run_plain(sim.url, reqs))
                        log(f"  {plain_runs[-1]['makespan_s']:.2f} s")
                    else:
                        work = tmp / f"rep{rep}"
                        work.mkdir()
                        ts_runs.append(run_touchstone(sim.url, pack_path, work))
                        log(
                            f"  matrix {ts_runs[-1]['makespan_s']:.2f} s, "
                            f"cells {ts_runs[-1]['cells_s']:.2f} s"
                        )
            ratios.append(plain_runs[-1]["makespan_s"] / ts_runs[-1]["makespan_s"])
            cell_ratios.append(plain_runs[-1]["makespan_s"] / ts_runs[-1]["cells_s"])
    ts_fig = {
        k: spread([r[k] for r in ts_runs]) for k in ts_runs[0] if isinstance(ts_runs[0][k], float)
    }
    plain_fig = {
        k: spread([r[k] for r in plain_runs])
        for k in plain_runs[0]
        if isinstance(plain_runs[0][k], float)
    }
    ratio = spread(ratios)
    summary = {
        "bench": "eval_throughput",
        "machine": machine(),
        "setup": {
            "cells": n_prompts * REPEATS * VARIANTS,
            "sim": SIM,
            "engine": "openai",
            "concurrency": CONCURRENCY,
            "ideal_makespan_s": round(
                args.cells
                / CONCURRENCY
                * (SIM["ttft_ms"] / 1000 + (SIM["answer_tokens"] - 1) / SIM["tps"]),
                2,
            ),
            "plain": f"{CONCURRENCY} threads, one shared httpx.Client, SSE parsed per chunk",
            "reps": reps,
        },
        "figures": {
            "touchstone": ts_fig,
            "plain": plain_fig,
            "ratio_plain_over_touchstone_matrix": ratio,
            "ratio_plain_over_touchstone_cells_only": spread(cell_ratios),
        },
        "counts": {
            "touchstone_ok": [r["ok"] for r in ts_runs],
            "plain_ok": [r["ok"] for r in plain_runs],
            "plain_errors": [r["errors"] for r in plain_runs],
        },
        "goal": {
            "min_ratio": GOAL_RATIO,
            "met": ratio["median"] >= GOAL_RATIO,
            "met_every_rep": ratio["min"] >= GOAL_RATIO,
        },
        "bench_wall_s": round(time.monotonic() - started, 1),
    }
    dump(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
