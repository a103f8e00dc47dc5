"""``touchstone-ray judge``: score a bundle's answers with one or more LLM judges on Ray.

:func:`run_judge` is the public entry point; the CLI only parses flags and prints.

1. **Plan** (:mod:`.worklist`), per judge of the config: reuse every stored verdict and report
   whose cache key (:mod:`.cache`) still matches; write the rule-based verdicts of SPEC §10
   (reasoning-only, empty answer, failed generation) without asking; queue the rest.
2. **Ask** (:mod:`.client`): one async actor per judge, pinned with hard node affinity to the
   judge's ``host`` (a host of the fleet config frozen in the bundle's ``config.yaml``,
   resolved like eval's hosts; no host: the driver's node). It holds one engine and a
   semaphore of ``concurrency``. The driver (:mod:`.driver`, on the shared dispatcher) keeps
   a bounded window of ``2 × concurrency`` jobs per judge and appends each record to
   ``judgements/<judge>/verdicts.jsonl`` / ``reports.jsonl`` at once. A row's holistic report
   is asked as soon as its last verdict is in. Every wait has a deadline.
3. ``max_consecutive_failures`` judge errors or failed calls in a row abort that judge (exit
   1): its in-flight jobs are cancelled, every stored record is kept, a rerun continues. A
   judge whose node or actor is lost ends its pending jobs as judge errors with the reason
   and is aborted the same way; the other judges finish.
4. **Score** (:mod:`touchstone_ray.scoring.scorecard`): every judge of the config whose
   judgements are complete and current (the judges run now that were not aborted, and any other
   judge of the config whose stored records already cover the bundle) is aggregated into
   ``scorecard.json`` and ``scorecard.md``.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import yaml
from pydantic import ValidationError

from touchstone_ray.bundle import Bundle, JudgeFiles
from touchstone_ray.config import LOCAL_HOST, FleetConfig, ModelSpec, RaySettings
from touchstone_ray.errors import (
    BundleError,
    ConfigError,
    UsageError,
    writes_into,
)
from touchstone_ray.fleet import abort_guard
from touchstone_ray.judging.checks import check_line, judge_check
from touchstone_ray.judging.config import JudgeConfig, JudgeSpec, load_judge_config
from touchstone_ray.judging.driver import JudgeDriver, JudgeRun
from touchstone_ray.judging.prompts import (
    DEFAULT_HOLISTIC_TEMPLATE,
    HOLISTIC_TEMPLATES,
    HolisticTemplate,
)
from touchstone_ray.judging.worklist import JudgePlan, plan_judge
from touchstone_ray.lang import count, lines
from touchstone_ray.records import HolisticReport, Verdict
from touchstone_ray.scoring.scorecard import build_scorecard, write_scorecard

__all__ = ["run_judge"]


def _select(config: JudgeConfig, judges: list[str] | None) -> list[JudgeSpec]:
    if not judges:
        return list(config.judges)
    known = [j.id for j in config.judges]
    for judge_id in judges:
        if judge_id not in known:
            raise ConfigError(f"--judges: unknown judge id {judge_id!r}; the config has {known}")
    return [j for j in config.judges if j.id in judges]


def _override_model(selected: list[JudgeSpec], judge_model: str | None) -> dict[str, JudgeSpec]:
    """Judge id → its spec with the model of ``judge --judge-model`` (one run's override of
    the one chosen judge; the model is part of every cache key, so its records are its own);
    empty without an override. Raises :class:`UsageError` unless exactly one judge is chosen."""
    if judge_model is None:
        return {}
    if not judge_model.strip():
        raise UsageError("--judge-model: must not be empty")
    if len(selected) != 1:
        ids = [s.id for s in selected]
        raise UsageError(
            f"--judge-model: overrides the model of one judge, but {len(ids)} are chosen "
            f"({', '.join(ids)}); choose one with --judges"
        )
    spec = selected[0]
    return {spec.id: spec.model_copy(update={"model": judge_model.strip()})}


def _frozen_fleet(bundle: Bundle) -> FleetConfig | None:
    """The fleet config frozen in the bundle, or ``None`` if absent or unreadable."""
    path = bundle.layout.config
    try:
        return FleetConfig.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValidationError):
        return None


def _check_hosts(
    config: JudgeConfig, selected: list[JudgeSpec], fleet: FleetConfig | None, source: Path
) -> None:
    known = sorted([*(fleet.hosts if fleet else {}), LOCAL_HOST])
    for i, spec in enumerate(config.judges):
        if spec not in selected:
            continue
        host = spec.host_name
        if host != LOCAL_HOST and (fleet is None or host not in fleet.hosts):
            raise ConfigError(
                f"{source}: judges[{i}].host: host {host!r} is not a host of the bundle's fleet "
                f"config (config.yaml); expected one of {known}"
            )


def _resolve_nodes(specs: list[JudgeSpec], fleet: FleetConfig | None) -> dict[str, str]:
    """Judge id → Ray node id, through :func:`touchstone_ray.fleet.hosts.resolve_hosts`."""
    import ray

    from touchstone_ray.fleet import current_nodes, resolve_hosts

    hosts = list(dict.fromkeys(spec.host_name for spec in specs))
    lookup = FleetConfig(
        hosts=fleet.hosts if fleet else {},
        models=tuple(ModelSpec(id=f"judge@{h}", engine="simulated", host=h) for h in hosts),
    )
    nodes = resolve_hosts(lookup, current_nodes(), ray.get_runtime_context().get_node_id())
    return {spec.id: nodes[spec.host_name].node_id for spec in specs}


def _judgements(plan: JudgePlan) -> tuple[list[Verdict], list[HolisticReport]]:
    verdicts = [Verdict.model_validate(r) for r in plan.verdicts.values()]
    reports = [HolisticReport.model_validate(r) for r in plan.reports.values()]
    return verdicts, reports


def _summary(run: JudgeRun, lang: str) -> str:
    """The judge's last line in the pack's language ``lang``."""
    w = lines(lang)
    verdicts = run.plan.verdicts.values()
    scored = sum(1 for v in verdicts if v.get("status") == "scored")
    unscored = sum(1 for v in verdicts if str(v.get("status")).startswith("unscored"))
    errors = sum(1 for v in verdicts if v.get("status") == "judge_error")
    degraded = sum(1 for r in run.plan.reports.values() if r.get("status") == "degraded")
    state = w["summary_aborted"].format(reason=run.aborted) if run.aborted else w["judge_done"]
    return w["judge_summary"].format(
        judge=run.spec.id,
        state=state,
        scored=scored,
        unscored=unscored,
        errors=count(lang, errors, "judge_error"),
        reports=count(lang, len(run.plan.reports), "report"),
        degraded=degraded,
        calls=count(lang, run.n_calls, "call"),
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
    template: str = DEFAULT_HOLISTIC_TEMPLATE,
    judge_model: str | None = None,
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
    ``judges`` limits the run to those judge ids. ``template`` is the holistic template
    (``v1`` | ``v2``, :data:`~.prompts.HOLISTIC_TEMPLATES`); ``judge_model`` overrides the
    model of the one chosen judge for this run (recorded in every cache key).
    """
    if template not in HOLISTIC_TEMPLATES:
        known = ", ".join(HOLISTIC_TEMPLATES)
        raise UsageError(f"--template: expected one of {known}, got {template!r}")
    with writes_into(bundle_dir, "judge"):
        return _run_judge(
            bundle_dir,
            judge_config_path,
            address,
            judges,
            out,
            repeats,
            allow_unqualified,
            template,  # narrowed by the check above
            judge_model,
        )


def _run_judge(
    bundle_dir: str | Path,
    judge_config_path: str | Path,
    address: str | None,
    judges: list[str] | None,
    out: TextIO | None,
    repeats: int,
    allow_unqualified: bool,
    template: HolisticTemplate,
    judge_model: str | None,
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
    pack_sha = bundle.pack_sha256()
    responses, skipped = bundle.pack_responses(pack)
    if skipped:
        print(
            f"warning: {skipped} response records skipped (unreadable or not in the pack)", file=out
        )
    if not responses:
        raise BundleError(f"{bundle.root}: no responses to judge; run eval first")
    fleet = _frozen_fleet(bundle)
    _check_hosts(config, selected, fleet, Path(judge_config_path))
    overridden = _override_model(selected, judge_model)
    selected = [overridden.get(s.id, s) for s in selected]

    selected_ids = {s.id for s in selected}
    plans: dict[str, JudgePlan] = {}
    for spec in (overridden.get(s.id, s) for s in config.judges):
        store = JudgeFiles(bundle.layout, spec.id)
        if spec.id in selected_ids:
            cut = store.repair()
            if cut:
                print(f"judge {spec.id}: cut a torn last line ({cut} bytes)", file=out)
        plans[spec.id] = plan_judge(spec, store, pack, pack_sha, responses, repeats, template)

    runs = [JudgeRun(plan=plans[spec.id]) for spec in selected]
    for run in runs:
        plan = run.plan
        _write_restored(plan)
        for record in plan.rule_records:
            plan.store.write_verdict(record)
        n_rule = len(plan.rule_records)
        plan.rule_records.clear()
        run.answers_total = len(plan.jobs)
        run.calibration_total = len(plan.calibration_jobs)
        n_cal_stored = plan.n_calibration - len(plan.calibration_jobs)
        print(
            f"judge {run.spec.id}: {plan.n_calibration} calibration answers ({n_cal_stored} "
            f"stored); {len(responses)} answers: {plan.n_reused} stored, {n_rule} by "
            f"rule, {len(plan.jobs)} to ask; {len(plan.row_keys)} reports "
            f"({plan.n_reports_reused} stored); holistic template {template}"
            + (f"; model {run.spec.model} for this run" if run.spec.id in overridden else ""),
            file=out,
            flush=True,
        )

    driver = JudgeDriver(runs, pack, out)

    def close_stores(reason: str = "") -> None:
        for run in runs:
            _write_restored(run.plan)  # reports reused once their row's verdicts were in
            run.plan.store.close()

    steps = [lambda _: driver.stop(), close_stores]
    with abort_guard(bundle.root, "judge", steps, "stored verdicts kept, rerun to resume"):
        if any(r.plan.jobs or r.plan.report_jobs or r.plan.calibration_jobs for r in runs):
            from touchstone_ray.fleet import ensure_ray

            ensure_ray(address, fleet.ray if fleet else RaySettings())
            driver.start(_resolve_nodes([r.spec for r in runs], fleet), bundle.root.name)
            driver.run()
            driver.stop()
        close_stores()

    for run in runs:
        print(_summary(run, pack.language), file=out)
    aborted = [r.spec.id for r in runs if r.aborted]
    complete = [
        spec.id for spec in config.judges if spec.id not in aborted and plans[spec.id].complete
    ]
    elapsed = time.monotonic() - started
    w = lines(pack.language)
    if not complete:
        kept = w["scorecard_kept"] if bundle.layout.scorecard_json.exists() else ""
        print(w["no_scorecard"].format(kept=kept, elapsed=f"{elapsed:.1f}"), file=out)
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
        print(check_line(judge_id, checks[judge_id], judge_id in counted, pack.language), file=out)
    verdicts: list[Verdict] = []
    reports: list[HolisticReport] = []
    for judge_id in counted:
        v, r = _judgements(plans[judge_id])
        verdicts += v
        reports += r
    simulated = bool(manifest.simulated) or any(
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
        concurrency=manifest.model_concurrency(),
        judge_checks=checks,
        spreads=_spreads(plans[j] for j in counted) if repeats > 1 else None,
    )
    path = write_scorecard(bundle.root, card)
    if not counted:
        print(w["no_qualified"].format(judges=", ".join(complete)), file=out)
        print(path, file=out, flush=True)
        return 1
    best = card.rows[0] if card.rows else None
    lead = w["rank_1"].format(model=best.model, variant=best.variant) if best else ""
    end = w["judge_end"].format(
        state=w["judge_aborted" if aborted else "judge_done"],
        judges=count(pack.language, len(counted), "judge"),
        answers=count(pack.language, len(responses), "answer"),
        rows=count(pack.language, len(card.rows), "row"),
        lead=lead,
        elapsed=f"{elapsed:.1f}",
    )
    print(end, file=out)
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


def _write_restored(plan: JudgePlan) -> None:
    """Append again the reused records that a later stored record followed
    (:attr:`JudgePlan.restored`), so every reader's "last record wins" finds them."""
    for family, record in plan.restored:
        plan.store.append(family, record)
    plan.restored.clear()
