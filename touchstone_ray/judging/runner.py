"""``touchstone-ray judge``: score a bundle's answers with one or more LLM judges on Ray.

:func:`run_judge` is the public entry point; the CLI only parses flags and prints.

1. **Plan** (:mod:`.plan`), per judge of the config: reuse every stored verdict and report
   whose cache key (:mod:`.cache`) still matches; write the rule-based verdicts of SPEC §10
   (reasoning-only, empty answer, failed generation) without asking; queue the rest.
2. **Ask** (:mod:`.client`): one async actor per judge, pinned with hard node affinity to the
   judge's ``host`` (a host of the fleet config frozen in the bundle's ``config.yaml``,
   resolved like eval's hosts; no host: the driver's node). It holds one engine and a
   semaphore of ``concurrency``. The driver keeps a bounded window of ``2 × concurrency``
   jobs per judge, consumes results with ``ray.wait`` (timeout) and appends each record to
   ``judgements/<judge>/verdicts.jsonl`` / ``reports.jsonl`` at once. A row's holistic report
   is asked as soon as its last verdict is in. Every wait has a deadline.
3. ``max_consecutive_failures`` judge errors or failed calls in a row abort that judge (exit
   1): its in-flight jobs are cancelled, every stored record is kept, a rerun continues.
4. **Score** (:mod:`.scorecard`): every judge of the config whose judgements are complete and
   current (the judges run now that were not aborted, and any other judge of the config whose
   stored records already cover the bundle) is aggregated into ``scorecard.json`` and
   ``scorecard.md``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml
from pydantic import ValidationError

from touchstone_ray.aggregates import model_concurrency
from touchstone_ray.bundle import Bundle
from touchstone_ray.config import LOCAL_HOST, FleetConfig, ModelSpec, RaySettings
from touchstone_ray.errors import BundleError, ConfigError, RunError, UsageError
from touchstone_ray.judging.checks import check_line, judge_check
from touchstone_ray.judging.client import AnswerJob, ReportJob, failed_outcome
from touchstone_ray.judging.config import JudgeConfig, JudgeSpec, load_judge_config
from touchstone_ray.judging.plan import JudgePlan, plan_judge
from touchstone_ray.judging.scorecard import build_scorecard, write_scorecard
from touchstone_ray.judging.store import JudgeStore
from touchstone_ray.pack import Pack
from touchstone_ray.records import EvalResponse, HolisticReport, Verdict

__all__ = ["run_judge"]

ACTOR_READY_TIMEOUT_S = float(os.environ.get("TOUCHSTONE_ACTOR_READY_TIMEOUT_S", "60"))
"""How long a judge actor may take to be scheduled and start (s)."""
WAIT_TIMEOUT_S = 0.5
"""Longest single ``ray.wait``; deadlines are checked in between."""
PROGRESS_INTERVAL_S = 5.0
"""How often a progress line per judge is printed (s)."""
LOAD_BUDGET_S = 900.0
"""Time a judge model may spend loading (the engines' ``load_timeout_s``, s)."""
DEADLINE_SLACK_S = 30.0
"""Added to a job's own retry budget before the driver gives up on it (s)."""
MAX_ATTEMPTS = 3
"""Engine attempts per judge call (the engines' default)."""


@dataclass
class _InFlight:
    kind: Literal["answer", "report", "calibration"]
    job: AnswerJob | ReportJob
    deadline: float


@dataclass
class _JudgeRun:
    """One judge being run: its plan, actor, window and counters."""

    plan: JudgePlan
    actor: Any = None
    inflight: dict[Any, _InFlight] = field(default_factory=dict)
    failures_in_row: int = 0
    aborted: str | None = None
    answers_total: int = 0
    answers_done: int = 0
    reports_done: int = 0
    n_calls: int = 0
    n_errors: int = 0
    schema_noted: bool = False

    @property
    def spec(self) -> JudgeSpec:
        return self.plan.spec

    @property
    def deadline_s(self) -> float:
        """Budget of one job: two calls (the format retry) with their retries, plus loading."""
        return 2 * self.spec.timeout_s * MAX_ATTEMPTS + LOAD_BUDGET_S + DEADLINE_SLACK_S


def _select(config: JudgeConfig, judges: list[str] | None) -> list[JudgeSpec]:
    if not judges:
        return list(config.judges)
    known = [j.id for j in config.judges]
    for judge_id in judges:
        if judge_id not in known:
            raise ConfigError(f"--judges: unknown judge id {judge_id!r}; the config has {known}")
    return [j for j in config.judges if j.id in judges]


def _frozen_fleet(bundle: Bundle) -> FleetConfig | None:
    """The fleet config frozen in the bundle, or ``None`` if absent or unreadable."""
    path = bundle.layout.config
    try:
        return FleetConfig.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValidationError):
        return None


def _load_responses(
    bundle: Bundle, pack: Pack, manifest: dict[str, Any], out: TextIO
) -> list[EvalResponse]:
    """The bundle's de-duplicated responses of this pack's prompts and variants, in bundle
    order (manifest model order, pack variant order, prompt order, repeat)."""
    models = [str(m.get("model")) for m in manifest.get("models", []) if isinstance(m, dict)]
    variants = [v.id for v in pack.prompt_variants]
    prompts = [p.id for p in pack.prompts()]
    found: list[EvalResponse] = []
    skipped = 0
    for record in bundle.responses():
        try:
            response = EvalResponse.model_validate(record)
        except ValidationError:
            skipped += 1
            continue
        if response.variant not in variants or response.prompt_id not in prompts:
            skipped += 1
            continue
        found.append(response)
    if skipped:
        print(
            f"warning: {skipped} response records skipped (unreadable or not in the pack)", file=out
        )

    def order(r: EvalResponse) -> tuple[int, str, int, int, int]:
        m = models.index(r.model) if r.model in models else len(models)
        return (m, r.model, variants.index(r.variant), prompts.index(r.prompt_id), r.repeat)

    return sorted(found, key=order)


def _check_hosts(
    config: JudgeConfig, selected: list[JudgeSpec], fleet: FleetConfig | None, source: Path
) -> None:
    known = sorted([*(fleet.hosts if fleet else {}), LOCAL_HOST])
    for i, spec in enumerate(config.judges):
        if spec not in selected:
            continue
        host = spec.host or LOCAL_HOST
        if host != LOCAL_HOST and (fleet is None or host not in fleet.hosts):
            raise ConfigError(
                f"{source}: judges[{i}].host: host {host!r} is not a host of the bundle's fleet "
                f"config (config.yaml); expected one of {known}"
            )


def _resolve_nodes(specs: list[JudgeSpec], fleet: FleetConfig | None) -> dict[str, str]:
    """Judge id → Ray node id, through :func:`touchstone_ray.hosts.resolve_hosts`."""
    import ray

    from touchstone_ray.hosts import current_nodes, resolve_hosts

    hosts = list(dict.fromkeys(spec.host or LOCAL_HOST for spec in specs))
    lookup = FleetConfig(
        hosts=fleet.hosts if fleet else {},
        models=tuple(ModelSpec(id=f"judge@{h}", engine="simulated", host=h) for h in hosts),
    )
    nodes = resolve_hosts(lookup, current_nodes(), ray.get_runtime_context().get_node_id())
    return {spec.id: nodes[spec.host or LOCAL_HOST].node_id for spec in specs}


class _Driver:
    """Runs the judges' windows until every job is done or its judge aborted."""

    def __init__(self, runs: list[_JudgeRun], pack: Pack, out: TextIO) -> None:
        self.runs = runs
        self.pack = pack
        self.out = out

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    # --- actors ------------------------------------------------------------------------------
    def start(self, bundle: Bundle, fleet: FleetConfig | None) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from touchstone_ray.judging.client import JudgeClient

        nodes = _resolve_nodes([r.spec for r in self.runs], fleet)
        remote_cls = ray.remote(JudgeClient)
        ready: dict[Any, _JudgeRun] = {}
        for run in self.runs:
            spec = run.spec
            key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
            run.actor = remote_cls.options(
                name=f"judge:{spec.id}:{bundle.root.name}:{uuid.uuid4().hex[:6]}",
                num_cpus=0,
                max_restarts=0,
                max_concurrency=1000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[spec.id], soft=False),
            ).remote(spec.model_dump(mode="json"), key, self.pack, self.pack.sampling.seed)
            ready[run.actor.ready.remote()] = run
        done, _ = ray.wait(list(ready), num_returns=len(ready), timeout=ACTOR_READY_TIMEOUT_S)
        for ref, run in ready.items():
            node = nodes[run.spec.id][:8]
            if ref not in done:
                self.abort(
                    run,
                    f"judge actor not scheduled on node {node} within "
                    f"{ACTOR_READY_TIMEOUT_S:.0f} s",
                )
                continue
            try:
                facts = ray.get(ref, timeout=10)
            except Exception as exc:
                self.abort(run, f"judge actor failed to start: {type(exc).__name__}: {exc}")
                continue
            self.say(
                f"judge {run.spec.id}: {run.spec.engine} {run.spec.model} on node "
                f"{str(facts['node_id'])[:8]} ({facts['hostname']})"
            )

    def stop(self) -> None:
        import ray

        actors = [r.actor for r in self.runs if r.actor is not None]
        closing = [a.close.remote() for a in actors]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)

    # --- the loop ----------------------------------------------------------------------------
    def _top_up(self, run: _JudgeRun) -> None:
        limit = 2 * run.spec.concurrency
        while run.aborted is None and len(run.inflight) < limit:
            plan = run.plan
            flight: _InFlight
            deadline = time.monotonic() + run.deadline_s
            if plan.calibration_jobs:
                flight = _InFlight("calibration", plan.calibration_jobs.popleft(), deadline)
                method = run.actor.judge_answer
            elif plan.report_jobs:
                flight = _InFlight("report", plan.report_jobs.popleft(), deadline)
                method = run.actor.judge_report
            elif plan.jobs:
                flight = _InFlight("answer", plan.jobs.popleft(), deadline)
                method = run.actor.judge_answer
            else:
                return
            name = f"judge:{run.spec.id}:{flight.job.task_name}"
            run.inflight[method.options(name=name).remote(flight.job)] = flight

    def run(self) -> None:
        import ray

        last_progress = time.monotonic()
        while True:
            refs: dict[Any, _JudgeRun] = {}
            for run in self.runs:
                self._top_up(run)
                refs.update({ref: run for ref in run.inflight})
            if not refs:
                return
            ready, rest = ray.wait(list(refs), num_returns=1, timeout=WAIT_TIMEOUT_S)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                run = refs[ref]
                if ref in run.inflight:
                    self._collect(run, ref)
            self._check_deadlines()
            for run in self.runs:
                run.plan.store.sync_if_due()
            if time.monotonic() - last_progress >= PROGRESS_INTERVAL_S:
                last_progress = time.monotonic()
                for run in self.runs:
                    if run.aborted is None:
                        self.say(
                            f"judge {run.spec.id}: {run.answers_done}/{run.answers_total} "
                            f"answers, {run.reports_done} reports, {run.n_errors} judge errors"
                        )

    def _collect(self, run: _JudgeRun, ref: Any) -> None:
        import ray
        from ray.exceptions import RayActorError, TaskCancelledError

        flight = run.inflight.pop(ref)
        try:
            outcome = ray.get(ref, timeout=30)
        except RayActorError as exc:
            self.abort(run, f"judge actor died ({type(exc).__name__})")
            return
        except TaskCancelledError:
            return
        except Exception as exc:  # a bug in the actor must not lose the job: record it
            text = f"judge task failed: {type(exc).__name__}: {exc}"
            outcome = failed_outcome(flight.job, run.spec, self.pack, text)
        self._take(run, flight, outcome)

    def _take(self, run: _JudgeRun, flight: _InFlight, outcome: dict[str, Any]) -> None:
        record = outcome["record"]
        plan = run.plan
        if flight.kind == "calibration":
            plan.store.write_calibration(record)
            plan.calibration[record["key"]] = record
        elif flight.kind == "answer":
            plan.store.write_verdict(record)
            run.answers_done += 1
            report_job = plan.verdict_done(record)
            if report_job is not None:
                plan.report_jobs.append(report_job)
        else:
            plan.store.write_report(record)
            plan.reports[(record["model"], record["variant"])] = record
            run.reports_done += 1
        run.n_calls += int(outcome["calls"])
        if outcome.get("schema_dropped") and not run.schema_noted:
            run.schema_noted = True
            self.say(f"judge {run.spec.id}: structured output rejected; asking without a schema")
        if outcome["failure"] is None:
            run.failures_in_row = 0
            return
        run.n_errors += 1
        run.failures_in_row += 1
        limit = run.spec.max_consecutive_failures
        if limit and run.failures_in_row >= limit:
            self.abort(
                run,
                f"{run.failures_in_row} failed calls or unreadable replies in a row "
                f"(last: {record.get('error')})",
            )

    def _check_deadlines(self) -> None:
        import ray

        now = time.monotonic()
        for run in self.runs:
            for ref, flight in list(run.inflight.items()):
                if now > flight.deadline:
                    ray.cancel(ref, force=False)
                    del run.inflight[ref]
                    text = f"no result within the driver's deadline ({run.deadline_s:.0f} s)"
                    self._take(run, flight, failed_outcome(flight.job, run.spec, self.pack, text))

    def abort(self, run: _JudgeRun, reason: str) -> None:
        """Stop asking this judge: cancel its in-flight jobs, drop its queue (stored records
        stay)."""
        import ray

        if run.aborted is not None:
            return
        run.aborted = reason
        for ref in run.inflight:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=False)
        run.inflight.clear()
        run.plan.jobs.clear()
        run.plan.report_jobs.clear()
        run.plan.calibration_jobs.clear()
        self.say(f"judge {run.spec.id}: aborted: {reason}; stored verdicts kept, rerun to resume")


def _judgements(plan: JudgePlan) -> tuple[list[Verdict], list[HolisticReport]]:
    verdicts = [Verdict.model_validate(r) for r in plan.verdicts.values()]
    reports = [HolisticReport.model_validate(r) for r in plan.reports.values()]
    return verdicts, reports


def _summary(run: _JudgeRun) -> str:
    verdicts = run.plan.verdicts.values()
    scored = sum(1 for v in verdicts if v.get("status") == "scored")
    unscored = sum(1 for v in verdicts if str(v.get("status")).startswith("unscored"))
    errors = sum(1 for v in verdicts if v.get("status") == "judge_error")
    degraded = sum(1 for r in run.plan.reports.values() if r.get("status") == "degraded")
    state = f"aborted ({run.aborted})" if run.aborted else "done"
    return (
        f"judge {run.spec.id}: {state}: {scored} scored, {unscored} unscored, {errors} judge "
        f"errors; {len(run.plan.reports)} reports ({degraded} degraded); {run.n_calls} calls"
    )


def run_judge(
    bundle_dir: str | Path,
    judge_config_path: str | Path,
    address: str | None = None,
    judges: list[str] | None = None,
    out: TextIO | None = None,
    *,
    repeats: int = 1,
    allow_unqualified: bool = False,
) -> int:
    """Judge the bundle at ``bundle_dir``, write the scorecard; returns the exit code.

    0: every selected judge finished; 1: a judge was aborted (its stored records are kept; the
    scorecard then holds the judges that are complete) or no complete judge is qualified
    (:mod:`.checks`; the scorecard is still written, with ``judge_checks`` and no judge
    counted). An unqualified judge's records are stored but left out of the scorecard's rows
    unless ``allow_unqualified``. ``repeats`` (≥ 1) verdicts are asked per answer. Raises
    :class:`~touchstone_ray.errors.UsageError` subclasses (CLI exit 2) for a bad bundle or
    judge config, before any request, and :class:`RunError` (exit 1) when the bundle cannot
    be written (a disk gone read-only or full: every record written before stays intact).
    ``judges`` limits the run to those judge ids.
    """
    try:
        return _run_judge(
            bundle_dir, judge_config_path, address, judges, out, repeats, allow_unqualified
        )
    except OSError as exc:
        if isinstance(exc, ConnectionError | TimeoutError):  # Ray's, not the disk's
            raise
        raise RunError(
            f"{bundle_dir}: cannot write the bundle ({exc.strerror or exc}); judge aborted, "
            "every record written before is intact"
        ) from exc


def _run_judge(
    bundle_dir: str | Path,
    judge_config_path: str | Path,
    address: str | None,
    judges: list[str] | None,
    out: TextIO | None,
    repeats: int,
    allow_unqualified: bool,
) -> int:
    if repeats < 1:
        raise UsageError(f"--repeats: must be at least 1, got {repeats}")
    out = out if out is not None else sys.stdout
    started = time.monotonic()
    bundle = Bundle.open(Path(bundle_dir))
    config = load_judge_config(judge_config_path)
    selected = _select(config, judges)
    manifest = bundle.manifest()
    pack = bundle.pack()
    pack_sha = str(manifest["pack"].get("sha256", ""))
    responses = _load_responses(bundle, pack, manifest, out)
    if not responses:
        raise BundleError(f"{bundle.root}: no responses to judge; run eval first")
    fleet = _frozen_fleet(bundle)
    _check_hosts(config, selected, fleet, Path(judge_config_path))

    selected_ids = {s.id for s in selected}
    plans: dict[str, JudgePlan] = {}
    for spec in config.judges:
        store = JudgeStore(bundle.root, spec.id)
        if spec.id in selected_ids:
            cut = store.repair()
            if cut:
                print(f"judge {spec.id}: cut a torn last line ({cut} bytes)", file=out)
        plans[spec.id] = plan_judge(spec, store, pack, pack_sha, responses, repeats)

    runs = [_JudgeRun(plan=plans[spec.id]) for spec in selected]
    for run in runs:
        plan = run.plan
        for record in plan.rule_records:
            plan.store.write_verdict(record)
        n_rule = len(plan.rule_records)
        plan.rule_records.clear()
        run.answers_total = len(plan.jobs)
        n_cal_stored = plan.n_calibration - len(plan.calibration_jobs)
        print(
            f"judge {run.spec.id}: {plan.n_calibration} calibration answers ({n_cal_stored} "
            f"stored); {len(responses)} answers: {plan.n_reused} stored, {n_rule} by "
            f"rule, {len(plan.jobs)} to ask; {len(plan.row_keys)} reports "
            f"({plan.n_reports_reused} stored)",
            file=out,
            flush=True,
        )

    driver = _Driver(runs, pack, out)
    try:
        if any(r.plan.jobs or r.plan.report_jobs or r.plan.calibration_jobs for r in runs):
            from touchstone_ray.ray_session import ensure_ray

            ensure_ray(address, fleet.ray if fleet else RaySettings())
            try:
                driver.start(bundle, fleet)
                driver.run()
            finally:
                driver.stop()
    finally:
        for run in runs:
            run.plan.store.close()

    for run in runs:
        print(_summary(run), file=out)
    aborted = [r.spec.id for r in runs if r.aborted]
    complete = [
        spec.id for spec in config.judges if spec.id not in aborted and plans[spec.id].complete
    ]
    elapsed = time.monotonic() - started
    if not complete:
        print(f"no scorecard: no judge has complete judgements ({elapsed:.1f} s)", file=out)
        return 1
    checks = {
        j: judge_check(
            pack,
            plans[j].calibration,
            list(plans[j].verdicts.values()),
            list(plans[j].reports.values()),
        )
        for j in complete
    }
    counted = [j for j in complete if allow_unqualified or checks[j]["qualified"]]
    for judge_id in complete:
        print(check_line(judge_id, checks[judge_id], judge_id in counted), file=out)
    verdicts: list[Verdict] = []
    reports: list[HolisticReport] = []
    for judge_id in counted:
        v, r = _judgements(plans[judge_id])
        verdicts += v
        reports += r
    simulated = bool(manifest.get("simulated")) or any(
        plans[j].spec.engine == "simulated" for j in complete
    )
    card = build_scorecard(
        pack,
        responses,
        verdicts,
        reports,
        judges=counted,
        vote=config.aggregate.red_flag_vote,
        simulated=simulated,
        aborted_judges=aborted,
        concurrency=model_concurrency(manifest),
        judge_checks=checks,
        spreads=_spreads(plans[j] for j in counted) if repeats > 1 else None,
    )
    path = write_scorecard(bundle.root, card)
    if not counted:
        print(
            f"no qualified judge: {', '.join(complete)} failed calibration; their verdicts are "
            "stored; rerun with --allow-unqualified to count them anyway",
            file=out,
        )
        print(path, file=out, flush=True)
        return 1
    best = card["rows"][0] if card["rows"] else None
    lead = f"; rank 1: {best['model']} / {best['variant']}" if best else ""
    print(
        f"judge {'aborted' if aborted else 'done'}: {len(counted)} judges, {len(responses)} "
        f"answers, {len(card['rows'])} rows{lead} in {elapsed:.1f} s",
        file=out,
    )
    print(path, file=out, flush=True)
    return 1 if aborted else 0


def _spreads(plans: Iterable[JudgePlan]) -> dict[tuple[str, str], list[float]]:
    """(model, variant) → the ``score_spread`` of every verdict of ``plans`` that has one."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for plan in plans:
        for record in plan.verdicts.values():
            spread = record.get("score_spread")
            if isinstance(spread, int | float):
                out[(str(record["model"]), str(record["variant"]))].append(float(spread))
    return dict(out)
