"""touchstone-ray: a distributed evaluation runner for self-hosted LLMs on a Ray cluster.

The names below are what a script calls; the command line (:mod:`touchstone_ray.cli`) is a
thin layer over the same functions::

    from pathlib import Path

    import touchstone_ray as tr

    opts = tr.EvalOptions(pack=Path("packs/buero.yaml"), config=Path("fleet.yaml"))
    outcome = tr.run_eval(opts)  # outcome.bundle: the bundle folder
    tr.run_judge(outcome.bundle, "judge.yaml")
    tr.write_report(outcome.bundle)
    card = tr.load_scorecard(outcome.bundle)

Each name loads its module on first use (PEP 562): ``import touchstone_ray`` stays light, and
Ray, the engines and the report writers load only when a run or a report needs them. The
names in ``__all__`` are pinned by a test.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from touchstone_ray.version import __version__

if TYPE_CHECKING:
    from touchstone_ray.bundle import Bundle, Layout
    from touchstone_ray.config import FleetConfig, load_config
    from touchstone_ray.errors import TouchstoneError
    from touchstone_ray.eval.run import EvalOptions, EvalOutcome, run_eval
    from touchstone_ray.judging import JudgeConfig, load_judge_config, run_judge
    from touchstone_ray.pack import Pack, load_pack
    from touchstone_ray.perf.records import PerfResponse
    from touchstone_ray.perf.run import PerfOptions, PerfOutcome, run_perf
    from touchstone_ray.records import EvalResponse, GpuSample, HolisticReport, HostSample, Verdict
    from touchstone_ray.report import write_report
    from touchstone_ray.scoring import Scorecard, load_scorecard

_MODULE_OF: dict[str, str] = {
    "Pack": "touchstone_ray.pack",
    "load_pack": "touchstone_ray.pack",
    "FleetConfig": "touchstone_ray.config",
    "load_config": "touchstone_ray.config",
    "JudgeConfig": "touchstone_ray.judging",
    "load_judge_config": "touchstone_ray.judging",
    "run_judge": "touchstone_ray.judging",
    "EvalOptions": "touchstone_ray.eval.run",
    "EvalOutcome": "touchstone_ray.eval.run",
    "run_eval": "touchstone_ray.eval.run",
    "PerfOptions": "touchstone_ray.perf.run",
    "PerfOutcome": "touchstone_ray.perf.run",
    "run_perf": "touchstone_ray.perf.run",
    "write_report": "touchstone_ray.report",
    "Scorecard": "touchstone_ray.scoring",
    "load_scorecard": "touchstone_ray.scoring",
    "Bundle": "touchstone_ray.bundle",
    "Layout": "touchstone_ray.bundle",
    "EvalResponse": "touchstone_ray.records",
    "GpuSample": "touchstone_ray.records",
    "HolisticReport": "touchstone_ray.records",
    "HostSample": "touchstone_ray.records",
    "Verdict": "touchstone_ray.records",
    "PerfResponse": "touchstone_ray.perf.records",
    "TouchstoneError": "touchstone_ray.errors",
}

__all__ = [
    "Bundle",
    "EvalOptions",
    "EvalOutcome",
    "EvalResponse",
    "FleetConfig",
    "GpuSample",
    "HolisticReport",
    "HostSample",
    "JudgeConfig",
    "Layout",
    "Pack",
    "PerfOptions",
    "PerfOutcome",
    "PerfResponse",
    "Scorecard",
    "TouchstoneError",
    "Verdict",
    "__version__",
    "load_config",
    "load_judge_config",
    "load_pack",
    "load_scorecard",
    "run_eval",
    "run_judge",
    "run_perf",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """Each public name from its module, imported on first use (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
