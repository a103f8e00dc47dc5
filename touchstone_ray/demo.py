"""``touchstone-ray demo``: the whole pipeline on a local simulated fleet.

A local Ray cluster of three nodes (labels ``gpu-a``, ``gpu-b``, ``gpu-c``), simulated
engines on each node serving models that differ in speed and quality, the shipped
``buero`` pack, two simulated judges, the report; then the ranking and the bundle path.
Everything it writes is labelled *simulated*. A cluster that does not start (a loaded
machine) is shut down and started once more (:func:`~touchstone_ray.fleet.session.start_local`).
"""

from __future__ import annotations

import logging
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import yaml

from touchstone_ray.errors import RunError
from touchstone_ray.fleet import ray_logging_level, start_local

DEMO_HOSTS = ("gpu-a", "gpu-b", "gpu-c")

DEMO_MODELS: list[dict[str, Any]] = [
    {"id": "sim-llama-8b", "host": "gpu-a", "sim": {"ttft_ms": 40, "tps": 600, "quality": 0.55}},
    {"id": "sim-qwen-14b", "host": "gpu-a", "sim": {"ttft_ms": 80, "tps": 300, "quality": 0.8}},
    {"id": "sim-gemma-12b", "host": "gpu-b", "sim": {"ttft_ms": 60, "tps": 400, "quality": 0.7}},
    {"id": "sim-mistral-7b", "host": "gpu-b", "sim": {"ttft_ms": 30, "tps": 800, "quality": 0.4}},
    {"id": "sim-qwen-32b", "host": "gpu-c", "sim": {"ttft_ms": 150, "tps": 150, "quality": 0.9}},
    {"id": "sim-phi-4b", "host": "gpu-c", "sim": {"ttft_ms": 20, "tps": 1000, "quality": 0.3}},
]
"""Two models per host; quality is the simulator's knob, speed its TTFT and tok/s."""

QUICK_MODELS = ("sim-qwen-14b", "sim-mistral-7b", "sim-qwen-32b")
"""``--quick``: one model per host, one variant."""


def bundled_pack(name: str = "buero.yaml") -> Path:
    """Path of a pack shipped inside the package (``touchstone_ray/packs``)."""
    return Path(str(resources.files("touchstone_ray") / "packs" / name))


def demo_configs(folder: Path, quick: bool) -> tuple[Path, Path]:
    """Write the demo's fleet and judge configs into ``folder``; return their paths."""
    answer_tokens = 40 if quick else 120
    models = [
        {
            "id": m["id"],
            "engine": "simulated",
            "host": m["host"],
            "concurrency": 4,
            "sim": {**m["sim"], "answer_tokens": answer_tokens},
        }
        for m in DEMO_MODELS
        if not quick or m["id"] in QUICK_MODELS
    ]
    fleet = {
        "hosts": {h: {"label": h} for h in DEMO_HOSTS},
        "models": models,
        "monitor": {"interval_s": 0.5},
        "out": str(folder),
    }
    judges = {
        "judges": [
            {"id": "sim-judge-a", "engine": "simulated", "model": "judge-a", "concurrency": 8},
            {"id": "sim-judge-b", "engine": "simulated", "model": "judge-b", "concurrency": 8},
        ]
    }
    folder.mkdir(parents=True, exist_ok=True)
    fleet_path, judge_path = folder / "demo-fleet.yaml", folder / "demo-judges.yaml"
    fleet_path.write_text(yaml.safe_dump(fleet, sort_keys=False))
    judge_path.write_text(yaml.safe_dump(judges, sort_keys=False))
    return fleet_path, judge_path


def run_demo(out: Path, quick: bool = False, stream: TextIO = sys.stdout) -> int:
    """Run eval → judge → report on a three-node local cluster; returns the exit code.

    Raises :class:`RunError` if a phase fails.
    """
    import ray
    from ray.cluster_utils import Cluster

    from touchstone_ray.eval.run import EvalOptions, run_eval
    from touchstone_ray.fleet import HOST_LABEL
    from touchstone_ray.judging.runner import run_judge
    from touchstone_ray.scoring.render import ranking_table
    from touchstone_ray.scoring.scorecard import load_scorecard

    started = time.monotonic()
    fleet_path, judge_path = demo_configs(out, quick)
    print("demo: starting a local Ray cluster of 3 simulated GPU hosts …", file=stream, flush=True)

    def start_cluster() -> Cluster:
        logging.getLogger("ray").setLevel(ray_logging_level())
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False}
        )
        try:
            for host in DEMO_HOSTS:
                cluster.add_node(num_cpus=1, labels={HOST_LABEL: host})
            cluster.wait_for_nodes()
            ray.init(
                address=cluster.address, log_to_driver=False, logging_level=ray_logging_level()
            )
        except BaseException:
            ray.shutdown()
            cluster.shutdown()
            raise
        return cluster

    cluster = start_local(start_cluster, ray.shutdown)  # twice on a loaded machine
    try:
        outcome = run_eval(
            EvalOptions(
                pack=bundled_pack(),
                config=fleet_path,
                out=out,
                variants=["baseline"] if quick else None,
            ),
            out=stream,
        )
        if outcome.bundle is None or outcome.exit_code != 0:
            raise RunError(f"demo: the eval failed ({outcome.n_failed} cells)")
        bundle = outcome.bundle
        if run_judge(bundle, judge_path, out=stream) != 0:
            raise RunError(f"demo: judging failed; see {bundle}")
        perf_lines = _perf_stage(out, stream)
    finally:
        ray.shutdown()
        cluster.shutdown()
    written = _write_report(bundle)
    print(ranking_table(load_scorecard(bundle)), file=stream)
    for path in written:
        print(f"report: {path}", file=stream)
    for line in perf_lines:
        print(line, file=stream)
    print(
        f"demo done in {time.monotonic() - started:.0f} s (simulated engines and judges)",
        file=stream,
    )
    print(bundle, file=stream, flush=True)
    return 0


PERF_MODELS: list[dict[str, Any]] = [
    {
        "id": "sim-llama-8b",
        "host": "gpu-a",
        "sim": {"ttft_ms": 20, "tps": 100, "slots": 4, "batch_slowdown": 0.2},
    },
    {
        "id": "sim-gemma-12b",
        "host": "gpu-b",
        "sim": {"ttft_ms": 30, "tps": 60, "slots": 2, "batch_slowdown": 0.2},
    },
]
"""The perf stage's servers: they queue beyond their slots, so capacity has a knee."""
PERF_SLO = {"ttft": 0.2, "tpot": 0.025}
"""The perf stage's targets (s): TTFT under 0.2 s and at least 40 tok/s per user."""


def _perf_stage(out: Path, stream: TextIO) -> list[str]:
    """A short ``perf --capacity`` on two simulated hosts (same Ray session); returns the
    lines to print: each capacity line and the perf bundle's report."""
    import io

    from touchstone_ray.perf.report import write_perf_report
    from touchstone_ray.perf.run import PerfOptions, run_perf

    config = {
        "hosts": {h: {"label": h} for h in DEMO_HOSTS},
        "models": [
            {**m, "engine": "simulated", "sim": {**m["sim"], "answer_tokens": 400}}
            for m in PERF_MODELS
        ],
        "monitor": {"interval_s": 0.5},
        "out": str(out),
    }
    path = out / "demo-perf.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    print(
        "demo: perf: 256-token prompts, concurrency 1 and 4, capacity under an SLO …",
        file=stream,
        flush=True,
    )
    buf = io.StringIO()
    outcome = run_perf(
        PerfOptions(
            config=path,
            contexts=[256],
            concurrency=[1, 4],
            output_tokens=16,
            runs=8,
            slo=PERF_SLO,
            capacity=True,
            out=out,
        ),
        out=buf,
    )
    if outcome.exit_code != 0:
        raise RunError(f"demo: the perf stage failed; see {outcome.bundle}")
    lines = [entry["line"] for entry in outcome.capacity.values()]
    lines += [f"perf report: {p}" for p in write_perf_report(outcome.bundle, ["md", "html"])]
    return lines


def _write_report(bundle: Path) -> list[Path]:
    try:
        from touchstone_ray.report import write_report
    except ImportError:  # the report package is optional during development
        return []
    return list(write_report(bundle, "md,html"))
