"""Crash anywhere: the ``eval`` and ``judge`` drivers are SIGKILLed at five seeded random
points each (after N records, N drawn from a seeded RNG over the run's length) and resumed;
the final bundle equals an uninterrupted run's, and only unfinished work was requested again
(from the simulators' own request counters).

One Ray cluster for the module; the drivers are real ``python -m touchstone_ray.cli``
subprocesses joining it with ``--address``. Models and judge are OpenAI endpoints of simulators
in this process, so their counters see every request.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import (
    all_keys,
    cli,
    run,
    shard_lines,
    sim_keys,
    tiny_pack,
    warmup_key,
    write_yaml,
)
from ray_env import RayCluster
from rel_helpers import (
    fault_when,
    kill_when,
    line_count,
    read_log,
    start_cli,
    wait_sim_idle,
)

from touchstone_ray.eval.driver import QUEUE_AHEAD
from touchstone_ray.judging.runner import run_judge
from touchstone_ray.sim import SimConfig, SimServer
from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.slow

SEED = 1729
"""Seed of the kill points."""
KILLS = 5
MODELS = ("ca", "cb")
CONCURRENCY = 2
ANSWER_SIM = SimConfig(ttft_ms=100, tps=50, answer_tokens=10, models=list(MODELS))  # 0.3 s/cell
JUDGE_SIM = SimConfig(ttft_ms=60, tps=400, models=["judge-m"])  # ~0.15 s per verdict
JUDGE_ID = "jm"
RUN_TIMEOUT_S = 120.0
CORE_RESOURCES = ("n_samples", "sys_used_mb", "sys_used_baseline_mb", "sys_used_delta_mb")
"""Resource fields finalize fills for every cell of a host with samples (the others depend on
what the host can measure, or on the window: a cell right before a kill may only have the
nearest sample)."""


def kill_points(total: int, window: int, rng: random.Random) -> list[int]:
    """``KILLS`` distinct record counts in ``1 .. total - 2·window``, ascending (records land up
    to ``window`` at a time, so later points leave room for work after the kill)."""
    return sorted(rng.sample(range(1, total - 2 * window), KILLS))


@dataclass
class Stage:
    """One killed run: its kill point, the records at the kill, what was stored then, the
    simulator's counters once idle afterwards, and what the run printed."""

    point: int
    records: int
    done: set[str]
    """Eval: keys with an ok record at the kill (judge: empty)."""
    stats: dict[str, Any]
    stdout: str


@dataclass
class Crash:
    """How to run, count and kill one driver."""

    argv: Callable[[int], list[str]]
    """Command line of run ``i``."""
    count: Callable[[], int]
    """Records in the bundle now."""
    done: Callable[[], set[str]]
    total: int
    window: int
    """Most records that can land at once."""


def crash_cycles(crash: Crash, points: list[int], logs: Path, sim_url: str) -> list[Stage]:
    """Start ``crash.argv(i)`` and SIGKILL it once the bundle holds ``points[i]`` records (at
    least one more than at its start; right after the next record when a late point would
    let the run finish first), for every point."""
    stages = []
    for i, point in enumerate(points):
        start = crash.count()
        assert start < crash.total - 1, f"run {i - 1} finished before its kill ({start} records)"
        target = max(point, start + 1)
        if target > crash.total - crash.window:
            target = start + 1
        log = logs / f"run{i}"
        proc = start_cli(crash.argv(i), log)
        seen = kill_when(proc, crash.count, target, log, RUN_TIMEOUT_S)
        stats = wait_sim_idle(sim_url)
        stages.append(Stage(point, seen, crash.done(), stats, read_log(log)[0]))
    return stages


@dataclass
class Inputs:
    pack_data: dict[str, Any]
    pack: Path
    tmp: Path

    def fleet(self, name: str, url: str) -> Path:
        models = [
            {"id": m, "engine": "openai", "base_url": f"{url}/v1", "concurrency": CONCURRENCY}
            for m in MODELS
        ]
        return write_yaml(
            self.tmp / f"{name}.yaml",
            {
                "ray": {"include_dashboard": False},
                "models": models,
                "scheduling": {"models_per_host": 1},
                "monitor": {"interval_s": 0.2, "gpu": "off"},
            },
        )

    def judges(self, name: str, url: str) -> Path:
        judge = {
            "id": JUDGE_ID,
            "engine": "openai",
            "base_url": f"{url}/v1",
            "model": "judge-m",
            "concurrency": CONCURRENCY,
        }
        return write_yaml(self.tmp / f"{name}.yaml", {"judges": [judge]})


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    tmp = tmp_path_factory.mktemp("crash")
    pack_data = tiny_pack(6, pack_id="crash")  # 12 cells per model
    return Inputs(pack_data, write_yaml(tmp / "pack.yaml", pack_data), tmp)


@dataclass
class Reference:
    """The uninterrupted run: its bundle, judged."""

    bundle: Path


@pytest.fixture(scope="module")
def reference(rc: RayCluster, inputs: Inputs) -> Reference:
    with SimServer(ANSWER_SIM) as sim, SimServer(JUDGE_SIM) as judge_sim:
        assert sim.url is not None and judge_sim.url is not None
        config = inputs.fleet("fleet-ref", sim.url)
        outcome, printed = run(inputs.pack, config, out=inputs.tmp / "ref")
        assert outcome.exit_code == 0 and outcome.bundle is not None, printed
        buf = io.StringIO()
        code = run_judge(outcome.bundle, inputs.judges("judge-ref", judge_sim.url), out=buf)
        assert code == 0, buf.getvalue()
    return Reference(outcome.bundle)


def _answers(bundle: Path) -> dict[str, str]:
    """Key → answer text of every ok record (strict: a key twice fails)."""
    ok = [r for r in shard_lines(bundle) if r["ok"]]
    counts = Counter(r["key"] for r in ok)
    assert set(counts.values()) == {1}, [k for k, n in counts.items() if n > 1]
    return {r["key"]: r["response_text"] for r in ok}


def _resourced(bundle: Path) -> set[str]:
    """Keys of the ok records that carry every :data:`CORE_RESOURCES` field."""
    return {
        r["key"]
        for r in shard_lines(bundle)
        if r["ok"] and all(r[f] is not None for f in CORE_RESOURCES)
    }


def _judgements(bundle: Path) -> tuple[dict[str, Any], dict[Any, Any]]:
    folder = bundle / "judgements" / JUDGE_ID
    verdicts = read_jsonl(folder / "verdicts.jsonl")
    reports = read_jsonl(folder / "reports.jsonl")
    assert verdicts.torn_tail is None and not verdicts.malformed
    assert reports.torn_tail is None and not reports.malformed
    counts = Counter(v["key"] for v in verdicts.records if v["status"] == "scored")
    assert set(counts.values()) == {1}, [k for k, n in counts.items() if n > 1]
    by_key = {v["key"]: (v["score"], v["red_flag"], v["status"]) for v in verdicts.records}
    by_row = {(r["model"], r["variant"]): r["dim_scores"] for r in reports.records}
    assert len(by_row) == len(reports.records)
    return by_key, by_row


def test_eval_and_judge_killed_five_times_each_equal_an_uninterrupted_run(
    rc: RayCluster, inputs: Inputs, reference: Reference
) -> None:
    rng = random.Random(SEED)
    keys = all_keys(inputs.pack_data, list(MODELS))
    out = inputs.tmp / "crashed"
    logs = inputs.tmp / "logs"
    logs.mkdir()
    with SimServer(ANSWER_SIM) as sim, SimServer(JUDGE_SIM) as judge_sim:
        assert sim.url is not None and judge_sim.url is not None
        config = inputs.fleet("fleet", sim.url)
        base = ["eval", "--pack", str(inputs.pack), "--config", str(config)]
        base += ["--address", rc.address]

        def bundle() -> Path | None:
            found = sorted(out.glob("*/bundle.json"))
            return found[0].parent if found else None

        def eval_argv(i: int) -> list[str]:
            root = bundle()
            return [*base, "--resume", str(root)] if i else [*base, "--out", str(out)]

        def responses() -> int:
            root = bundle()
            return line_count(list((root / "responses").glob("*.jsonl"))) if root else 0

        # --- eval: five kills, then a resume to the end ---------------------------------
        def ok_keys() -> set[str]:
            root = bundle()
            assert root is not None
            return {
                r["key"]
                for shard in (root / "responses").glob("*.jsonl")
                for r in read_jsonl(shard).records  # tolerant: a torn tail is not a record
                if r.get("ok")
            }

        crash = Crash(eval_argv, responses, ok_keys, len(keys), CONCURRENCY)
        points = kill_points(crash.total, crash.window, rng)
        stages = crash_cycles(crash, points, logs / "eval", sim.url)
        root = bundle()
        assert root is not None
        final = cli(*eval_argv(1), timeout=RUN_TIMEOUT_S)
        assert final.returncode == 0, final.stderr
        stats = wait_sim_idle(sim.url)

        # --- judge: five kills, then a rerun to the end ---------------------------------
        judge_config = inputs.judges("judge", judge_sim.url)
        jargs = ["judge", "--bundle", str(root), "--judge-config", str(judge_config)]
        jargs += ["--address", rc.address]
        folder = root / "judgements" / JUDGE_ID
        judge_records = len(keys) + len(MODELS) * 2  # verdicts + one report per row

        def judgements() -> int:
            return line_count([folder / "verdicts.jsonl", folder / "reports.jsonl"])

        jcrash = Crash(lambda _: jargs, judgements, set, judge_records, 2 * CONCURRENCY)
        jpoints = kill_points(jcrash.total, jcrash.window, rng)
        jstages = crash_cycles(jcrash, jpoints, logs / "judge", judge_sim.url)
        jfinal = cli(*jargs, timeout=RUN_TIMEOUT_S)
        assert jfinal.returncode == 0, jfinal.stderr
        jstats = wait_sim_idle(judge_sim.url)

    # eval: the same keys and answers as the uninterrupted run, each key once with ok
    answers = _answers(root)
    assert set(answers) == keys
    assert answers == _answers(reference.bundle)
    # eval: every cell carries its resource fields, those finished before a kill included
    assert _resourced(root) == keys == _resourced(reference.bundle)
    assert all(r["ok"] for r in shard_lines(root))  # no error record was ever written
    manifest = json.loads((root / "bundle.json").read_text())
    assert manifest["status"] == "done"
    events = [json.loads(line)["event"] for line in (root / "events.jsonl").open()]
    assert events.count("run_start") == KILLS + 1 and events.count("run_done") == 1
    assert final.stdout.splitlines()[0] == (
        f"{len(stages[-1].done)} reused, {len(keys) - len(stages[-1].done)} to run"
    )

    # eval: a cell with an ok record at a kill was never requested again
    cell_of = {k: c for m in MODELS for k, c in sim_keys(inputs.pack_data, m).items()}
    final_counts = {cell: stats["requests_by_key"].get(k, 0) for k, cell in cell_of.items()}
    assert set(final_counts) == keys and min(final_counts.values()) >= 1
    key_of = {cell: k for k, cell in cell_of.items()}
    for stage in stages:
        assert stage.done, stage
        for cell in stage.done:
            assert final_counts[cell] == stage.stats["requests_by_key"][key_of[cell]], cell
    # beyond the attempts of its final record, a cell was requested again only if it was
    # handed to the client actor before a kill: at most `concurrency` + QUEUE_AHEAD cells per
    # kill (models run one after another; queued cells may still start in the orphaned actor)
    attempts = {r["key"]: r["attempt"] for r in shard_lines(root)}
    repeated = {c: n - attempts[c] for c, n in final_counts.items() if n > attempts[c]}
    assert sum(repeated.values()) <= KILLS * (CONCURRENCY + QUEUE_AHEAD), repeated
    assert sum(stats["requests"].values()) == sum(final_counts.values()) + sum(
        stats["requests_by_key"].get(warmup_key(m), 0) for m in MODELS
    )

    # judge: the same verdicts and reports as the uninterrupted run, each key once scored
    verdicts, reports = _judgements(root)
    ref_verdicts, ref_reports = _judgements(reference.bundle)
    assert set(verdicts) == keys and verdicts == ref_verdicts
    assert reports == ref_reports
    assert json.loads((root / "scorecard.json").read_text())["rows"]

    # judge: every run asked only what was not stored when it started
    runs = [(s.stdout, s.stats) for s in jstages] + [(jfinal.stdout, jstats)]
    asked_before = asked = 0
    for i, (text, counters) in enumerate(runs):
        asked = counters["requests"].get("judge-m", 0) - asked_before
        assert asked <= _to_ask(text), (i, text)
        asked_before += asked
    assert asked == _to_ask(jfinal.stdout)  # the last run was not killed: exactly its plan
    assert asked_before <= judge_records + KILLS * 2 * CONCURRENCY


def _to_ask(stdout: str) -> int:
    """Answers plus reports a judge run planned to ask, from its first line:
    ``judge jm: 24 answers: 5 stored, 0 by rule, 19 to ask; 4 reports (0 stored)``."""
    m = re.search(r"(\d+) to ask; (\d+) reports \((\d+) stored\)", stdout)
    assert m is not None, stdout
    return int(m.group(1)) + int(m.group(2)) - int(m.group(3))


def test_ctrl_c_marks_the_bundle_failed_and_resume_completes(
    rc: RayCluster, inputs: Inputs
) -> None:
    """SIGINT (Ctrl-C) is the polite crash: one line naming the resume command, the bundle
    marked failed with a ``run_aborted`` event; the resume completes it."""
    keys = all_keys(inputs.pack_data, list(MODELS))
    out = inputs.tmp / "interrupted"
    with SimServer(ANSWER_SIM) as sim:
        assert sim.url is not None
        config = inputs.fleet("fleet-int", sim.url)
        args = ["eval", "--pack", str(inputs.pack), "--config", str(config)]
        args += ["--address", rc.address]
        log = inputs.tmp / "logs-int" / "run"
        proc = start_cli([*args, "--out", str(out)], log)
        fault_when(
            proc,
            lambda: line_count(list(out.glob("*/responses/*.jsonl"))) >= 3,
            "3 records",
            log,
            lambda: os.kill(proc.pid, signal.SIGINT),
            timeout_s=RUN_TIMEOUT_S,
        )
        stdout, stderr = read_log(log)
        root = next(out.glob("*/bundle.json")).parent
        assert proc.returncode == 1, (stdout, stderr)
        assert "Traceback" not in stderr, stderr
        errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert errors == [f"error: interrupted; resume with --resume {root}"], stderr
        assert json.loads((root / "bundle.json").read_text())["status"] == "failed"
        events = [json.loads(line) for line in (root / "events.jsonl").open()]
        assert events[-1]["event"] == "run_aborted" and events[-1]["reason"] == "interrupted"
        kept = {r["key"] for r in shard_lines(root) if r["ok"]}  # strict: no torn line
        assert kept

        resumed = cli(*args, "--resume", str(root), timeout=RUN_TIMEOUT_S)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[0] == f"{len(kept)} reused, {len(keys) - len(kept)} to run"
    assert set(_answers(root)) == keys
