"""``touchstone-ray perf --rate`` next to GuideLLM's ``constant`` and ``poisson`` profiles: the
same offered rates on the same simulator.

For each rate (``--rates``, requests/s) and arrival process, each tool sends ``--duration`` s
of requests (``rate × duration``) to one simulator (fast enough that it is never the
bottleneck: its TTFT and decode add a few ms per request):

* ``touchstone``: ``touchstone-ray perf --rate R --arrival A --requests N``; send lateness =
  its records' ``send_lateness_s`` (``sent_at`` − ``scheduled_at``), achieved rate = the
  summary's ``achieved_rate`` = (n − 1) / (last ``sent_at`` − first ``sent_at``), its
  schedule's rate the same over ``scheduled_at``;
* ``guidellm``: ``guidellm run --profile kind=constant|poisson,rate=R`` with
  ``max_requests`` N on a JSON-lines file of prompts; send lateness = its
  ``request_start_time`` − ``targeted_start`` per request (its ``request_dispatch_delay``),
  achieved rate = the same formula over ``request_start_time``, its schedule's over
  ``targeted_start``.

Prints one JSON summary: per rate, arrival and tool the send lateness p50/p99 (ms), the
achieved rate (requests/s) and its error vs the offered one (%), the 1-minute load average
beside each run. Goal (issue 32): touchstone's lateness p99 < 1 ms at 200 requests/s on a
quiet machine; achieved rate within 1 % of offered wherever GuideLLM's is.

``--real``: the real llama.cpp server instead (Gemma 3 270M Q4_K_M, ``--parallel 2``, as
the other real benches start it). First its closed-loop throughput at c = 1 and c = 2
(``touchstone-ray perf --concurrency 1,2``, ok requests / wall time, as ``perf --sweep``
measures its range); the higher is its capacity, and the rates are ``--fractions`` of it
(default 0.5 and 0.9: below and near capacity; ``--rates`` names them instead). Per rate
``--reps`` runs (default 3) of each tool, interleaved (touchstone, GuideLLM, touchstone, …),
constant arrivals, ``rate × --run-seconds`` requests each (at least 6; ``--requests`` fixes
it), the same prompt length (``--context`` tokens, fitted by the server's tokenizer the same
way for both, each with its own cache-busting first line), ``--output-tokens`` forced with
``ignore_eos``, the prompt cache off (``cache_prompt: false``). Per run its TTFT p50
(touchstone ``ttft_s``, GuideLLM ``time_to_first_token_ms``), the server's view of its
requests (prompt tokens, prompt_ms p50) and the load average before and after; per rate
touchstone's median TTFT p50 and whether it lies within GuideLLM's min–max over its runs
(its run-to-run spread), by how much outside when not. Goal (issue 32): within.

    python bench/bench_open_loop.py [--rates 50,200] [--arrivals constant,poisson]
        [--duration 10] [--reps 1] [--guidellm PATH]
    python bench/bench_open_loop.py --real [--fractions 0.5,0.9 | --rates R1,R2] [--reps 3]
        [--run-seconds 25 | --requests N] [--capacity-runs 4] [--context 128] [--output-tokens 16]

GuideLLM from the bench venv (bench/README.md) or wherever ``--guidellm`` points (default: the
one on ``PATH``, else ``/tmp/benchvenv/bin/guidellm``). About 3 minutes on 2 cores; ``--real``
9 minutes at load 2–7 (12 runs of 31–53 s, most of them 25 s of arrivals and the tool's
start-up). With other servers on the machine the capacity falls (to 0.19 requests/s at load
5–9 against 2.05 at load 2–7), the floor of 6 requests stretches each run to 6 / rate s and
each tool starts slower: with 8 requests a run and 30–40 s of arrivals it took 17.5 and 22.6
minutes there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "real"))

from _common import (
    SimProcess,
    dump,
    log,
    machine,
    peer_env,
    ray_env,
    scratch,
    spread,
    write_yaml,
)
from _server_timeline import parse_tasks
from bench_perf_compare import fitted_prompts
from llama_server import MODEL_ALIAS, llama_server

from touchstone_ray.descriptive import percentile
from touchstone_ray.perf.corpus import passage
from touchstone_ray.perf.summary import achieved_rate

REPO = Path(__file__).resolve().parents[1]
MODEL = "bench-model"
SIM = {"ttft_ms": 10, "tps": 1000, "answer_tokens": 16, "models": [MODEL]}
OUTPUT_TOKENS = 16
TOOL_TIMEOUT_S = 900
GOAL_LATENESS_P99_MS = 1.0
"""touchstone's send lateness p99 at 200 requests/s on a quiet machine (ms)."""
GOAL_RATE_ERROR_PCT = 1.0
"""Achieved rate within 1 % of the offered one."""
MIN_REQUESTS = 6
"""``--real``: fewest requests per run (a p50 of fewer is mostly noise)."""


def _ms(values: list[float], q: float) -> float | None:
    value = percentile(values, q)
    return None if value is None else round(value * 1000, 3)


def _error_pct(value: float | None, ref: float | None) -> float | None:
    return None if value is None or not ref else round((value - ref) / ref * 100, 3)


def _figures(
    lateness: list[float],
    sent: list[float],
    scheduled: list[float],
    rate: float,
    ttft: list[float],
) -> dict[str, Any]:
    """Lateness p50/p99 (ms); the achieved rate (requests/s) and its error (%) against the
    offered rate and against the tool's own schedule (the same formula over the due times:
    a Poisson schedule of n requests has its own sample rate, off λ by about 1/√n); the
    TTFT p50 of the requests that succeeded (ms)."""
    achieved, planned = achieved_rate(sent), achieved_rate(scheduled)
    return {
        "n": len(sent),
        "ttft_p50_ms": _ms(ttft, 50),
        "lateness_p50_ms": _ms(lateness, 50),
        "lateness_p99_ms": _ms(lateness, 99),
        "achieved_rps": None if achieved is None else round(achieved, 4),
        "schedule_rps": None if planned is None else round(planned, 4),
        "rate_error_pct": _error_pct(achieved, rate),
        "rate_error_vs_schedule_pct": _error_pct(achieved, planned),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


@dataclass(frozen=True)
class Target:
    """The server both tools load: its ``root`` URL (no ``/v1``), touchstone's engine for it,
    the model name, the prompt length (tokens, touchstone's ``--contexts``) and the output
    length (tokens)."""

    root: str
    engine: str = "openai"
    model: str = MODEL
    context: int = 128
    output_tokens: int = OUTPUT_TOKENS


def perf_bundle(target: Target, flags: list[str], work: Path) -> Path:
    """``touchstone-ray perf FLAGS`` against ``target`` (its prompt and output length, its
    own warm-up): the bundle's path."""
    config = {
        "models": [
            {
                "id": target.model,
                "engine": target.engine,
                "base_url": target.root + "/v1",
                "timeout_s": 600,
            }
        ],
        "scheduling": {"max_attempts": 1, "warmup": True},
        "ray": {"include_dashboard": False},
        "monitor": {"interval_s": 1.0},
        "out": str(work / "runs"),
    }
    cfg = write_yaml(work / "fleet.yaml", config)
    cmd = [sys.executable, "-m", "touchstone_ray.cli", "perf", "--config", str(cfg)]
    cmd += ["--contexts", str(target.context), "--output-tokens", str(target.output_tokens)]
    done = subprocess.run(
        cmd + flags,
        capture_output=True,
        text=True,
        env=ray_env(work),
        cwd=REPO,
        timeout=TOOL_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise RuntimeError(f"touchstone-ray perf exited {done.returncode}: {done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def _spans(spans: list[tuple[float, float]], outputs: list[int]) -> dict[str, Any]:
    """The same figures for both tools from each ok request's (sent, ended) epoch seconds and
    output tokens: E2E p50 (ms), the most requests out at once (at a send, itself included:
    above the server's slots, requests wait for one) and the output tokens (min, max)."""
    # a request is out from its send until it ended: those out when each one was sent
    in_flight = [sum(1 for s, e in spans if s <= sent < e) for sent, _ in spans]
    return {
        "e2e_p50_ms": _ms([end - sent for sent, end in spans], 50),
        "in_flight_max": max(in_flight, default=None),
        "output_tokens": [min(outputs), max(outputs)] if outputs else None,
    }


def run_touchstone(target: Target, rate: float, arrival: str, n: int, work: Path) -> dict[str, Any]:
    """``touchstone-ray perf --rate`` against ``target``: lateness, achieved rate, TTFT p50."""
    flags = ["--rate", f"{rate:g}", "--arrival", arrival, "--requests", str(n)]
    bundle = perf_bundle(target, flags, work)
    rows = [
        json.loads(line)
        for path in sorted((bundle / "points").glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    sent = [r["sent_at"] for r in rows if r["sent_at"] is not None]
    late = [r["send_lateness_s"] for r in rows if r["send_lateness_s"] is not None]
    due = [r["scheduled_at"] for r in rows if r["sent_at"] is not None]
    ttft = [r["ttft_s"] for r in rows if r["ok"] and r["ttft_s"] is not None]
    got = _figures(late, sent, due, rate, ttft)
    got["errors"] = sum(1 for r in rows if not r["ok"])
    ended = [r for r in rows if r["ok"] and r["sent_at"] and r["t_end"]]
    got |= _spans(
        [(r["sent_at"], r["t_end"]) for r in ended],
        [r["completion_tokens"] for r in ended if r["completion_tokens"] is not None],
    )
    point = json.loads((bundle / "summary.json").read_text())["points"][0]
    got["saturated"] = point["saturated"]
    got["summary_achieved_rps"] = round(point["achieved_rate"], 4)
    return got


def closed_loop_rps(target: Target, levels: list[int], runs: int, work: Path) -> dict[int, float]:
    """``touchstone-ray perf --concurrency LEVELS --runs RUNS`` (closed loop): per concurrency
    the throughput, ok requests / the point's wall time (requests/s), as ``perf --sweep``
    measures its range."""
    flags = ["--concurrency", ",".join(map(str, levels)), "--runs", str(runs)]
    summary = json.loads((perf_bundle(target, flags, work) / "summary.json").read_text())
    return {
        int(p["concurrency"]): round(p["n_ok"] / p["wall_s"], 4)
        for p in summary["points"]
        if not str(p["context"]).endswith("-cached") and p["wall_s"]
    }


def run_guidellm(
    exe: str,
    target: Target,
    rate: float,
    arrival: str,
    n: int,
    work: Path,
    prompts: list[str] | None = None,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``guidellm run`` with the ``constant``/``poisson`` profile at ``rate``: lateness
    (``request_dispatch_delay``), achieved rate over ``request_start_time``, TTFT p50 (its
    ``time_to_first_token_ms``). ``prompts`` (default: ``n`` corpus passages) and the request
    ``body`` (default: ``max_tokens`` only) as given."""
    data = work / "prompts.jsonl"
    prompts = prompts or [f"[g{i}] " + passage(100, i) for i in range(n)]
    data.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts), encoding="utf-8")
    result = work / "guidellm.json"
    backend = {
        "kind": "openai_http",
        "target": target.root,
        "model": target.model,
        "validate_backend": False,
        "extras": {"body": body or {"max_tokens": target.output_tokens}},
    }
    cmd = [exe, "run", "--backend", json.dumps(backend)]
    cmd += ["--profile", f"kind={arrival},rate={rate:g}"]
    cmd += ["--constraint", f"kind=max_requests,count={n}"]
    cmd += ["--data", f"kind=json_file,path={data}", "--output", f"kind=json,path={result}"]
    cmd += ["--disable-console-interactive"]
    with (work / "guidellm.log").open("w") as fh:
        done = subprocess.run(
            cmd, cwd=work, env=peer_env(work), stdout=fh, stderr=subprocess.STDOUT,
            timeout=TOOL_TIMEOUT_S,
        )  # fmt: skip
    if done.returncode != 0:
        tail = (work / "guidellm.log").read_text("utf-8", "replace")[-1500:]
        raise RuntimeError(f"guidellm exited {done.returncode}: {tail}")
    bench = json.loads(result.read_text(encoding="utf-8"))["benchmarks"][0]
    ok = bench["requests"]["successful"]
    reqs = ok + (bench["requests"].get("errored") or [])
    # requests it timed against a schedule (a targeted start); a few of its 200/s Poisson
    # requests carried 0 there, which would read as a delay of 56 years
    timed = [
        (r, float(t))
        for r in reqs
        if (t := ((r.get("info") or {}).get("timings") or {}).get("targeted_start") or 0) > 0
        and r.get("request_start_time")
    ]
    sent = [float(r["request_start_time"]) for r, _ in timed]
    late = [float(r["request_start_time"]) - t for r, t in timed]
    due = [t for _, t in timed]
    ttft = [
        float(r["time_to_first_token_ms"]) / 1000
        for r in ok
        if r.get("time_to_first_token_ms") is not None
    ]
    got = _figures(late, sent, due, rate, ttft)
    got["errors"] = len(reqs) - len(ok)
    ended = [r for r in ok if r.get("request_start_time") and r.get("request_end_time")]
    got |= _spans(
        [(float(r["request_start_time"]), float(r["request_end_time"])) for r in ended],
        [int(r["output_tokens"]) for r in ended if r.get("output_tokens") is not None],
    )
    got["n_without_target"] = len(reqs) - len(timed)
    return got


def sim_part(args: argparse.Namespace, exe: str, tools: list[str]) -> dict[str, Any]:
    """Every rate × arrival on the simulator, ``--reps`` runs per tool (tools alternating):
    send lateness and achieved rate."""
    results: dict[str, Any] = {}
    with scratch("tol") as work, SimProcess(**SIM) as sim:
        for rate in (float(r) for r in (args.rates or "50,200").split(",")):
            n = int(rate * args.duration)
            for arrival in args.arrivals.split(","):
                for rep in range(args.reps or 1):
                    for tool in tools:
                        log(f"{rate:g} requests/s, {arrival}, run {rep + 1}: {tool}")
                        folder = work / f"{tool[:2]}{int(rate)}{arrival[0]}{rep}"
                        folder.mkdir()
                        if tool == "touchstone":
                            got = run_touchstone(Target(sim.url), rate, arrival, n, folder)
                        else:
                            got = run_guidellm(exe, Target(sim.url), rate, arrival, n, folder)
                        key = f"{rate:g}/s {arrival}"
                        results.setdefault(key, {}).setdefault(tool, []).append(got)
    return {
        "sim": SIM,
        "duration_s": args.duration,
        "goals": {
            "lateness_p99_ms_at_200": GOAL_LATENESS_P99_MS,
            "rate_error_pct": GOAL_RATE_ERROR_PCT,
        },
        "results": results,
    }


def server_view(log_text: str, n: int) -> dict[str, Any]:
    """The last ``n`` requests of one run as the server logged them (touchstone's warm-up
    comes before them): their prompt tokens (min, max) and prompt_ms p50, so both tools'
    prompts can be seen to be the same length."""
    tasks = parse_tasks(log_text)[-n:]
    tokens, decoded = [t.prompt_n for t in tasks], [t.eval_n for t in tasks]
    per_token = [t.eval_ms / t.eval_n for t in tasks if t.eval_n]
    return {
        "server_requests": len(tasks),
        "server_prompt_tokens": [min(tokens), max(tokens)] if tokens else None,
        "server_prompt_ms_p50": _round(percentile([t.prompt_ms for t in tasks], 50), 1),
        "server_decode_tokens": [min(decoded), max(decoded)] if decoded else None,
        "server_decode_ms_per_token_p50": _round(percentile(per_token, 50), 1),
    }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def judge_rate(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One rate's verdict: touchstone's TTFT p50 per run and their median; GuideLLM's per
    run and their min–max (its run-to-run spread); whether touchstone's median lies within
    that spread, and how far outside (ms, and % of GuideLLM's median) when not."""
    ts = [r["ttft_p50_ms"] for r in runs.get("touchstone", []) if r["ttft_p50_ms"] is not None]
    gl = [r["ttft_p50_ms"] for r in runs.get("guidellm", []) if r["ttft_p50_ms"] is not None]
    out: dict[str, Any] = {
        "touchstone_ttft_p50_ms": ts,
        "touchstone_median_ms": _round(statistics.median(ts), 3) if ts else None,
        "guidellm_ttft_p50_ms": gl,
        "guidellm_spread_ms": spread(gl) if gl else None,
    }
    if not ts or not gl:
        return out
    median, lo, hi = statistics.median(ts), min(gl), max(gl)
    outside = median - hi if median > hi else median - lo if median < lo else 0.0
    out["within_guidellm_spread"] = outside == 0.0
    out["outside_by_ms"] = round(outside, 3)
    out["outside_by_pct_of_guidellm_median"] = round(outside / statistics.median(gl) * 100, 2)
    return out


def real_part(args: argparse.Namespace, exe: str, tools: list[str]) -> dict[str, Any]:
    """The real llama.cpp server (Gemma 3 270M, ``--parallel`` 2, prompt cache off per
    request, output forced with ``ignore_eos``): its closed-loop throughput at c = 1 and 2
    (unless ``--rates`` names the rates), then per rate ``--reps`` runs of each tool,
    interleaved (touchstone, GuideLLM, touchstone, …), ``--requests`` each, constant arrivals."""
    out: dict[str, Any] = {}
    with scratch("tolr") as work, llama_server(work / "srv", ctx_size=8192, parallel=2) as srv:
        target = Target(srv.root, "llamacpp", MODEL_ALIAS, args.context, args.output_tokens)
        if args.rates:
            rates = [float(r) for r in args.rates.split(",")]
        else:
            log("closed loop at c = 1 and 2: the server's capacity")
            load, t0 = round(os.getloadavg()[0], 2), time.monotonic()
            closed = closed_loop_rps(target, [1, 2], args.capacity_runs, work / "cap")
            capacity = max(closed.values())
            fractions = [float(f) for f in args.fractions.split(",")]
            rates = [float(f"{capacity * f:.3g}") for f in fractions]
            out["capacity"] = {
                "closed_loop_rps": closed,
                "capacity_rps": capacity,
                "fractions": fractions,
                "loadavg_1m_at_start": load,
                "loadavg_1m": round(os.getloadavg()[0], 2),
                "wall_s": round(time.monotonic() - t0, 1),
            }
        body = {"max_tokens": args.output_tokens, "ignore_eos": True, "cache_prompt": False}
        results: dict[str, Any] = {}
        for i, rate in enumerate(rates):
            n = args.requests or max(MIN_REQUESTS, round(rate * args.run_seconds))
            runs: dict[str, list[dict[str, Any]]] = {}
            for rep in range(args.reps or 3):
                for tool in tools:
                    log(f"real server, {rate:g} requests/s, run {rep + 1}: {tool}")
                    folder = work / f"{tool[:2]}{i}-{rep}"
                    folder.mkdir()
                    load, log_start = round(os.getloadavg()[0], 2), len(srv.log_text())
                    t0 = time.monotonic()
                    if tool == "touchstone":
                        got = run_touchstone(target, rate, "constant", n, folder)
                    else:
                        prompts = asyncio.run(
                            fitted_prompts(srv.base_url, args.context, n, folder.name)
                        )
                        got = run_guidellm(exe, target, rate, "constant", n, folder, prompts, body)
                    wall = round(time.monotonic() - t0, 1)
                    got = {"rep": rep + 1, "wall_s": wall, "loadavg_1m_at_start": load, **got}
                    got |= server_view(srv.log_text()[log_start:], n)
                    runs.setdefault(tool, []).append(got)
            results[f"{rate:g}/s"] = {
                "rate_rps": rate,
                "requests_per_run": n,
                **judge_rate(runs),
                "runs": runs,
            }
    out |= {
        "settings": {
            "model": MODEL_ALIAS,
            "parallel": 2,
            "context_tokens": args.context,
            "output_tokens": args.output_tokens,
            "requests_per_run": args.requests or f"rate × {args.run_seconds:g} s, ≥ {MIN_REQUESTS}",
            "reps": args.reps or 3,
            "arrival": "constant",
        },
        "goal": "touchstone's TTFT p50 (median of its runs) within GuideLLM's run-to-run spread",
        "results": results,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--real", action="store_true", help="the real llama.cpp server")
    parser.add_argument(
        "--rates", default=None, help="requests/s (simulator default 50,200; real: derived)"
    )
    parser.add_argument("--arrivals", default="constant,poisson")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--reps", type=int, default=None, help="runs per tool (1; real: 3)")
    parser.add_argument("--guidellm", default=None)
    parser.add_argument("--tools", default="touchstone,guidellm")
    real = parser.add_argument_group("--real")
    real.add_argument("--fractions", default="0.5,0.9", help="rates, × the closed-loop capacity")
    real.add_argument("--run-seconds", type=float, default=25.0, help="requests = rate × this")
    real.add_argument("--requests", type=int, default=None, help="requests per run instead")
    real.add_argument("--context", type=int, default=128, help="prompt tokens")
    real.add_argument("--output-tokens", type=int, default=OUTPUT_TOKENS)
    real.add_argument("--capacity-runs", type=int, default=4, help="requests per closed point")
    args = parser.parse_args()
    exe = args.guidellm or shutil.which("guidellm") or "/tmp/benchvenv/bin/guidellm"
    tools = args.tools.split(",")
    if "guidellm" in tools and not Path(exe).exists():
        log(f"GuideLLM not found at {exe}: touchstone only")
        tools = [t for t in tools if t != "guidellm"]
    t0 = time.monotonic()
    part = real_part(args, exe, tools) if args.real else sim_part(args, exe, tools)
    dump({"machine": machine(), "wall_s": round(time.monotonic() - t0, 1), **part})


if __name__ == "__main__":
    main()
