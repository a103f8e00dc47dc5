"""Client overhead against the real llama.cpp server: touchstone's engine vs a bare client.

One ``llama-server`` (Gemma 3 270M Q4_K_M, ``--parallel 4``) serves both tools in turn at
concurrency 1, 2 and 4. Every request is cache-busted (a unique nonce line first, and
``cache_prompt: false``), so the server processes the whole prompt each time. For every
request the server's own ``timings`` are the ground truth:

* TTFT error = the tool's TTFT − ``prompt_ms`` (the server's prompt processing; what is left is
  the client's send, the first token's sampling and delivery, and parsing);
* E2E error = the tool's E2E − (``prompt_ms`` + ``predicted_ms``).

At concurrency > 1 both also hold the server's own phase (which decode step a request met,
how long it waited while another slot's prompt ran), which differs from tool to tool with how
its sends fall. The wire takes that out (``bench/_wire.py``: ``tcpdump`` on ``lo`` while each
tool runs, kernel stamps): per request

* TTFT over the wire = the tool's TTFT − (the segment completing the first content event − the
  segment with the request's last byte): what the client adds on its send and receive paths;
* E2E over the wire = the tool's E2E − (the response's last byte − the request's last byte).

Tools: ``touchstone`` (:class:`~touchstone_ray.engines.llamacpp.LlamaCppEngine`, one asyncio
loop: clock at the body write, chunks stamped at their socket read), two variants of it that
separate the suspects of a gap to the bare client — ``ts-wake`` (chunks stamped when the
stream loop wakes up, not at the read) and ``ts-headers`` (also the clock started when aiohttp
serialises the headers, before its write task sends them: the engine before this change) —,
``bare`` (the standard library's ``http.client``, one thread per in-flight request,
the clock started right before ``request()``, lines read with ``readline()``) and ``guidellm``
(``guidellm run``, concurrent profile, from the venv of ``bench/README.md``). GuideLLM keeps no
server timings, so its requests are matched to the server's own ``print_timing`` log lines by
prompt length: each of its prompts has a unique token count (10 filler words apart), and
``cache_prompt: false`` goes in its request body, so the log's prompt count equals the
request's ``prompt_tokens``.

    python bench/bench_real_fidelity.py [--n 8] [--reps 3] [--max-tokens 16] [--levels 1,2,4]
        [--tools touchstone,ts-wake,ts-headers,bare,guidellm] [--venv /tmp/benchvenv] [--no-wire]
        [--pin]

``--pin`` keeps the two sides off each other's CPU: the server (one compute thread,
``--threads 1``) and tcpdump on the last core, this process and every tool it starts on the
others, as a client on its own machine would be. Without it, on two cores, a client's wake-up
for the first token waits whenever both cores compute the server's next step, and that, not
the client, makes every tool's p99.

Prints one JSON summary on stdout: per tool and level, the per-repetition median and p99 of
the four errors (ms; the wire ones null without tcpdump and dpkt) as ``{min, median, max, n}``
over repetitions, the same over every repetition's requests pooled (``pooled``: median, p99
and the p99's 95 % bootstrap interval, ``scipy.stats.bootstrap``, percentile method, 2,000
resamples), and the load average at the start of each. At concurrency > 1 the two
server-timing errors also hold the server's own scheduling that its per-slot ``prompt_ms``
leaves out, so the tools are compared with each other there, not with zero; the wire errors
are the client's alone at every concurrency. About 3–6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "real"))

import _wire
from _common import dump, log, machine, peer_env, pinned_apart, pooled_ms, scratch, spread
from llama_server import MODEL_ALIAS, llama_server

from touchstone_ray.descriptive import percentile
from touchstone_ray.engines import ChatRequest, EngineSettings, _http, base
from touchstone_ray.engines.llamacpp import LlamaCppEngine

SYSTEM = "Du bist ein hilfreicher Assistent. Antworte auf Deutsch."


def prompts(tool: str, level: int, n: int) -> list[list[dict[str, str]]]:
    """``n`` cache-busted message lists, unique per tool and level."""
    return [
        [
            {"role": "system", "content": f"{nonce(tool, level, i)}\n{SYSTEM}"},
            {"role": "user", "content": f"Nenne drei Dinge, die man im Büro braucht ({i})."},
        ]
        for i in range(n)
    ]


def row(ttft_s: float | None, e2e_s: float | None, timings: dict[str, Any] | None) -> dict:
    """The two errors of one request (ms), or ``None`` values when something was missing,
    and the tool's own ``ttft_ms`` and ``e2e_ms`` (for the wire comparison)."""
    own = {
        "ttft_ms": ttft_s * 1000 if ttft_s is not None else None,
        "e2e_ms": e2e_s * 1000 if e2e_s is not None else None,
    }
    if ttft_s is None or e2e_s is None or not timings:
        return {"ttft_err_ms": None, "e2e_err_ms": None} | own
    prompt_ms, predicted_ms = timings["prompt_ms"], timings["predicted_ms"]
    return {
        "ttft_err_ms": ttft_s * 1000 - prompt_ms,
        "e2e_err_ms": e2e_s * 1000 - (prompt_ms + predicted_ms),
    } | own


def nonce(tool: str, level: int, i: int) -> str:
    """The cache-busting first line of request ``i`` (see :func:`prompts`)."""
    return f"[{tool}-{level}-{i}]"


def over_wire(rows: list[dict], wire: list[_wire.WireRequest], by: str) -> None:
    """Add ``ttft_wire_err_ms`` / ``e2e_wire_err_ms`` (the tool's figure − the wire's) to each
    row, matched to its wire request by ``by``: ``nonce`` or ``prompt_n`` (GuideLLM)."""
    index = {getattr(w, by): w for w in wire if getattr(w, by) is not None}
    for r in rows:
        w = index.get(r.get(by))
        for key in ("ttft", "e2e"):
            own, seen = r.get(f"{key}_ms"), getattr(w, f"{key}_ms", None)
            ok = own is not None and seen is not None
            r[f"{key}_wire_err_ms"] = own - seen if ok else None


class HeadersClock(_http.SentAt):
    """The clock of the engine before the body-write hook: ``t`` is the headers' time."""

    @property  # type: ignore[override]
    def t(self) -> float | None:
        return self.t_headers

    @t.setter
    def t(self, value: float | None) -> None:
        pass


def run_variant(
    variant: str, base_url: str, level: int, batch: list[list[dict[str, str]]], cap: int
) -> list:
    """:func:`run_touchstone` with the stamp at the loop's wake-up (``ts-wake``) and also the
    clock at the headers (``ts-headers``)."""
    saved = base.read_stamps, base.SentAt
    base.read_stamps = lambda resp: None
    if variant == "ts-headers":
        base.SentAt = HeadersClock
    try:
        return run_touchstone(base_url, level, batch, cap)
    finally:
        base.read_stamps, base.SentAt = saved


def run_touchstone(base_url: str, level: int, batch: list[list[dict[str, str]]], cap: int) -> list:
    settings = EngineSettings(base_url=base_url, max_attempts=1, timeout_s=300, prompt_cache=False)

    async def go() -> list[dict]:
        engine = LlamaCppEngine(settings, version_label="bench")
        sem = asyncio.Semaphore(level)

        async def one(messages: list[dict[str, str]]) -> dict:
            req = ChatRequest(model=MODEL_ALIAS, messages=messages, temperature=0.0, max_tokens=cap)
            async with sem:
                r = await engine.chat(req)
            return row(r.ttft_s, r.e2e_s, r.server_timings) if r.ok else {"error": r.error}

        try:
            return list(await asyncio.gather(*(one(m) for m in batch)))
        finally:
            await engine.aclose()

    return asyncio.run(go())


def bare_request(root: str, messages: list[dict[str, str]], cap: int) -> dict:
    """One streamed request with http.client; TTFT at the first non-empty delta line."""
    url = urlparse(root)
    body = json.dumps(
        {
            "model": MODEL_ALIAS,
            "messages": messages,
            "temperature": 0.0,
            "max_tokens": cap,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": False,
        }
    ).encode()
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    conn.connect()
    headers = {"Content-Type": "application/json"}
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
    resp = conn.getresponse()
    ttft = e2e = None
    timings = None
    while True:
        line = resp.readline()
        if not line:
            break
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            e2e = time.perf_counter() - t0
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
    return row(ttft, e2e, timings)


PRINT_TIMING = re.compile(
    r"task (\d+) \|\s+(prompt eval|total) time =\s+([\d.]+) ms /\s+(\d+) tokens"
)
"""llama-server's per-request log lines (``slot print_timing``): task id, what, ms, tokens."""


def log_timings(text: str) -> dict[int, dict[str, float]]:
    """Server timings from a slice of llama-server's log, by prompt token count: ``prompt_ms``
    and ``predicted_ms`` (= total − prompt). A prompt count seen twice is dropped (ambiguous)."""
    per_task: dict[str, dict[str, float]] = {}
    for task, what, ms, tokens in PRINT_TIMING.findall(text):
        entry = per_task.setdefault(task, {})
        if what == "prompt eval":
            entry.update(prompt_ms=float(ms), prompt_n=float(tokens))
        else:
            entry["total_ms"] = float(ms)
    by_count: dict[int, dict[str, float]] = {}
    seen: set[int] = set()
    for entry in per_task.values():
        if "prompt_n" not in entry or "total_ms" not in entry:
            continue
        n = int(entry["prompt_n"])
        timing = {
            "prompt_ms": entry["prompt_ms"],
            "predicted_ms": entry["total_ms"] - entry["prompt_ms"],
        }
        if n in seen:
            by_count.pop(n, None)
        else:
            by_count[n] = timing
        seen.add(n)
    return by_count


def run_guidellm(
    server: Any, level: int, batch: list[list[dict[str, str]]], cap: int, venv: Path, work: Path
) -> list[dict[str, Any]]:
    """GuideLLM over ``batch`` at ``level`` streams; errors from the server's log timings."""
    work.mkdir(parents=True, exist_ok=True)
    data = work / "prompts.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i, messages in enumerate(batch):
            text = "\n".join(m["content"] for m in messages) + " ja" * (10 * i)
            fh.write(json.dumps({"prompt": text}) + "\n")
    out = work / "guidellm.json"
    body = {"cache_prompt": False, "max_tokens": cap, "temperature": 0.0}
    backend = {"kind": "openai_http", "target": server.root, "model": MODEL_ALIAS}
    backend |= {"validate_backend": False, "extras": {"body": body}}
    cmd = [str(venv / "bin" / "guidellm"), "run", "--backend", json.dumps(backend)]
    cmd += ["--profile", f"kind=concurrent,streams={level}"]
    cmd += ["--constraint", f"kind=max_requests,count={len(batch)}"]
    cmd += ["--data", f"kind=json_file,path={data}", "--output", f"kind=json,path={out}"]
    cmd += ["--disable-console-interactive"]
    env = peer_env(work)
    start = len(server.log_text())
    with (work / "guidellm.log").open("w") as fh:
        done = subprocess.run(cmd, cwd=work, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = (work / "guidellm.log").read_text("utf-8", "replace")[-1500:]
        raise RuntimeError(f"guidellm exited {done.returncode}: {tail}")
    timings = log_timings(server.log_text()[start:])
    bench = json.loads(out.read_text(encoding="utf-8"))["benchmarks"][0]
    rows: list[dict[str, Any]] = []
    for req in bench["requests"]["successful"]:
        timing = timings.get(int(req.get("prompt_tokens") or -1))
        ttft_ms = req.get("time_to_first_token_ms")
        if timing is None or ttft_ms is None:
            rows.append({"error": f"no server timing for {req.get('prompt_tokens')} tokens"})
            continue
        rows.append(row(ttft_ms / 1000, req["request_latency"], timing))
        rows[-1]["prompt_n"] = int(req["prompt_tokens"])
    rows += [{"error": "guidellm request errored"} for _ in bench["requests"].get("errored") or []]
    return rows


def run_bare(root: str, level: int, batch: list[list[dict[str, str]]], cap: int) -> list:
    out: list[dict] = [{} for _ in batch]
    lock = threading.Lock()
    todo = list(enumerate(batch))

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                i, messages = todo.pop(0)
            out[i] = bare_request(root, messages, cap)

    threads = [threading.Thread(target=worker) for _ in range(level)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def stats(rows: list[dict], key: str) -> dict[str, Any]:
    vals = [r[key] for r in rows if r.get(key) is not None]
    p50, p99 = percentile(vals, 50), percentile(vals, 99)
    return {
        "median_ms": round(p50, 2) if p50 is not None else None,
        "p99_ms": round(p99, 2) if p99 is not None else None,
        "n": len(vals),
    }


METRICS = {
    "ttft_minus_prompt_ms": "ttft_err_ms",
    "e2e_minus_server_total_ms": "e2e_err_ms",
    "ttft_minus_wire_ms": "ttft_wire_err_ms",
    "e2e_minus_wire_ms": "e2e_wire_err_ms",
}
"""Summary name → row key of each error."""


def run_tool(
    tool: str,
    server: Any,
    level: int,
    batch: list[list[dict[str, str]]],
    args: argparse.Namespace,
    work: Path,
) -> list[dict]:
    """One tool's requests of ``batch`` at ``level`` streams; its rows in batch order
    (GuideLLM's in its own order)."""
    if tool == "touchstone":
        return run_touchstone(server.base_url, level, batch, args.max_tokens)
    if tool in ("ts-wake", "ts-headers"):
        return run_variant(tool, server.base_url, level, batch, args.max_tokens)
    if tool == "bare":
        return run_bare(server.root, level, batch, args.max_tokens)
    return run_guidellm(server, level, batch, args.max_tokens, args.venv, work / f"c{level}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=8, help="requests per tool, level and rep")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (tool order alternates)")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--levels", default="1,2,4")
    parser.add_argument("--tools", default="touchstone,ts-wake,ts-headers,bare,guidellm")
    parser.add_argument("--venv", type=Path, default=Path("/tmp/benchvenv"))
    parser.add_argument("--no-wire", action="store_true", help="no loopback capture")
    parser.add_argument("--pin", action="store_true", help="server and tools on separate CPUs")
    args = parser.parse_args()
    tools_all = [t for t in args.tools.split(",") if t]
    if "guidellm" in tools_all and not (args.venv / "bin" / "guidellm").exists():
        log(f"guidellm: {args.venv}/bin/guidellm not found; skipped (bench/README.md)")
        tools_all.remove("guidellm")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on a kill too
    levels = [int(x) for x in args.levels.split(",")]
    why_not = _wire.available()
    wire = why_not is None and not args.no_wire
    if why_not and not args.no_wire:
        log(f"wire yardstick skipped: {why_not}")
    per_rep: dict[str, dict[str, list[dict[str, Any]]]] = {}
    all_rows: dict[tuple[str, str], list[dict]] = {}
    threads = ("--threads", "1", "--threads-batch", "1") if args.pin else ()
    with (
        scratch("tsf") as tmp,
        llama_server(tmp, ctx_size=8192, parallel=max(levels), extra_args=threads) as server,
        contextlib.ExitStack() as stack,
    ):
        pinned = stack.enter_context(pinned_apart(server.pid)) if args.pin else None
        if args.pin and pinned is None:
            log("--pin: fewer than 2 CPUs; not pinned")
        tcpdump_cpus = set(pinned["server"]) if pinned else None
        for rep in range(args.reps):
            for level in levels:
                k = rep % len(tools_all)
                for tool in tools_all[k:] + tools_all[:k]:
                    log(f"rep {rep + 1}: {tool} at concurrency {level}")
                    batch = prompts(f"{tool}{rep}", level, args.n)
                    load = os.getloadavg()[0]
                    pcap = tmp / f"{tool}-{rep}-{level}.pcap"
                    with (
                        _wire.capture(server.port, pcap, tcpdump_cpus)
                        if wire
                        else contextlib.nullcontext()
                    ):
                        rows = run_tool(tool, server, level, batch, args, tmp / f"{tool}-{rep}")
                    if tool != "guidellm":
                        for i, r in enumerate(rows):
                            r["nonce"] = nonce(f"{tool}{rep}", level, i)
                    if wire:
                        by = "prompt_n" if tool == "guidellm" else "nonce"
                        over_wire(rows, _wire.requests(pcap, server.port), by)
                    all_rows.setdefault((f"c={level}", tool), []).extend(rows)
                    per_rep.setdefault(f"c={level}", {}).setdefault(tool, []).append(
                        {metric: stats(rows, key) for metric, key in METRICS.items()}
                        | {
                            "errors": [r["error"] for r in rows if "error" in r],
                            "loadavg_1m": round(load, 2),
                        }
                    )
    results: dict[str, Any] = {}
    for level_key, tools_reps in per_rep.items():
        for tool, reps in tools_reps.items():
            results.setdefault(level_key, {})[tool] = {
                metric: {
                    q: spread([r[metric][q] for r in reps], 2) for q in ("median_ms", "p99_ms")
                }
                for metric in METRICS
            } | {
                "pooled": {
                    metric: pooled_ms([r.get(key) for r in all_rows[(level_key, tool)]])
                    for metric, key in METRICS.items()
                },
                "errors": sum(len(r["errors"]) for r in reps),
                "loadavg_1m": [r["loadavg_1m"] for r in reps],
            }
    dump(
        {
            "bench": "real_fidelity",
            "server": "llama.cpp llama-server, Gemma 3 270M Q4_K_M, --parallel "
            f"{max(levels)}, cache_prompt false + nonce",
            "n_per_level_and_rep": args.n,
            "reps": args.reps,
            "max_tokens": args.max_tokens,
            "pinned_cpus": pinned,
            "results": results,
            "tools": tools_all,
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
