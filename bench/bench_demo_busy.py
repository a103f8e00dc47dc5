"""``touchstone-ray demo`` on a busy machine: while one busy-loop process per core keeps every
core at 100 %, run the demo ``--runs`` times (each in its own ``HOME`` / ``RAY_TMPDIR``) and
count the passes (exit 0 and the bundle path printed last).

Prints one line per run (exit code, seconds, the 1-minute load average at its end, and the
last stderr line of a failed run), then ``passes N/M``, then a JSON summary on stdout.
``--quick`` runs ``demo --quick`` (about a third of the work).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CLI, dump, log, machine, ray_env, scratch, spread

BUSY = "while True: pass"


def busy_loops(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that each keep one core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(n)]


def one_demo(quick: bool, timeout_s: float) -> dict[str, Any]:
    """Run the demo once in a fresh scratch folder; returns its exit code, time and load."""
    with scratch("tsdb") as tmp:
        args = [str(CLI), "demo", "--out", str(tmp / "demo")] + (["--quick"] if quick else [])
        started = time.monotonic()
        try:
            proc = subprocess.run(
                args, env=ray_env(tmp), capture_output=True, text=True, timeout=timeout_s
            )
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired:
            code, out, err = None, "", f"no end within {timeout_s:.0f} s"
        elapsed = time.monotonic() - started
        lines = out.strip().splitlines()
        passed = code == 0 and bool(lines) and Path(lines[-1]).is_dir()
        return {
            "exit_code": code,
            "passed": passed,
            "seconds": round(elapsed, 1),
            "loadavg_1m": round(os.getloadavg()[0], 2),
            "last_stderr": (err.strip().splitlines() or [""])[-1] if not passed else "",
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2, help="busy processes")
    parser.add_argument("--quick", action="store_true", help="demo --quick")
    parser.add_argument("--timeout", type=float, default=900.0, help="per demo run (s)")
    args = parser.parse_args(argv)
    loops = busy_loops(args.busy)
    runs: list[dict[str, Any]] = []
    try:
        time.sleep(2.0)  # let the busy loops take the cores first
        for i in range(1, args.runs + 1):
            result = one_demo(args.quick, args.timeout)
            runs.append(result)
            log(
                f"run {i}/{args.runs}: exit {result['exit_code']}, {result['seconds']} s, "
                f"load {result['loadavg_1m']}"
                + (f" — {result['last_stderr']}" if result["last_stderr"] else "")
            )
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()
    passes = sum(r["passed"] for r in runs)
    log(f"passes {passes}/{len(runs)}")
    dump(
        {
            "bench": "demo_busy",
            "quick": args.quick,
            "busy_processes": args.busy,
            "passes": passes,
            "runs": runs,
            "seconds": spread([r["seconds"] for r in runs]),
            "machine": machine(),
        }
    )
    return 0 if passes == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
