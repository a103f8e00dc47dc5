"""The gap between two runs on one host: a queue's entries against ``eval`` commands run back
to back, on one standing cluster with its host agents up.

A Ray head is started first (``ray start --head``, :class:`~touchstone_ray.fleet.local_head.
LocalCluster`), then ``touchstone-ray agents up`` puts a host agent on it (the host's client
process kept between runs, issue 30), and one untimed eval warms both: none of that is timed.
Then, against one simulator process (every run its own model name, so the simulator's
``/sim/trace`` tells whose request it received when):

* ``queue``: ``touchstone-ray queue run Q --address A`` with ``--runs`` entries that all use the
  host ``local`` (one after another; no ``reset_command``, ``settle_s`` 0, ``report: false``, so
  an entry is its eval). Gap *k* = the simulator's first request of entry *k+1* − entry *k*'s
  ``entry_ended`` time in ``queue-state.jsonl``.
* ``eval``: ``--runs`` ``touchstone-ray eval … --address A`` commands, each started as soon as
  the one before exited. Gap *k* = the first request of run *k+1* − the exit of run *k*.
* ``queue_without_agents`` (unless ``--no-baseline``): after ``agents down``, the queue again,
  each entry starting a client actor of its own (the figure before agents).

Each gap is split where the time goes: ``scheduled`` (queue only: ``entry_ended`` →
the next ``entry_started``), ``to_run_start`` (→ the bundle's ``run_start`` event: a process,
its imports, joining Ray, loading pack and config), ``to_preflight`` (→ the host's
``preflight`` event: the host's agent attached, or its client actor started, and the endpoint
checked), ``to_model_start`` (→ ``model_start``: the monitor's baseline tick),
``to_first_request`` (→ the simulator's first request of the run). The goal (issue 29): the
queue's median gap ≤ 1 s. Prints one JSON summary on stdout.

    python bench/bench_queue_gap.py [--runs 6] [--no-baseline]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    CLI,
    SimProcess,
    agents,
    fleet_config,
    log,
    machine,
    scratch,
    spread,
    standing_cluster,
    synthetic_pack,
    write_yaml,
)

GOAL_S = 1.0
"""The issue's goal for the queue's median gap (s)."""
SIM = {"ttft_ms": 5, "tps": 2000, "answer_tokens": 5}
"""A fast simulated model: a run is its start-up and a second of cells."""


def _fleet(url: str, model: str, out: Path) -> dict[str, Any]:
    config = fleet_config(url, 2, out, model_ids=(model,))
    config["scheduling"]["warmup"] = False  # the first request is the first cell's
    config["monitor"]["gpu"] = "off"
    return config


def _first_requests(sim: SimProcess) -> dict[str, float]:
    """Model → epoch s of the first chat request the simulator received for it."""
    import httpx

    traces = httpx.get(f"{sim.url}/sim/trace", params={"limit": 10000}, timeout=30).json()
    first: dict[str, float] = {}
    for t in traces["traces"]:
        first[t["model"]] = min(first.get(t["model"], t["t_received"]), t["t_received"])
    return first


MARKS = ("run_start", "preflight", "model_start")
"""Bundle events whose first time splits a gap."""


def _marks(bundle: Path) -> dict[str, float]:
    """Event name → epoch s of its first line in the bundle's ``events.jsonl`` (:data:`MARKS`)."""
    found: dict[str, float] = {}
    for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("event") in MARKS:
            found.setdefault(event["event"], float(event["ts"]))
    return found


def _split(marks: dict[str, float], since: float, request: float) -> dict[str, float]:
    """The part of a gap from ``since`` to the bundle's ``run_start``, then to its host's
    ``preflight`` (the client actor ready and the endpoint checked), to ``model_start`` (the
    monitor's baseline tick), to the first request."""
    return {
        "to_run_start_s": marks["run_start"] - since,
        "to_preflight_s": marks["preflight"] - marks["run_start"],
        "to_model_start_s": marks["model_start"] - marks["preflight"],
        "to_first_request_s": request - marks["model_start"],
    }


def _gaps(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in rows[0] if k != "run"] if rows else []
    return {"per_gap": rows, **{k: spread([r[k] for r in rows]) for k in keys}}


def bench_queue(
    work: Path, sim: SimProcess, address: str, env: dict[str, str], n: int, tag: str = "q"
) -> Any:
    """Gaps of a queue of ``n`` entries on host ``local`` (models and files named ``tag``)."""
    entries = []
    for k in range(n):
        config = write_yaml(work / f"{tag}{k}.yaml", _fleet(sim.url, f"{tag}{k}", work / "unused"))
        entries.append(
            {"name": f"e{k}", "kind": "eval", "pack": "pack.yaml", "config": config.name,
             "report": False}
        )  # fmt: skip
    night = f"night-{tag}"
    queue = write_yaml(work / f"{night}.yaml", {"out": night, "entries": entries})
    log(f"queue of {n} entries")
    done = subprocess.run(
        [str(CLI), "queue", "run", str(queue), "--address", address],
        env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"queue run exited {done.returncode}: {done.stdout}{done.stderr}")
    lines = (work / night / "queue-state.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(x) for x in lines]

    def at(event: str, entry: str) -> float:
        return float(next(e["ts"] for e in events if e["event"] == event and e["entry"] == entry))

    bundles = {e["entry"]: Path(e["bundle"]) for e in events if e["event"] == "entry_ended"}
    first = _first_requests(sim)
    rows = []
    for k in range(n - 1):
        ended, started = at("entry_ended", f"e{k}"), at("entry_started", f"e{k + 1}")
        request = first[f"{tag}{k + 1}"]
        marks = _marks(bundles[f"e{k + 1}"])
        rows.append(
            {"run": k + 1, "gap_s": request - ended, "scheduled_s": started - ended}
            | _split(marks, started, request)
        )
    return _gaps(rows)


def bench_evals(work: Path, sim: SimProcess, address: str, env: dict[str, str], n: int) -> Any:
    """Gaps of ``n`` ``touchstone-ray eval`` commands run back to back."""
    log(f"{n} eval commands back to back")
    exits, bundles = [], []
    for k in range(n):
        config = write_yaml(work / f"b{k}.yaml", _fleet(sim.url, f"b{k}", work / "evals"))
        done = subprocess.run(
            [str(CLI), "eval", "--pack", str(work / "pack.yaml"), "--config", str(config),
             "--address", address, "--out", str(work / "evals")],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        exits.append(time.time())
        if done.returncode != 0:
            raise RuntimeError(f"eval exited {done.returncode}: {done.stderr[-2000:]}")
        bundles.append(Path(done.stdout.strip().splitlines()[-1]))
    first = _first_requests(sim)
    rows = []
    for k in range(n - 1):
        request = first[f"b{k + 1}"]
        marks = _marks(bundles[k + 1])
        rows.append({"run": k + 1, "gap_s": request - exits[k]} | _split(marks, exits[k], request))
    return _gaps(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="runs per side (gaps: runs − 1)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the queue without agents")
    args = parser.parse_args()
    baseline: Any = None
    with scratch("tsq") as work, SimProcess(**SIM) as sim, standing_cluster() as head:
        write_yaml(work / "pack.yaml", synthetic_pack(n_prompts=2, repeats=1, n_variants=1))
        env = head.client_env() | {"TERM": "dumb", "PYTHONUNBUFFERED": "1"}
        warm = write_yaml(work / "warm.yaml", _fleet(sim.url, "warm", work / "warm"))
        done = subprocess.run(  # warms the head and the agent (not timed)
            [str(CLI), "eval", "--pack", str(work / "pack.yaml"), "--config",
             str(warm), "--address", head.address],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"warm-up eval exited {done.returncode}: {done.stderr[-2000:]}")
        evals = bench_evals(work, sim, head.address, env, args.runs)
        queue = bench_queue(work, sim, head.address, env, args.runs)
        if not args.no_baseline:
            agents("down", head.address, env)
            baseline = bench_queue(work, sim, head.address, env, args.runs, tag="n")
    median = queue["gap_s"]["median"]
    print(
        json.dumps(
            {
                "bench": "queue_gap",
                "goal_s": GOAL_S,
                "agents": True,
                "queue": queue,
                "eval_back_to_back": evals,
                "queue_without_agents": baseline,
                "queue_median_gap_s": median,
                "eval_median_gap_s": evals["gap_s"]["median"],
                "queue_without_agents_median_gap_s": (
                    baseline["gap_s"]["median"] if baseline else None
                ),
                "goal_met": median is not None and median <= GOAL_S,
                "median_of": len(queue["per_gap"]),
                "machine": machine(),
            },
            indent=2,
        )
    )
    log(
        f"with agents: queue gap median {median} s, eval gap median "
        f"{evals['gap_s']['median']} s"
        + (f"; queue without agents {baseline['gap_s']['median']} s" if baseline else "")
    )


if __name__ == "__main__":
    main()
