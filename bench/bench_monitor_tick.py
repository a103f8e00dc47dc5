"""The host monitor's CPU per tick, old code against new in the same run.

Each variant (``--variant LABEL=TREE``, a checkout of this project; default this one as
``current``) runs in a fresh interpreter with ``PYTHONPATH=TREE``: a
:class:`~touchstone_ray.telemetry.sampler.HostSampler` as the monitor builds it (GPU off, the
harness pids of :class:`~touchstone_ray.telemetry.engines.HarnessPids`, one endpoint: a
loopback listener with a child process, as a server with a worker), sampled ``--ticks`` times
``--interval`` s apart, each sample turned into its JSON dict as the monitor's tick does. The
CPU time of each tick (``time.thread_time``: the sampling thread alone) is recorded; variants
alternate over ``--reps`` repetitions. The machine's process table is whatever runs on it (more
processes make the scans dearer), so the variants share it.

    python bench/bench_monitor_tick.py [--ticks 60] [--interval 0.1] [--reps 3]
        [--variant old=/path/to/old/checkout --variant new=.]

Prints one JSON summary: per variant, the CPU ms per tick (median, p90, mean and max pooled
over repetitions; the mean includes the rare ticks that rescan), the ticks per repetition
and the number of processes on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import dump, log, machine

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from touchstone_ray.telemetry.engines import EngineTarget, HarnessPids
from touchstone_ray.telemetry.sampler import HostSampler
url, ticks, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = HostSampler("h", None, interval, "off", engines=[EngineTarget(url)], own_pids=HarnessPids())
s.probe()
out = []
for _ in range(ticks):
    c0 = time.thread_time()
    s.sample().model_dump(mode="json")
    out.append((time.thread_time() - c0) * 1000)
    time.sleep(interval)
print(json.dumps(out))
"""

SERVER = r"""
import socket, subprocess, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
print(s.getsockname()[1], flush=True)
time.sleep(3600)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--variant", action="append", default=[], help="LABEL=TREE")
    args = parser.parse_args()
    variants = [(v.split("=", 1)[0], Path(v.split("=", 1)[1]).resolve()) for v in args.variant]
    variants = variants or [("current", ROOT)]
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
    per: dict[str, list[float]] = {label: [] for label, _ in variants}
    try:
        for rep in range(args.reps):
            k = rep % len(variants)
            for label, tree in variants[k:] + variants[:k]:
                env = dict(os.environ, PYTHONPATH=str(tree))
                cmd = [sys.executable, "-c", CHILD, url, str(args.ticks), str(args.interval)]
                done = subprocess.run(
                    cmd, env=env, cwd=tree, capture_output=True, text=True, check=True
                )
                ms = json.loads(done.stdout)
                per[label] += ms
                log(f"rep {rep + 1} {label}: median {statistics.median(ms):.2f} ms per tick")
    finally:
        for p in psutil.Process(server.pid).children(recursive=True):
            p.kill()
        server.kill()
        server.wait()
    results: dict[str, Any] = {}
    for label, ms in per.items():
        ms_sorted = sorted(ms)
        results[label] = {
            "cpu_ms_per_tick": {
                "median": round(statistics.median(ms), 3),
                "p90": round(ms_sorted[int(0.9 * (len(ms) - 1))], 3),
                "mean": round(statistics.fmean(ms), 3),
                "max": round(max(ms), 3),
            },
            "ticks": len(ms),
        }
    dump(
        {
            "bench": "monitor_tick",
            "interval_s": args.interval,
            "ticks_per_rep": args.ticks,
            "reps": args.reps,
            "processes_on_machine": len(psutil.pids()),
            "results": results,
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
