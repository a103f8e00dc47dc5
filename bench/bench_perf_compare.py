"""``touchstone-ray perf`` against GuideLLM and llama-benchy: the same points, the same server.

Part 1, the real llama.cpp server (Gemma 3 270M Q4_K_M, ``--parallel`` = the highest
concurrency): every point (prompt length × concurrency, ``--output-tokens`` forced with
``ignore_eos``, ``cache_prompt: false``) is measured by

* ``touchstone``: ``touchstone-ray perf`` (its own warm-up, closed loop, prompts fitted by the
  server's ``/tokenize``); TTFT ``ttft_s``, TPOT ``tpot_s`` = (E2E − TTFT) / (tokens − 1),
  send lateness ``send_lateness_s`` = sent − scheduled;
* ``touchstone-lockstep``: the same with ``--lockstep`` (rounds of ``concurrency`` requests
  sent together), llama-benchy's schedule;
* ``guidellm``: ``guidellm run`` with a concurrent profile (streams = concurrency) on a
  JSON-lines file of prompts fitted the same way (one cache-busting first line each); TTFT
  ``time_to_first_token_ms``, TPOT its ``inter_token_latency_ms`` (the same formula; its own
  ``time_per_output_token_ms`` divides the whole latency and is not used), lateness its
  ``request_dispatch_delay`` (request sent − targeted start);
* ``benchy``: ``llama-benchy --no-cache --exact-tg`` with a local tokenizer converted from the
  GGUF (``transformers``, ``gguf_file=``) and the project's corpus served on loopback as its
  "book"; TTFT its ``e2e_ttft`` per run, TPOT 1 / its ``tg_req_throughput``; it reports no
  lateness.

Each peer's ratio is taken against touchstone run with the peer's schedule
(:data:`LIKE_FOR_LIKE`). Beside the clients' figures, the server's own view of every request
from its log (:mod:`_server_timeline`): prompt_ms, decode ms per token, and how often one
request's decode ran while another's prefill did (a decode stall), per tool and context, for
the requests that ran alone and those that shared the server.

Part 2, the simulator at 64 streams (fixed TTFT and decode rate): touchstone's and GuideLLM's
send lateness p99 (goal: touchstone < 1 ms).

``--pin`` puts each server on the last CPU (llama-server with ``--threads 1``) and the tools,
with the Ray cluster touchstone starts, on the others, as a load generator on its own machine
would be. Without it the server's compute (or the 12,800 chunks/s the simulator writes) takes
the same cores the tools send and read from, and each tool's load moves the server's speed.

    python bench/bench_perf_compare.py [--contexts 128,512] [--concurrency 1,2]
        [--output-tokens 16] [--runs 8] [--reps 2]
        [--tools touchstone,touchstone-lockstep,guidellm,benchy]
        [--streams 64] [--venv /tmp/benchvenv] [--skip-real] [--skip-sim] [--sim-reps 1] [--pin]

Peers come from a separate venv (bench/README.md; ``gguf`` and ``llama-benchy`` beside
GuideLLM). Prints one JSON summary: per point and tool the TTFT and TPOT medians (s), the
ratio of each peer's median to touchstone's, and lateness p99 (ms). About 10–20 minutes on
2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
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
    pinned_apart,
    pooled_ms,
    ray_env,
    scratch,
    write_yaml,
)
from _server_timeline import Task, by_context, parse_tasks, timeline_summary
from llama_server import MODEL_ALIAS, llama_server, model_path

from touchstone_ray.descriptive import percentile
from touchstone_ray.engines import EngineSettings
from touchstone_ray.engines.llamacpp import LlamaCppEngine
from touchstone_ray.fleet import nonce_line
from touchstone_ray.perf.corpus import passage
from touchstone_ray.perf.workload import fit_prompt, prompt_messages

REPO = Path(__file__).resolve().parents[1]
DEFAULT_VENV = Path("/tmp/benchvenv")
TOOLS = ("touchstone", "touchstone-lockstep", "guidellm", "benchy")
FOLDER = {"touchstone-lockstep": "tsl"}
"""Short work folders: Ray's socket paths under them must stay within 107 bytes."""
LIKE_FOR_LIKE = {"guidellm": "touchstone", "benchy": "touchstone-lockstep"}
"""Each peer's schedule in touchstone's terms: GuideLLM's concurrent profile is a closed loop
(each stream sends when its last request ended); llama-benchy sends rounds of ``concurrency``
requests together and waits for all of them (touchstone's ``--lockstep``)."""
GOAL_MEDIAN_RATIO = 0.05
"""TTFT and TPOT medians of the tools within 5 % of each other."""
GOAL_LATENESS_P99_S = 0.001
"""touchstone's send lateness p99 at 64 streams on the simulator."""
SIM = {"ttft_ms": 100, "tps": 200, "answer_tokens": 32, "models": ["bench-model"]}
TOOL_TIMEOUT_S = 1500


def parse_contexts(text: str) -> list[int]:
    """``128,1k`` → ``[128, 1024]`` (tokens)."""
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        out.append(int(float(part[:-1]) * 1024) if part.endswith("k") else int(part))
    return out


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def p99(values: list[float]) -> float | None:
    return percentile(values, 99) if values else None


def run_logged(cmd: list[str], env: dict[str, str], work: Path, name: str) -> float:
    """Run ``cmd`` with its output in ``work/<name>.log``; wall seconds; raises with the tail."""
    t0 = time.monotonic()
    with (work / f"{name}.log").open("w") as fh:
        done = subprocess.run(
            cmd, cwd=work, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_S
        )
    if done.returncode != 0:
        tail = (work / f"{name}.log").read_text("utf-8", "replace")[-1500:]
        raise RuntimeError(f"{name} exited {done.returncode}: {tail}")
    return time.monotonic() - t0


# --- touchstone ---------------------------------------------------------------------------
def run_touchstone(
    base_url: str,
    engine: str,
    model: str,
    contexts: list[int],
    levels: list[int],
    args: Any,
    work: Path,
    lockstep: bool = False,
) -> dict[tuple[int, int], dict[str, list[float]]]:
    """``touchstone-ray perf`` over every point (``lockstep``: with ``--lockstep``); per
    (context, concurrency) the cold requests' TTFT, TPOT and send lateness (s)."""
    config = {
        "models": [{"id": model, "engine": engine, "base_url": base_url, "timeout_s": 600}],
        "scheduling": {"max_attempts": 1, "warmup": True},
        "ray": {"include_dashboard": False},
        "monitor": {"interval_s": 1.0},
        "out": str(work / "runs"),
    }
    cfg = write_yaml(work / "fleet.yaml", config)
    cmd = [sys.executable, "-m", "touchstone_ray.cli", "perf", "--config", str(cfg)]
    cmd += ["--contexts", ",".join(map(str, contexts)), "--concurrency", ",".join(map(str, levels))]
    cmd += ["--output-tokens", str(args.output_tokens), "--runs", str(args.runs)]
    cmd += ["--lockstep"] if lockstep else []
    done = subprocess.run(
        cmd, capture_output=True, text=True, env=ray_env(work), cwd=REPO, timeout=TOOL_TIMEOUT_S
    )
    if done.returncode != 0:
        raise RuntimeError(f"touchstone-ray perf exited {done.returncode}: {done.stderr[-2000:]}")
    bundle = Path(done.stdout.strip().splitlines()[-1])
    out: dict[tuple[int, int], dict[str, list[float]]] = {}
    rows = [
        json.loads(line)
        for path in sorted((bundle / "points").glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    starts: dict[str, float] = {}
    for r in rows:
        prefix = r["key"].rsplit("|", 1)[0]
        starts[prefix] = min(starts.get(prefix, r["scheduled_at"]), r["scheduled_at"])
    for r in rows:
        if not r["ok"] or str(r["context"]).endswith("-cached"):
            continue
        point = out.setdefault((r["context_target_tokens"], r["concurrency"]), _empty())
        _add(point, r["ttft_s"], r["tpot_s"], r["send_lateness_s"])
        if r["scheduled_at"] > starts[r["key"].rsplit("|", 1)[0]]:  # not the point's first round
            point.setdefault("lateness_steady_s", []).append(r["send_lateness_s"])
    return out


def _empty() -> dict[str, list[float]]:
    return {"ttft_s": [], "tpot_s": [], "lateness_s": []}


def _add(point: dict[str, list[float]], ttft: Any, tpot: Any, late: Any = None) -> None:
    for key, value in (("ttft_s", ttft), ("tpot_s", tpot), ("lateness_s", late)):
        if value is not None:
            point[key].append(float(value))


# --- GuideLLM -----------------------------------------------------------------------------
async def fitted_prompts(base_url: str, target: int, n: int, tag: str) -> list[str]:
    """``n`` user messages of at most ``target`` tokens (the server's count), each with its own
    cache-busting first line (:func:`~touchstone_ray.fleet.prompts.nonce_line`, 14 characters
    like touchstone's), fitted like touchstone's perf prompts."""
    nonces = [nonce_line(tag, str(i)) for i in range(n)]
    engine = LlamaCppEngine(EngineSettings(base_url=base_url, max_attempts=1), version_label="b")
    try:
        fit = await fit_prompt(
            lambda m: engine.count_prompt_tokens(MODEL_ALIAS, m), target, nonces[0]
        )
    finally:
        await engine.aclose()
    return [prompt_messages(nonce, fit.n_words)[0]["content"] for nonce in nonces]


def guidellm_body(args: Any, real: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"max_tokens": args.output_tokens}
    if real:
        body |= {"ignore_eos": True, "cache_prompt": False}
    return body


def run_guidellm(
    target_url: str,
    model: str,
    prompts: list[str],
    streams: int,
    body: dict[str, Any],
    work: Path,
    venv: Path,
) -> dict[str, list[float]]:
    """``guidellm run``, concurrent profile, one request per prompt (the first ``streams`` are
    its warm-up and dropped); TTFT, TPOT (ITL) and dispatch delay (s) of the rest."""
    data = work / "prompts.jsonl"
    data.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts), encoding="utf-8")
    out = work / "guidellm.json"
    backend = {
        "kind": "openai_http",
        "target": target_url,
        "model": model,
        "validate_backend": False,
        "extras": {"body": body},
    }
    cmd = [str(venv / "bin" / "guidellm"), "run", "--backend", json.dumps(backend)]
    cmd += ["--profile", f"kind=concurrent,streams={streams}"]
    cmd += ["--constraint", f"kind=max_requests,count={len(prompts)}"]
    cmd += ["--data", f"kind=json_file,path={data}", "--output", f"kind=json,path={out}"]
    cmd += ["--disable-console-interactive"]
    run_logged(cmd, peer_env(work), work, "guidellm")
    bench = json.loads(out.read_text(encoding="utf-8"))["benchmarks"][0]
    done = sorted(bench["requests"]["successful"], key=lambda r: r["request_start_time"])
    point = _empty()
    for req in done[streams:]:
        ttft, itl = req.get("time_to_first_token_ms"), req.get("inter_token_latency_ms")
        _add(
            point,
            ttft / 1000 if ttft is not None else None,
            itl / 1000 if itl is not None else None,
            req.get("request_dispatch_delay"),
        )
    point["errors"] = [float(len(bench["requests"].get("errored") or []))]
    return point


# --- llama-benchy -------------------------------------------------------------------------
def hf_tokenizer(venv: Path, work: Path) -> Path:
    """The model's tokenizer in Hugging Face form, converted from the GGUF (llama-benchy
    needs one; nothing can be downloaded here)."""
    folder = work / "tokenizer"
    gguf = model_path()
    script = (
        "import sys; from transformers import AutoTokenizer\n"
        "t = AutoTokenizer.from_pretrained(sys.argv[1], gguf_file=sys.argv[2])\n"
        "t.save_pretrained(sys.argv[3])\n"
    )
    cmd = [str(venv / "bin" / "python"), "-c", script, str(gguf.parent), gguf.name, str(folder)]
    run_logged(cmd, peer_env(work), work, "tokenizer")
    return folder


class QuietHandler(SimpleHTTPRequestHandler):
    """A static file handler that keeps its access log out of the bench's stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        return None


class BookServer:
    """The project's corpus as a plain-text "book" on a loopback port (llama-benchy downloads
    its prompt text from a URL)."""

    def __init__(self, folder: Path) -> None:
        (folder / "book.txt").write_text(passage(12_000), encoding="utf-8")
        handler = partial(QuietHandler, directory=str(folder))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/book.txt"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


def run_benchy(
    root: str,
    contexts: list[int],
    levels: list[int],
    args: Any,
    work: Path,
    venv: Path,
    tok: Path,
    book: str,
) -> dict[tuple[int, int], dict[str, list[float]]]:
    """``llama-benchy`` over every point; per (context, concurrency) TTFT and TPOT (s)."""
    out = work / "benchy.json"
    cmd = [str(venv / "bin" / "llama-benchy"), "--base-url", f"{root}/v1", "--model", MODEL_ALIAS]
    cmd += ["--tokenizer", str(tok), "--pp", *map(str, contexts), "--tg", str(args.output_tokens)]
    cmd += ["--runs", str(args.runs), "--concurrency", *map(str, levels), "--no-cache"]
    cmd += ["--exact-tg", "--book-url", book, "--latency-mode", "none", "--skip-coherence"]
    cmd += ["--format", "json", "--save-result", str(out)]
    run_logged(cmd, peer_env(work), work, "benchy")
    result: dict[tuple[int, int], dict[str, list[float]]] = {}
    for b in json.loads(out.read_text(encoding="utf-8"))["benchmarks"]:
        point = result.setdefault((b["prompt_size"], b["concurrency"]), _empty())
        point["ttft_s"] += [v / 1000 for v in b["e2e_ttft"]["values"]]
        point["tpot_s"] += [1 / v for v in b["tg_req_throughput"]["values"] if v]
    log_text = (work / "benchy.log").read_text("utf-8", "replace")
    result[(0, 0)] = {"errors": [float(log_text.count("Error during run"))]}
    return result


# --- the run --------------------------------------------------------------------------------
def summarize(points: dict[str, dict[str, dict[str, list[float]]]]) -> dict[str, Any]:
    """Per point and tool: medians, lateness p99 (ms), n, and each peer's ratio to touchstone
    run with the peer's schedule (:data:`LIKE_FOR_LIKE`)."""
    out: dict[str, Any] = {}
    for point, tools in points.items():
        row: dict[str, Any] = {}
        for tool, vals in tools.items():
            late = p99(vals.get("lateness_s", []))
            row[tool] = {
                "ttft_median_s": _round(median(vals.get("ttft_s", [])), 4),
                "tpot_median_s": _round(median(vals.get("tpot_s", [])), 5),
                "lateness_p99_ms": _round(late * 1000 if late is not None else None, 3),
                "n": len(vals.get("ttft_s", [])),
            }
        for tool, fig in row.items():
            base = row.get(LIKE_FOR_LIKE.get(tool, ""))
            if base is None:
                continue
            for metric in ("ttft_median_s", "tpot_median_s"):
                if fig[metric] and base[metric]:
                    fig[f"{metric}_ratio"] = round(fig[metric] / base[metric], 3)
        out[point] = row
    return out


def _round(value: float | None, digits: int) -> float | None:
    return round(value, digits) if value is not None else None


def real_part(args: Any, tools: list[str], work: Path) -> dict[str, Any]:
    """Every point with every tool, ``--reps`` times, the tool order rotated per repetition
    (the load of a shared machine moves the server's own speed; rotation spreads it)."""
    contexts, levels = parse_contexts(args.contexts), [int(c) for c in args.concurrency.split(",")]
    points: dict[str, dict[str, dict[str, list[float]]]] = {}
    errors: dict[str, float] = {}
    loads: dict[str, list[float]] = {}
    work.mkdir(parents=True, exist_ok=True)
    tok = hf_tokenizer(args.venv, work) if "benchy" in tools else None
    tasks: dict[str, dict[tuple[int, str], list[Task]]] = {}
    threads = ("--threads", "1", "--threads-batch", "1") if args.pin else ()
    pinned = None
    with (
        llama_server(
            work / "srv", ctx_size=8192, parallel=max(levels), extra_args=threads
        ) as server,
        contextlib.ExitStack() as stack,
    ):
        if args.pin:
            pinned = stack.enter_context(pinned_apart(server.pid))
        for rep in range(args.reps):
            for tool in tools[rep % len(tools) :] + tools[: rep % len(tools)]:
                loads.setdefault(tool, []).append(round(os.getloadavg()[0], 2))
                log(f"real server, rep {rep + 1}: {tool}")
                folder = work / f"{FOLDER.get(tool, tool)}-{rep}"
                folder.mkdir(parents=True)
                log_start = len(server.log_text())
                got = measure_real(server, tool, contexts, levels, args, folder, tok)
                seen = parse_tasks(server.log_text()[log_start:])
                for key, group in by_context(seen, contexts).items():
                    tasks.setdefault(tool, {}).setdefault(key, []).extend(group)
                n_err = got.pop((0, 0), {}).get("errors", [0.0])[0]
                errors[tool] = errors.get(tool, 0.0) + n_err
                for (ctx, c), vals in got.items():
                    into = points.setdefault(f"{ctx} tok, c={c}", {}).setdefault(tool, _empty())
                    for key, values in vals.items():
                        into.setdefault(key, []).extend(values)
    timeline = {
        tool: {
            f"{ctx} tok, {mode}": timeline_summary(group, among=group)
            for (ctx, mode), group in sorted(groups.items())
        }
        for tool, groups in tasks.items()
    }
    return {
        "points": summarize(points),
        "server_timeline": timeline,
        "errors": errors,
        "loadavg_1m_at_start": loads,
        "pinned_cpus": pinned,
    }


def measure_real(
    server: Any,
    tool: str,
    contexts: list[int],
    levels: list[int],
    args: Any,
    folder: Path,
    tok: Path | None,
) -> dict[tuple[int, int], dict[str, list[float]]]:
    """One tool over every point; ``(0, 0)`` holds ``{"errors": [n]}`` (failed requests)."""
    if tool.startswith("touchstone"):
        lockstep = tool == "touchstone-lockstep"
        return run_touchstone(
            server.base_url, "llamacpp", MODEL_ALIAS, contexts, levels, args, folder, lockstep
        )
    if tool == "guidellm":
        got: dict[tuple[int, int], dict[str, list[float]]] = {}
        errors = 0.0
        for ctx in contexts:
            for c in levels:
                sub = folder / f"{ctx}-{c}"
                sub.mkdir(parents=True)
                tag = f"{folder.name}-{ctx}-{c}"
                prompts = asyncio.run(fitted_prompts(server.base_url, ctx, c + args.runs, tag))
                body = guidellm_body(args, True)
                point = run_guidellm(server.root, MODEL_ALIAS, prompts, c, body, sub, args.venv)
                errors += point.pop("errors")[0]
                got[(ctx, c)] = point
        got[(0, 0)] = {"errors": [errors]}
        return got
    assert tok is not None
    book = BookServer(folder)
    try:
        return run_benchy(server.root, contexts, levels, args, folder, args.venv, tok, book.url)
    finally:
        book.close()


def sim_part(args: Any, tools: list[str], work: Path) -> dict[str, Any]:
    """Send lateness at ``--streams`` concurrent streams on the simulator, ``--sim-reps``
    runs per tool (tools alternating): per tool ``runs`` (each run's p99 and median) and
    ``pooled`` (every run's sends, :func:`_common.pooled_ms`)."""
    out: dict[str, Any] = {}
    runs: dict[str, list[dict[str, Any]]] = {}
    sends: dict[str, list[float]] = {}
    with SimProcess(**SIM) as sim, contextlib.ExitStack() as stack:
        assert sim.proc is not None
        if args.pin:
            out["pinned_cpus"] = stack.enter_context(pinned_apart(sim.proc.pid))
        for rep in range(args.sim_reps):
            for tool in [t for t in tools if t in ("touchstone", "guidellm")]:
                log(f"simulator, {args.streams} streams, run {rep + 1}: {tool}")
                folder = work / f"sim-{tool}-{rep}"
                folder.mkdir(parents=True)
                load = round(os.getloadavg()[0], 2)
                vals = sim_lateness(tool, sim.url, args, folder)
                late, steady = p99(vals["lateness_s"]), p99(vals.get("lateness_steady_s", []))
                runs.setdefault(tool, []).append(
                    {
                        "lateness_p99_ms": _round(late * 1000 if late is not None else None, 3),
                        "lateness_after_first_round_p99_ms": _round(
                            steady * 1000 if steady is not None else None, 3
                        ),
                        "lateness_median_ms": _round(
                            (median(vals["lateness_s"]) or 0) * 1000
                            if vals["lateness_s"]
                            else None,
                            3,
                        ),
                        "n": len(vals["lateness_s"]),
                        "loadavg_1m": load,
                    }
                )
                sends.setdefault(tool, []).extend(vals["lateness_s"])
    for tool, tool_runs in runs.items():
        out[tool] = {"runs": tool_runs, "pooled": pooled_ms(sends[tool], 1000)}
    return out


def sim_lateness(tool: str, url: str, args: Any, folder: Path) -> dict[str, list[float]]:
    """One run of ``tool`` at ``--streams`` streams on the simulator at ``url``: its
    ``lateness_s`` (and touchstone's ``lateness_steady_s``, after each stream's first send)."""
    if tool == "touchstone":
        sim_args = argparse.Namespace(**{**vars(args), "runs": 2 * args.streams})
        got = run_touchstone(
            url + "/v1", "openai", "bench-model", [256], [args.streams], sim_args, folder
        )
        return next(iter(got.values()))
    prompts = [f"[s{i}] " + passage(150, i) for i in range(3 * args.streams)]
    vals = run_guidellm(
        url, "bench-model", prompts, args.streams, guidellm_body(args, False), folder, args.venv
    )
    vals.pop("errors")
    return vals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", default="128,512")
    parser.add_argument("--concurrency", default="1,2")
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--reps", type=int, default=2, help="repetitions, tool order rotated")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--skip-sim", action="store_true")
    parser.add_argument("--sim-reps", type=int, default=1, help="runs per tool on the simulator")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="each server on its own CPU (llama-server with one thread), the tools on the others",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tools = [t for t in args.tools.split(",") if t]
    for tool, exe in (("guidellm", "guidellm"), ("benchy", "llama-benchy")):
        if tool in tools and not (args.venv / "bin" / exe).exists():
            log(f"{tool}: {args.venv / 'bin' / exe} not found; skipped (bench/README.md)")
            tools.remove(tool)
    result: dict[str, Any] = {"bench": "perf_compare", "tools": tools}
    with scratch("tspc") as work:
        if not args.skip_real:
            result["real_server"] = real_part(args, tools, work / "real")
        if not args.skip_sim:
            result["simulator_lateness"] = sim_part(args, tools, work / "sim")
    result["settings"] = {
        "contexts": args.contexts,
        "concurrency": args.concurrency,
        "output_tokens": args.output_tokens,
        "runs": args.runs,
        "reps": args.reps,
        "streams": args.streams,
        "sim_reps": args.sim_reps,
        "pin": args.pin,
        "simulator": SIM,
    }
    result["goals"] = {
        "medians_within": GOAL_MEDIAN_RATIO,
        "touchstone_lateness_p99_ms_below": GOAL_LATENESS_P99_S * 1000,
    }
    result["machine"] = machine()
    dump(result)


if __name__ == "__main__":
    tempfile.tempdir = "/tmp"
    main()
