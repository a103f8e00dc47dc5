"""The whole harness against a bare client on the real llama.cpp server: TTFT − ``prompt_ms``.

One ``llama-server`` (Gemma 3 270M Q4_K_M, ``--parallel 1``) serves, in turn, a whole
``touchstone-ray eval`` (its own Ray, the host's client actor and monitor, the driver: every
process a real run has; ``engine: llamacpp``, concurrency 1, ``prompt_cache: off``, monitor on
at its default interval) and a bare standard-library client (``http.client``, one request at
a time, the clock started right before ``request()``) sending the same requests: the same
messages, sampling and ``max_tokens``, ``cache_prompt: false``. For every request the server's
own ``timings`` are the yardstick: TTFT − ``prompt_ms`` is what happens outside the server's
prompt processing (the send, the server's HTTP and tokenizer work before its prompt clock, the
first token's sampling and delivery, the client's wake-up and parse). The harness's other
processes (monitor, driver, Ray's daemons and idle workers) run beside the served engine on
the same cores in a real run; what they add lands in that gap.

Order per repetition: a bare run, then each eval variant with a bare run after it (variants
rotate from one repetition to the next), so every eval has a bare run right before and right
after it. Each eval is compared with the mean of those two bare runs' medians (``gap``).

Variants (``--variant LABEL=TREE[;NAME=VALUE...]``, repeatable): the eval runs with
``PYTHONPATH=TREE`` (a checkout of this project: old and new code side by side in one run)
and the extra environment variables. Default: this checkout, as ``current``.

Harness CPU: per eval, the CPU time (user + system) of the eval's whole process tree (the
driver, Ray's daemons and workers, the actors: ``getrusage(RUSAGE_CHILDREN)`` around the
child, so start and shutdown are in it) and, where the bundle records it, the host's
``touchstone_footprint`` CPU (``cpu_s`` per pid, ``cpu_pct_mean``). The engine's CPU over the
same span is the server's own CPU time (psutil) for comparison.

    python bench/bench_harness_gap.py [--n 30] [--reps 3] [--max-tokens 16]
        [--variant old=/path/to/old/checkout --variant new=.]

Prints one JSON summary on stdout: per variant and for the bare client, TTFT − prompt_ms
median and p90 per run (``{min, median, max, n}`` over repetitions) and pooled over every
run's requests, the gap per eval (eval median − its bare neighbours' mean median, also at p90),
the harness CPU, and the 1-minute load average at every run's start. About 1 minute per
eval on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "real"))

from _common import dump, log, machine, ray_env, scratch, spread, write_yaml
from llama_server import MODEL_ALIAS, llama_server

from touchstone_ray.descriptive import percentile

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = "Du bist ein hilfreicher Assistent. Antworte auf Deutsch."
SAMPLING = {"temperature": 0.0, "seed": 42}


def make_pack(n: int, max_tokens: int) -> dict[str, Any]:
    """A pack of ``n`` prompts (one category, one variant with a system prompt)."""
    prompts = [
        {
            "id": f"A{i + 1}",
            "title": f"t{i + 1}",
            "prompt": f"Nenne drei Dinge, die man im Büro braucht ({i + 1}).",
            "max_tokens": max_tokens,
        }
        for i in range(n)
    ]
    return {
        "id": "harnessgap",
        "title": "Harness gap",
        "version": 1,
        "language": "de",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [{"id": "Q1", "name": "Korrektheit", "weight": 3}],
        "ko_rule": {"dimension": "Q1", "red_flag_prompts": ["A1"]},
        "prompt_variants": [{"id": "baseline", "system_prompt": SYSTEM}],
        "sampling": SAMPLING,
        "categories": [{"id": "A", "name": "Alpha", "prompts": prompts}],
    }


def requests_of(pack: dict[str, Any]) -> list[tuple[list[dict[str, str]], int]]:
    """The (messages, max_tokens) of every cell of ``pack``, as the eval sends them."""
    system = pack["prompt_variants"][0]["system_prompt"]
    return [
        (
            [{"role": "system", "content": system}, {"role": "user", "content": p["prompt"]}],
            p["max_tokens"],
        )
        for cat in pack["categories"]
        for p in cat["prompts"]
    ]


def fleet(base_url: str, out: Path) -> dict[str, Any]:
    return {
        "ray": {"include_dashboard": False},
        "models": [
            {
                "id": MODEL_ALIAS,
                "engine": "llamacpp",
                "base_url": base_url,
                "concurrency": 1,
                "timeout_s": 120,
            }
        ],
        "scheduling": {"warmup": True, "max_attempts": 1, "prompt_cache": False},
        "monitor": {"interval_s": 0.5, "gpu": "off"},
        "out": str(out),
    }


def bare_request(root: str, messages: list[dict[str, str]], cap: int) -> float | None:
    """One streamed request with http.client; TTFT − prompt_ms (ms) or ``None``."""
    url = urlparse(root)
    body = json.dumps(
        {
            "model": MODEL_ALIAS,
            "messages": messages,
            **SAMPLING,
            "max_tokens": cap,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": False,
        }
    ).encode()
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    conn.connect()
    t0 = time.perf_counter()
    conn.request(
        "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
    )
    resp = conn.getresponse()
    ttft = timings = None
    while True:
        line = resp.readline()
        if not line:
            break
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        chunk = json.loads(data)
        if ttft is None:
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content") or delta.get("reasoning_content"):
                    ttft = time.perf_counter() - t0
        if chunk.get("timings"):
            timings = chunk["timings"]
    conn.close()
    if ttft is None or not timings:
        return None
    return float(ttft * 1000 - timings["prompt_ms"])


def run_bare(root: str, reqs: list[tuple[list[dict[str, str]], int]]) -> list[float]:
    bare_request(root, [{"role": "user", "content": "Hallo"}], 4)  # untimed, as the warm-up
    return [v for m, cap in reqs if (v := bare_request(root, m, cap)) is not None]


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``),
    so Ray's daemons, left behind when the eval's driver exits, are reaped here and their CPU
    time lands in ``RUSAGE_CHILDREN``."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(keep: int, timeout_s: float = 20.0) -> None:
    """Reap every exited child but ``keep`` (the server) until none is left (at most
    ``timeout_s``): what a Ray session left behind has exited and been counted."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        others = [c for c in psutil.Process().children() if c.pid != keep]
        if not others:
            return
        time.sleep(0.2)
    log(f"  still running after the eval: {[c.pid for c in others]}")


def proc_cpu_s(pid: int) -> float:
    p = psutil.Process(pid)
    total = 0.0
    for q in [p, *p.children(recursive=True)]:
        t = q.cpu_times()
        total += t.user + t.system
    return total


def run_eval(
    tree: Path,
    extra_env: dict[str, str],
    pack: Path,
    cfg: Path,
    tmp: Path,
    server_pid: int,
    server_wrapper: int,
) -> dict[str, Any]:
    """One ``touchstone-ray eval`` child with ``PYTHONPATH=tree``; its figures."""
    env = ray_env(tmp) | {"PYTHONPATH": str(tree)} | extra_env
    cmd = [sys.executable, "-m", "touchstone_ray.cli", "eval", "--pack", str(pack)]
    cmd += ["--config", str(cfg)]
    cpu0, eng0, t0 = children_cpu_s(), proc_cpu_s(server_pid), time.monotonic()
    # cwd: ``python -m`` puts it first on sys.path, and Ray's workers take the driver's
    done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    reap_orphans(keep=server_wrapper)
    tree_cpu, eng_cpu = children_cpu_s() - cpu0, proc_cpu_s(server_pid) - eng0
    if done.returncode != 0:
        raise RuntimeError(f"eval exited {done.returncode}: {done.stderr[-2000:]}")
    bundle = Path(done.stdout.strip().splitlines()[-1])
    errs: list[float] = []
    n_failed = 0
    for shard in (bundle / "responses").glob("*.jsonl"):
        for line in shard.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            timings = rec.get("server_timings") or {}
            if not rec.get("ok") or rec.get("ttft_s") is None or "prompt_ms" not in timings:
                n_failed += 1
                continue
            errs.append(rec["ttft_s"] * 1000 - timings["prompt_ms"])
    manifest = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    footprint = {
        h: {
            k: v
            for k, v in (f.get("touchstone_footprint") or {}).items()
            if "cpu" in k or k == "span_s"
        }
        for h, f in (manifest.get("hosts") or {}).items()
    }
    return {
        "errs": errs,
        "failed": n_failed,
        "wall_s": round(wall, 2),
        "tree_cpu_s": round(tree_cpu, 2),
        "engine_cpu_s": round(eng_cpu, 2),
        "footprint_cpu": footprint,
    }


def q(vals: list[float], p: float) -> float | None:
    v = percentile(vals, p)
    return None if v is None else round(float(v), 2)


def parse_variant(text: str) -> tuple[str, Path, dict[str, str]]:
    label, _, rest = text.partition("=")
    tree, *pairs = rest.split(";")
    env = dict(pair.split("=", 1) for pair in pairs if pair)
    return label, Path(tree or ROOT).resolve(), env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=30, help="cells per eval (= bare requests)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--variant", action="append", default=[], help="LABEL=TREE[;K=V...]")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant] or [("current", ROOT, {})]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not become_subreaper():
        log("not a subreaper here: the eval tree's CPU misses Ray's orphaned daemons")
    pack_data = make_pack(args.n, args.max_tokens)
    reqs = requests_of(pack_data)
    runs: list[dict[str, Any]] = []  # in order: {"kind": "bare"|label, ...}
    with scratch("thg") as tmp, llama_server(tmp, ctx_size=4096, parallel=1) as server:
        pack = write_yaml(tmp / "pack.yaml", pack_data)
        engine_pid = psutil.Process(server.pid).children()[0].pid

        def bare() -> None:
            load = os.getloadavg()[0]
            errs = run_bare(server.root, reqs)
            runs.append({"kind": "bare", "errs": errs, "loadavg_1m": round(load, 2)})
            log(f"  bare: median {q(errs, 50)} p90 {q(errs, 90)} ms (load {load:.2f})")

        for rep in range(args.reps):
            k = rep % len(variants)
            bare()
            for label, tree, env in variants[k:] + variants[:k]:
                log(f"rep {rep + 1}: eval {label}")
                cfg = write_yaml(
                    tmp / f"fleet-{label}-{rep}.yaml", fleet(server.base_url, tmp / "runs")
                )
                load = os.getloadavg()[0]
                got = run_eval(
                    tree, env, pack, cfg, tmp / f"e-{label}-{rep}", engine_pid, server.pid
                )
                runs.append({"kind": label, "loadavg_1m": round(load, 2), **got})
                log(
                    f"  {label}: median {q(got['errs'], 50)} p90 {q(got['errs'], 90)} ms, "
                    f"tree CPU {got['tree_cpu_s']} s in {got['wall_s']} s, "
                    f"footprint {got['footprint_cpu']} (load {load:.2f})"
                )
                bare()
    summary: dict[str, Any] = {}
    for label in ["bare", *[v[0] for v in variants]]:
        mine = [r for r in runs if r["kind"] == label]
        pooled = [e for r in mine for e in r["errs"]]
        entry: dict[str, Any] = {
            "median_ms": spread([q(r["errs"], 50) for r in mine], 2),
            "p90_ms": spread([q(r["errs"], 90) for r in mine], 2),
            "pooled": {"median_ms": q(pooled, 50), "p90_ms": q(pooled, 90), "n": len(pooled)},
            "loadavg_1m": [r["loadavg_1m"] for r in mine],
        }
        if label != "bare":
            gaps50, gaps90 = [], []
            for i, r in enumerate(runs):
                if r["kind"] != label:
                    continue
                before, after = runs[i - 1], runs[i + 1]
                for gaps, p in ((gaps50, 50), (gaps90, 90)):
                    ref = [x for x in (q(before["errs"], p), q(after["errs"], p)) if x is not None]
                    mine_p = q(r["errs"], p)
                    if ref and mine_p is not None:
                        gaps.append(mine_p - sum(ref) / len(ref))
            entry["gap_median_ms"] = spread(gaps50, 2)
            entry["gap_p90_ms"] = spread(gaps90, 2)
            entry["failed"] = sum(r["failed"] for r in mine)
            entry["tree_cpu_s"] = spread([r["tree_cpu_s"] for r in mine], 2)
            entry["wall_s"] = spread([r["wall_s"] for r in mine], 2)
            entry["engine_cpu_s"] = spread([r["engine_cpu_s"] for r in mine], 2)
            entry["footprint_cpu"] = [r["footprint_cpu"] for r in mine]
            entry["tree"] = str(next(v[1] for v in variants if v[0] == label))
            entry["env"] = next(v[2] for v in variants if v[0] == label)
        summary[label] = entry
    dump(
        {
            "bench": "harness_gap",
            "server": "llama.cpp llama-server, Gemma 3 270M Q4_K_M, --parallel 1, "
            "cache_prompt false",
            "cells_per_eval": args.n,
            "reps": args.reps,
            "max_tokens": args.max_tokens,
            "results": summary,
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
