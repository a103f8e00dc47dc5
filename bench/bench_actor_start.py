"""What a host's start-up costs before its first cell, against the floor Ray itself sets.

In a fresh Python process per round (as ``touchstone-ray eval`` is), a local Ray starts
(dashboard off, :func:`~touchstone_ray.fleet.session.ensure_ray`) and then, timed from the
actor's creation:

* ``bare``: a pinned actor of an empty class answers its first call (Ray's own floor: a
  worker process starts and imports Ray);
* ``client``: the eval client actor (:func:`~touchstone_ray.fleet.client_actor.spawn_client`,
  one simulator endpoint) answers ``ready``, then ``preflight`` (one HTTP round trip);
* ``client+monitor``: the same while the host's monitor starts beside it, as ``eval`` does;
* ``steps``: a pinned actor that, inside its worker, times its own start (creation → its
  ``__init__``), the client actor's imports, and the host facts ``ready`` gathers
  (:func:`~touchstone_ray.fleet.host_facts.host_facts`).

Also, in fresh interpreters: ``import ray`` and ``import touchstone_ray.fleet.client_actor``
(what the client actor's worker imports beyond Ray). Prints one JSON summary (seconds,
median/min/max per figure) on stdout. Not a test; takes about a minute per 5 rounds.

    python bench/bench_actor_start.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = ("bare", "client", "client+monitor", "steps")


class Empty:
    """An actor with nothing to import beyond Ray."""

    def ping(self) -> int:
        return os.getpid()


class Steps:
    """Times the client actor's start-up steps inside a worker (epoch s, compared with the
    driver's clock: one machine)."""

    def __init__(self) -> None:
        self.t_init = time.time()
        import touchstone_ray.fleet.client_actor  # noqa: F401 - the import is what is timed

        self.t_imported = time.time()

    def ready(self) -> dict[str, float]:
        from touchstone_ray.fleet import host_facts

        t = time.perf_counter()
        host_facts(None)
        return {
            "t_init": self.t_init,
            "import_s": self.t_imported - self.t_init,
            "host_facts_s": time.perf_counter() - t,
        }


def one_round(variant: str) -> dict[str, float]:
    """Start Ray, time ``variant``'s actor start; returns seconds per step."""
    import ray

    from touchstone_ray.config import ModelSpec, RaySettings
    from touchstone_ray.fleet import MonitorSet, ensure_ray, spawn_client, spawn_pinned
    from touchstone_ray.sim import SimConfig, SimServer

    with SimServer(SimConfig(ttft_ms=5, tps=1000)) as sim, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ensure_ray(None, RaySettings(include_dashboard=False))
        out = {"ray_start_s": time.perf_counter() - t0}
        node = ray.get_runtime_context().get_node_id()
        t1 = time.perf_counter()
        if variant == "bare":
            ray.get(spawn_pinned(Empty, node).ping.remote(), timeout=60)
            out["ready_s"] = time.perf_counter() - t1
        elif variant == "steps":
            created = time.time()
            got = ray.get(spawn_pinned(Steps, node).ready.remote(), timeout=60)
            out["to_init_s"] = got.pop("t_init") - created
            out.update(got)
        else:
            monitors = None
            spec = ModelSpec(id="m", engine="openai", base_url=f"{sim.url}/v1")
            actor = spawn_client("h", node, {"m": spec})
            if variant == "client+monitor":
                monitors = MonitorSet(Path(tmp), autodrain_s=1.0)
                monitors.launch({"h": node})
            ready, preflight = actor.ready.remote(), actor.preflight.remote()
            ray.get(ready, timeout=60)
            out["ready_s"] = time.perf_counter() - t1
            ray.get(preflight, timeout=60)
            out["preflight_s"] = time.perf_counter() - t1
            if monitors is not None:
                monitors.stop()
        ray.shutdown()
    return out


def import_s(module: str) -> float:
    """Seconds a fresh interpreter takes to ``import module`` (minus a bare start)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_round(args.child)))
        return
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    imports: dict[str, list[float]] = {"ray": [], "touchstone_ray.fleet.client_actor": []}
    loads = []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for variant in VARIANTS:  # one fresh process each, in turn
            home = tempfile.mkdtemp(prefix="tba", dir="/tmp")
            env = {**os.environ, "HOME": home, "RAY_TMPDIR": os.path.join(home, "ray")}
            cmd = [sys.executable, __file__, "--child", variant]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            runs[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
        for module, got in imports.items():
            got.append(import_s(module))
    result: dict[str, Any] = {"rounds": args.rounds, "loadavg_1m": [round(x, 2) for x in loads]}
    for variant, rows in runs.items():
        result[variant] = {key: summary([r[key] for r in rows]) for key in rows[0]}
    result["import_s"] = {m: summary(v) for m, v in imports.items()}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
