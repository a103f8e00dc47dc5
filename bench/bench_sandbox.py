"""What a sandboxed code check costs: a tiny ``python_asserts`` check through
:func:`~touchstone_ray.checks.run_checks` (the goal: p50 ≤ 150 ms), beside the bare sandbox
and a plain ``subprocess.run([python, "-c", ...])`` of the same program in the same run.

Cases, interleaved round by round so load on the shared machine hits them alike:

* ``check``: ``run_checks`` on one item whose only check is ``python_asserts`` (a fenced
  ``add`` function in the answer, two hidden asserts): code extraction, the sandbox (network
  and PID namespaces, empty environment, limits, temp directory written and removed), and
  the verdict;
* ``sandbox``: :func:`~touchstone_ray.checks.run_sandboxed` of the same program, nothing else;
* ``plain``: ``subprocess.run([sys.executable, "-c", program])``, no sandbox at all (the peer:
  what starting this interpreter costs anyway).

The namespace probe (once per process) runs before timing; its time is reported apart. Each
run is timed by the wall clock; the children's CPU time (``RUSAGE_CHILDREN``) per run is
reported beside it, since on the shared 2-core machine the wall clock also measures waiting
for a core.

    python bench/bench_sandbox.py [--n 200] [--warmup 10]

Prints one JSON summary: per case p50 / p95 / max wall ms and p50 child CPU ms, the
sandbox's prefix, and whether the goal is met. About a minute at the default ``--n``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import dump, log, machine

from touchstone_ray.checks import run_checks, run_sandboxed
from touchstone_ray.checks.sandbox import isolation, python_argv
from touchstone_ray.tool_records import ToolTurn
from touchstone_ray.toolpack import tools_pack_from_data

CODE = "def add(a, b):\n    return a + b\n"
ASSERTS = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"
PROGRAM = f"{CODE}\n{ASSERTS}"
GOAL_P50_MS = 150.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cases() -> dict[str, Callable[[], bool]]:
    """Each case as a function returning whether its run passed."""
    pack = tools_pack_from_data(
        {
            "kind": "tools",
            "id": "bench",
            "title": "Bench",
            "items": [
                {
                    "id": "add",
                    "prompt": "Schreibe add(a, b).",
                    "checks": [{"id": "asserts", "type": "python_asserts", "asserts": ASSERTS}],
                }
            ],
        },
        "bench.yaml",
    )
    item = pack.items[0]
    turns = [ToolTurn(content=f"Hier:\n\n```python\n{CODE}```\n", finish_reason="stop")]

    def check() -> bool:
        return run_checks(pack, item, turns)[0].ok is True

    def sandbox() -> bool:
        return run_sandboxed([*python_argv(), "main.py"], {"main.py": PROGRAM}).ok

    def plain() -> bool:
        return subprocess.run([sys.executable, "-c", PROGRAM]).returncode == 0

    return {"check": check, "sandbox": sandbox, "plain": plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="timed runs per case")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs per case first")
    args = parser.parse_args()

    t0 = time.perf_counter()
    prefix = isolation()
    probe_s = time.perf_counter() - t0
    log(f"namespace probe {probe_s * 1000:.1f} ms: {' '.join(prefix)}")
    runs = cases()
    for _ in range(args.warmup):
        for run in runs.values():
            assert run()
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.n):
        for name, run in runs.items():
            cpu0, start = _children_cpu(), time.perf_counter()
            ok = run()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - cpu0)
            assert ok, f"{name} failed"
    log(f"{args.n} runs per case timed")

    result: dict[str, Any] = {}
    for name in runs:
        ms = np.asarray(wall[name]) * 1000
        result[name] = {
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "max_ms": round(float(ms.max()), 1),
            "child_cpu_p50_ms": round(float(np.percentile(np.asarray(cpu[name]) * 1000, 50)), 1),
            "n": len(ms),
        }
    check_p50 = result["check"]["p50_ms"]
    dump(
        {
            "bench": "sandbox",
            "machine": machine(),
            "isolation": list(prefix),
            "probe_ms": round(probe_s * 1000, 1),
            "cases": result,
            "check_over_plain_p50_ms": round(check_p50 - result["plain"]["p50_ms"], 1),
            "goal_p50_ms": GOAL_P50_MS,
            "goal_met": check_p50 <= GOAL_P50_MS,
        }
    )


if __name__ == "__main__":
    main()
