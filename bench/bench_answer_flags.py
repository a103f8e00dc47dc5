"""What the per-answer flags cost: :func:`~touchstone_ray.answers.answer_flags` on one 16 KB
answer, clean and looping (the goal: at most 1 ms p99 per answer).

The host client runs the detectors on its event loop for every answer, so their cost is
latency for every other stream of that loop. Cases, each a 16 KB (UTF-8) German answer to
``packs/buero.yaml`` A1 with its baseline system prompt, language ``de``:

* ``clean``: the clean answers of ``tests/answers/clean_de.yaml`` one after another;
* ``loop``: one short answer, then one sentence repeated to the end (``repetition_loop``);
* ``leak_echo``: the system prompt, ``<|im_end|>\\n<|im_start|>user``, the prompt, then the
  clean text (``template_leak`` and ``prompt_echo``).

The language model loads once before timing (its load time is reported apart); then every
case runs ``--warmup`` times untimed and ``--n`` times timed, interleaved round by round. Each
run is timed twice: wall clock (``time.perf_counter``) and the thread's CPU time
(``time.thread_time``). On the shared 2-core machine the wall p99 mostly measures the time this
process waited for a core (other jobs' time slices, milliseconds each); the CPU time is what the
detectors themselves cost, and the goal is judged on it (``goal_met``) as well as on the wall
clock (``goal_met_wall``).

    python bench/bench_answer_flags.py [--n 3000] [--warmup 200]

Prints one JSON summary: per case the flags, the answer's bytes and p50 / p99 (with the p99's
95 % bootstrap interval) per answer in ms, wall and CPU. About half a minute.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import dump, log, machine, pooled_ms

from touchstone_ray.answers import answer_flags, preload

ROOT = Path(__file__).resolve().parents[1]
SIZE = 16 * 1024
"""Bytes of each answer (UTF-8)."""


def _fit(text: str, size: int = SIZE) -> str:
    """``text`` cut to ``size`` UTF-8 bytes (at a character boundary)."""
    return text.encode("utf-8")[:size].decode("utf-8", errors="ignore")


def cases() -> tuple[dict[str, str], str, str]:
    """The answers by case, the prompt and the system prompt."""
    pack = yaml.safe_load((ROOT / "packs" / "buero.yaml").read_text(encoding="utf-8"))
    prompt = pack["categories"][0]["prompts"][0]["prompt"]
    system = pack["prompt_variants"][0]["system_prompt"]
    answers = yaml.safe_load((ROOT / "tests/answers/clean_de.yaml").read_text(encoding="utf-8"))
    clean = "\n\n".join(a["answer"] for a in answers)
    while len(clean.encode("utf-8")) < SIZE:
        clean += "\n\n" + clean
    first = answers[0]["answer"]
    loop = first + " " + "Bitte bringt die Quartalszahlen mit. " * (SIZE // 30)
    leak_echo = f"{system}<|im_end|>\n<|im_start|>user\n{prompt}\n{clean}"
    out = {"clean": _fit(clean), "loop": _fit(loop), "leak_echo": _fit(leak_echo)}
    return out, prompt, system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="timed runs per case")
    parser.add_argument("--warmup", type=int, default=200, help="untimed runs per case first")
    args = parser.parse_args()

    t0 = time.perf_counter()
    preload().result()
    load_s = time.perf_counter() - t0
    log(f"language model loaded in {load_s:.2f} s")
    answers, prompt, system = cases()

    def once(text: str) -> tuple[float, float, list[str]]:
        start, cpu = time.perf_counter(), time.thread_time()
        flags = answer_flags(text, "", "stop", prompt, system, "de")
        return time.perf_counter() - start, time.thread_time() - cpu, flags

    for _ in range(args.warmup):
        for text in answers.values():
            once(text)
    wall: dict[str, list[float]] = {name: [] for name in answers}
    cpu: dict[str, list[float]] = {name: [] for name in answers}
    flags: dict[str, list[str]] = {}
    gc.collect()
    for _ in range(args.n):
        for name, text in answers.items():
            took, took_cpu, flags[name] = once(text)
            wall[name].append(took)
            cpu[name].append(took_cpu)
    log(f"{args.n} runs per case timed")

    result: dict[str, Any] = {}
    for name, text in answers.items():
        result[name] = {"flags": flags[name], "bytes": len(text.encode("utf-8"))}
        for clock, values in (("cpu", cpu[name]), ("wall", wall[name])):
            stats = pooled_ms(values, scale=1000)
            result[name][clock] = {
                "p50_ms": stats["median_ms"],
                "p99_ms": stats["p99_ms"],
                "p99_ci95_ms": stats["p99_ci95_ms"],
                "n": stats["n"],
            }
    worst = max(r["cpu"]["p99_ms"] for r in result.values())
    worst_wall = max(r["wall"]["p99_ms"] for r in result.values())
    dump(
        {
            "bench": "answer_flags",
            "machine": machine(),
            "language_model_load_s": round(load_s, 3),
            "cases": result,
            "goal_p99_ms": 1.0,
            "worst_cpu_p99_ms": worst,
            "worst_wall_p99_ms": worst_wall,
            "goal_met": worst <= 1.0,
            "goal_met_wall": worst_wall <= 1.0,
        }
    )


if __name__ == "__main__":
    main()
