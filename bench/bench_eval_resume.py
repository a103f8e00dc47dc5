"""Resume of a 200k-record bundle: scan-and-start, and a real ``eval --resume`` (issue [eval]).

Builds a synthetic bundle with :meth:`touchstone_ray.bundle.Bundle.create` (``bundle.json``,
``pack.yaml``, ``config.yaml``, ``responses/*.jsonl``, ``events.jsonl``): 2 models × 2 variants
× 500 prompts × 100 repeats = 200k cells, every one a realistic finalized EvalResponse line
(``--answer-chars`` of answer text, timings, token counts, resource fields), except 10 cells
left to run: 6 missing, 4 with an error record only. Each shard ends in a torn line (a crashed
run), which the resume's repair cuts off.

Per rep, on a fresh copy of that bundle (warm page cache):

* ``scan_and_start``: in this process, what ``run_eval`` does before its first cell apart from
  Ray: ``load_pack``, ``load_config``, ``plan_models``, ``Bundle.open``, ``check_resume``,
  ``scan_responses(repair=True)`` into the compact :class:`CellSet` as ``run_eval`` does,
  then the two plan-filtering passes (``sum(1 for _ in p.cells(pack, done))`` for the
  progress totals and again per phase);
* ``resume_cli``: ``touchstone-ray eval --resume`` against a fast simulator (TTFT 1 ms, OpenAI,
  concurrency 4): seconds from launch to the "N reused, M to run" line, to ``run_start``, to
  the first new record in a shard, and to exit; the driver's peak RSS; and whether exactly
  the 10 cells ran. The breakdown of the time to the first new record comes from the run's
  ``resume_scan`` event (the scan runs beside Ray's start and the client actor's start, and
  each model starts once its own shard is read) and its other events: launch → scan start
  (interpreter, imports, pack, config, ``check_resume``), the whole scan, launch → the first
  shard read, Ray's start, Ray ready → ``run_start``, ``run_start`` → ``model_start``,
  ``model_start`` → the first new record (seen by polling every 0.2 s).

The resume runs on two kinds of Ray, each rep on its own fresh copy, figures side by side:

* ``standing``: a cluster that stays up (``ray start --head``, started and warmed by one small
  eval outside every timed part); the resume joins it with ``--address``, as on a real fleet;
* ``embedded``: without ``--address``, the run starts its own local Ray (inside the timing).

Goals: scan-and-start ≤ 10 s; the first new record ≤ 5 s after launch, median of 3 on the
standing cluster (issue [standing-fleet]; the embedded figure is printed beside it).

    python bench/bench_eval_resume.py [--reps 3] [--records 200000] [--cluster both] [--quick]

``--quick``: 1 rep. Prints one JSON summary on stdout; progress on stderr. About 4–5 minutes
with the defaults on a 2-core machine (plus ~0.5 GB of temp disk).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CLI,
    SimProcess,
    count_lines,
    dump,
    events,
    fleet_config,
    log,
    machine,
    ray_env,
    run_eval_cli,
    scratch,
    spread,
    synthetic_pack,
    write_yaml,
)

from touchstone_ray.bundle import Bundle
from touchstone_ray.config import load_config
from touchstone_ray.eval.matrix import CellIndex, CellSet, plan_models
from touchstone_ray.fleet.local_head import LocalCluster
from touchstone_ray.pack import load_pack

MODELS = ("bench-a", "bench-b")
VARIANTS = 2
PROMPTS = 500
N_MISSING = 6
N_ERROR_ONLY = 4
SIM = {"ttft_ms": 1, "tps": 5000, "answer_tokens": 8}
GOAL_S = 10.0
"""Scan-and-start goal (s)."""
GOAL_FIRST_S = 5.0
"""First new record after launch (s)."""
TEXT = (
    "Sehr geehrte Damen und Herren, anbei die Zusammenfassung der Besprechung vom Dienstag. "
    "Die Frist für den Bericht endet am Freitag; offen sind noch die Zahlen aus dem Vertrieb. "
    "Bitte prüfen Sie die Tabelle und melden Sie Widersprüche bis Donnerstag zurück. "
    "Fehlende Angaben: Budget für Q3, Ansprechpartner im Einkauf, Termin der Abnahme."
)
WORDS = TEXT.split()


def answer_texts(n: int, chars: int, rng: random.Random) -> list[str]:
    """``n`` different answer texts of about ``chars`` characters."""
    texts = []
    for _ in range(n):
        words: list[str] = []
        size = 0
        while size < chars:
            word = rng.choice(WORDS)
            words.append(word)
            size += len(word) + 1
        texts.append(" ".join(words)[:chars])
    return texts


def template(pack: Any, model: str) -> dict[str, Any]:
    """A realistic finalized ok EvalResponse (dict) for ``model``; fields varied per cell."""
    from touchstone_ray.records import EvalResponse

    return EvalResponse(
        key="",
        pack_id=pack.id,
        pack_version=pack.version,
        model=model,
        engine="openai",
        engine_version="vllm 0.8.1",
        host="local",
        node_id="f" * 56,
        variant="",
        category="",
        prompt_id="",
        repeat=1,
        request={"temperature": 0.0, "seed": 42},
        content_empty=False,
        finish_reason="stop",
        token_count_source="server",
        ok=True,
        mem_pressure_max="normal",
        throttled=False,
        gpu_throttle_reasons=[],
    ).model_dump(mode="json")


def build_bundle(root: Path, records: int, answer_chars: int) -> dict[str, Any]:
    """Write pack, config and a 'crashed' bundle of ``records`` cells under ``root``."""
    rng = random.Random(7)
    per_model = records // len(MODELS)
    repeats = per_model // (VARIANTS * PROMPTS)
    assert repeats * VARIANTS * PROMPTS * len(MODELS) == records, "records must fit the matrix"
    pack_path = write_yaml(root / "pack.yaml", synthetic_pack(PROMPTS, repeats, VARIANTS))
    cfg_data = fleet_config("http://127.0.0.1:9", 4, root / "out", model_ids=MODELS)
    cfg_path = write_yaml(root / "config.yaml", cfg_data)
    pack, config = load_pack(pack_path), load_config(cfg_path)
    ray_info = {"version": "2.60.0", "address": "127.0.0.1:6379", "embedded": True}
    bundle = Bundle.create(root / "out", pack, pack_path, config, ray_info)
    plans = plan_models(pack, config)
    texts = answer_texts(64, answer_chars, rng)
    cells = [c for ps in plans.values() for p in ps for c in p.cells(pack)]
    chosen = rng.sample(range(len(cells)), N_MISSING + N_ERROR_ONLY)
    missing = set(chosen[:N_MISSING])
    error_only = set(chosen[N_MISSING:])
    t = time.time() - 86_400
    step = 80_000 / len(cells)  # the old run's cells spread over the last day
    writers: dict[str, Any] = {}
    bases = {m: template(pack, m) for m in MODELS}
    clean_sizes: dict[str, int] = {}
    for i, cell in enumerate(cells):
        if i in missing:
            continue
        fh = writers.get(cell.model)
        if fh is None:
            fh = writers[cell.model] = open(bundle.layout.shard(cell.model), "w", encoding="utf-8")  # noqa: SIM115
        rec = dict(bases[cell.model])
        ttft = 0.05 + rng.random() * 0.2
        e2e = ttft + 2.0 + rng.random() * 3
        tokens = 200 + rng.randrange(200)
        rec.update(
            key=cell.key,
            variant=cell.variant,
            category=cell.category,
            prompt_id=cell.prompt_id,
            repeat=cell.repeat,
            response_text=texts[i % len(texts)],
            t_start=t,
            t_end=t + e2e,
            queue_wait_s=rng.random() * 0.01,
            ttft_s=ttft,
            ttfa_s=ttft,
            e2e_s=e2e,
            tpot_s=(e2e - ttft) / (tokens - 1),
            itl_p50_s=(e2e - ttft) / tokens,
            itl_p95_s=(e2e - ttft) / tokens * 1.6,
            decode_tps=tokens / (e2e - ttft),
            prefill_tps=120 / ttft,
            prompt_tokens=120,
            completion_tokens=tokens,
            sys_used_mb=9000 + rng.random() * 500,
            sys_used_baseline_mb=8800.0,
            sys_used_delta_mb=200 + rng.random() * 500,
            swap_delta_mb=0.0,
            n_samples=int(e2e / 0.5) + 2,
        )
        if i in error_only:
            rec.update(
                ok=False,
                response_text="",
                content_empty=True,
                finish_reason=None,
                error="HTTP 500 Internal Server Error: boom",
                error_kind="http_5xx",
                attempt=3,
            )
        fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
        t += step
    for model, fh in writers.items():
        fh.close()
        clean_sizes[model] = bundle.layout.shard(model).stat().st_size
    with open(bundle.layout.events, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": "run_start", "ts": t - 1e4, "pack": pack.id}) + "\n")
    bundle.update_manifest(status="failed")
    return {
        "pack": pack_path,
        "config": cfg_path,
        "bundle": bundle.root,
        "clean_sizes": clean_sizes,
        "todo_keys": sorted(cells[i].key for i in chosen),
        "repeats": repeats,
    }


def tear(bundle: Path, clean_sizes: dict[str, int]) -> None:
    """Cut every shard back to its clean size and append half a record (a crash mid-write)."""
    b = Bundle(bundle)
    for model, size in clean_sizes.items():
        path = b.layout.shard(model)
        with open(path, "rb+") as fh:
            fh.truncate(size)
            fh.seek(size)
            fh.write(b'{"key":"' + model.encode() + b'|v1|A1|1","pack_id":"bench","mo')
        path.with_name(path.name + ".torn").unlink(missing_ok=True)


def scan_and_start(pack_path: Path, cfg_path: Path, bundle_root: Path) -> dict[str, Any]:
    """Time the pre-Ray part of a resume: load, open, check, scan+repair, plan filtering."""
    t0 = time.perf_counter()
    pack = load_pack(pack_path)
    config = load_config(cfg_path)
    plans = plan_models(pack, config)
    t1 = time.perf_counter()
    bundle = Bundle.open(bundle_root)
    bundle.check_resume(pack_path, config)
    t2 = time.perf_counter()
    scan = bundle.scan_responses(repair=True, key_set=lambda: CellSet(CellIndex(pack, plans)))
    done = scan.ok_keys
    t3 = time.perf_counter()
    todo = {
        host: sum(sum(1 for _ in p.cells(pack, done)) for p in models)
        for host, models in plans.items()
    }
    t4 = time.perf_counter()
    phases = [sum(1 for _ in p.cells(pack, done)) for models in plans.values() for p in models]
    t5 = time.perf_counter()
    return {
        "load_pack_config_plan_s": t1 - t0,
        "open_check_resume_s": t2 - t1,
        "scan_repair_s": t3 - t2,
        "plan_filter_totals_s": t4 - t3,
        "plan_filter_phases_s": t5 - t4,
        "total_s": t5 - t0,
        "ok_keys": len(done),
        "lines": scan.n_lines,
        "torn_bytes": scan.torn_bytes,
        "to_run": sum(todo.values()),
        "to_run_phases": sum(phases),
    }


def resume_cli(
    built: dict[str, Any], bundle_root: Path, tmp: Path, head: LocalCluster | None = None
) -> dict[str, Any]:
    """A real ``touchstone-ray eval --resume`` of ``bundle_root``; when its first record lands.

    ``head``: join that standing cluster (``--address``); ``None``: the run starts its own Ray.
    """
    b = Bundle(bundle_root)
    shards = {m: b.layout.shard(m) for m in MODELS}
    clean = built["clean_sizes"]
    with SimProcess(**SIM) as sim:
        cfg = write_yaml(
            tmp / "config.yaml", fleet_config(sim.url, 4, tmp / "out", model_ids=MODELS)
        )

        def first_record(_: float) -> dict[str, bool]:
            """A shard longer than its clean size that ends in a newline: the torn tail was
            cut and a whole new record appended."""
            for model, path in shards.items():
                try:
                    with open(path, "rb") as fh:
                        size = fh.seek(0, 2)
                        if size > clean[model]:
                            fh.seek(size - 1)
                            if fh.read(1) == b"\n":
                                return {"first_new_record": True}
                except OSError:
                    pass
            return {"first_new_record": False}

        args = ["--pack", str(built["pack"]), "--config", str(cfg), "--resume", str(bundle_root)]
        env = ray_env(tmp)
        if head is not None:
            args += ["--address", head.address]
            env |= head.client_env()
        run = run_eval_cli(args, env, 0.2, watch=first_record)
    if run.rc != 0:
        raise RuntimeError(f"resume failed (rc {run.rc}):\n{run.stderr[-3000:]}")
    reused_line = next((t for t, line in run.stdout_lines if "reused," in line), None)
    evs = events(bundle_root)
    starts = [e for e in evs if e["event"] == "run_start"]
    ts: dict[str, Any] = {}  # each event's first time in this run (the first model_start)
    last: dict[str, float] = {}  # and its last (the last model_done)
    for e in evs:
        if e["ts"] >= starts[-1]["ts"]:
            ts.setdefault(e["event"], e["ts"])
            last[e["event"]] = e["ts"]
    scans = [e for e in evs if e["event"] == "resume_scan"]
    if scans:
        ts["resume_scan_event"] = scans[-1]
    new_lines = sum(count_lines(p) for p in shards.values())
    # finalize rewrites every line whose key ran again (the old error records too), so new
    # records are found by key, not by offset
    todo = {k.encode(): k for k in built["todo_keys"]}
    ok_keys: set[str] = set()
    for path in shards.values():
        with open(path, "rb") as fh:
            for line in fh:
                if any(k in line for k in todo):
                    rec = json.loads(line)
                    if rec.get("ok") and rec.get("key") in built["todo_keys"]:
                        ok_keys.add(rec["key"])
    lines_before = built["lines_written"]
    t0 = run.t0_epoch
    first = run.marks.get("first_new_record")
    scan = ts.get("resume_scan_event") or {}
    nan = float("nan")
    first_shard = (scan.get("shards") or [{}])[0].get("scan_end", nan)
    breakdown = {
        "launch_to_scan_start_s": scan.get("scan_start", nan) - t0,
        "scan_s": scan.get("scan_s"),
        "launch_to_first_shard_read_s": first_shard - t0,
        "ray_start_s": scan.get("ray_start_s"),
        "ray_ready_to_run_start_s": starts[-1]["ts"] - scan.get("ray_start_end", nan),
        "model_start_to_first_new_record_s": first - (ts["model_start"] - t0)
        if first is not None and "model_start" in ts
        else None,
    }
    return {
        **breakdown,
        "to_reused_line_s": reused_line,
        "to_run_start_s": starts[-1]["ts"] - run.t0_epoch,
        "to_first_new_record_s": run.marks.get("first_new_record"),
        "run_start_to_model_start_s": ts.get("model_start", float("nan")) - starts[-1]["ts"],
        "finalize_and_stop_s": last["run_done"] - last["model_done"]
        if "model_done" in last and "run_done" in last
        else None,
        "total_wall_s": run.wall_s,
        "peak_rss_mb": run.peak_rss_mb,
        "new_records": new_lines - lines_before,
        "todo_cells_now_ok": sorted(ok_keys) == built["todo_keys"],
    }


def warm_head(head: LocalCluster, tmp: Path) -> None:
    """One small eval joined to ``head`` (not timed): the head accepts drivers only a while
    after ``ray start`` returns, and its first driver pays for warming it."""
    pack = write_yaml(tmp / "warm" / "pack.yaml", synthetic_pack(2, 1, 1))
    with SimProcess(**SIM) as sim:
        cfg = write_yaml(
            tmp / "warm" / "config.yaml", fleet_config(sim.url, 2, tmp / "warm" / "out")
        )
        args = ["eval", "--pack", str(pack), "--config", str(cfg), "--address", head.address]
        env = ray_env(tmp / "warm") | head.client_env()
        deadline = time.monotonic() + 180
        while True:
            done = subprocess.run(
                [str(CLI), *args], env=env, capture_output=True, text=True, timeout=600
            )
            if done.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(2.0)
    if done.returncode != 0:
        raise RuntimeError(f"warm-up eval exited {done.returncode}: {done.stderr[-2000:]}")


def cli_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Min, median and max of every timing of ``runs``."""
    return {
        k: spread([r[k] for r in runs])
        for k in runs[0]
        if isinstance(runs[0][k], float) or runs[0][k] is None
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--answer-chars", type=int, default=1200)
    parser.add_argument("--quick", action="store_true", help="one rep")
    parser.add_argument(
        "--cluster",
        choices=("both", "standing", "embedded"),
        default="both",
        help="which Ray the resume runs on (both: side by side, each rep on both)",
    )
    args = parser.parse_args(argv)
    reps = 1 if args.quick else args.reps
    kinds = ("standing", "embedded") if args.cluster == "both" else (args.cluster,)
    started = time.monotonic()
    scans: list[dict[str, Any]] = []
    cli_runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    head: LocalCluster | None = None
    with scratch() as tmp:
        try:
            if "standing" in kinds:
                log("ray start --head and a warm-up eval (not timed)")
                head = LocalCluster()
                warm_head(head, tmp)
            log(f"building a {args.records}-record bundle")
            t0 = time.perf_counter()
            built = build_bundle(tmp / "master", args.records, args.answer_chars)
            build_s = time.perf_counter() - t0
            master = Path(built["bundle"])
            shards = [Bundle(master).layout.shard(m) for m in MODELS]
            built["lines_written"] = sum(count_lines(p) for p in shards)
            bundle_mb = sum(p.stat().st_size for p in master.rglob("*") if p.is_file()) / 2**20
            log(f"  {bundle_mb:.0f} MB in {build_s:.1f} s")
            for rep in range(reps):
                work = tmp / f"rep{rep}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
                copy = work / master.name
                shutil.copytree(master, copy)
                tear(copy, built["clean_sizes"])
                log(f"rep {rep + 1}/{reps}: scan-and-start")
                scans.append(scan_and_start(built["pack"], built["config"], copy))
                log(f"  {scans[-1]['total_s']:.2f} s, {scans[-1]['to_run']} to run")
                shutil.rmtree(copy)
                for kind in kinds:
                    kind_work = work / kind
                    kind_work.mkdir()
                    copy = kind_work / master.name
                    shutil.copytree(master, copy)
                    tear(copy, built["clean_sizes"])
                    log(f"rep {rep + 1}/{reps}: touchstone-ray eval --resume ({kind} Ray)")
                    on = head if kind == "standing" else None
                    cli_runs[kind].append(resume_cli(built, copy, kind_work, on))
                    log(f"  first new record after {cli_runs[kind][-1]['to_first_new_record_s']} s")
                    shutil.rmtree(kind_work, ignore_errors=True)
                shutil.rmtree(work, ignore_errors=True)
        finally:
            if head is not None:
                head.stop()
    scan_fig = {
        k: spread([s[k] for s in scans])
        for k in scans[0]
        if k.endswith("_s") and isinstance(scans[0][k], float)
    }
    cli_fig = {kind: cli_figures(runs) for kind, runs in cli_runs.items()}
    scan_max = scan_fig["total_s"]["max"]
    first = {kind: fig["to_first_new_record_s"] for kind, fig in cli_fig.items()}
    side_by_side = {kind: f["median"] for kind, f in first.items()}
    goal_kind = "standing" if "standing" in first else kinds[0]
    first_median = first[goal_kind]["median"]
    summary = {
        "bench": "eval_resume",
        "machine": machine(),
        "setup": {
            "records": args.records,
            "models": len(MODELS),
            "variants": VARIANTS,
            "prompts": PROMPTS,
            "repeats": built["repeats"],
            "answer_chars": args.answer_chars,
            "bundle_mb": round(bundle_mb, 1),
            "build_s": round(build_s, 1),
            "cells_to_run": N_MISSING + N_ERROR_ONLY,
            "page_cache": "warm (fresh copy per rep)",
            "sim": SIM,
            "reps": reps,
            "clusters": list(kinds),
        },
        "first_new_record_median_s": side_by_side,
        "figures": {"scan_and_start": scan_fig, "resume_cli": cli_fig},
        "checks": {
            "scan_to_run": [s["to_run"] for s in scans],
            "scan_torn_bytes": [s["torn_bytes"] for s in scans],
            "cli_new_records": {k: [r["new_records"] for r in rs] for k, rs in cli_runs.items()},
            "cli_todo_cells_now_ok": {
                k: [r["todo_cells_now_ok"] for r in rs] for k, rs in cli_runs.items()
            },
        },
        "goal": {
            "max_s": GOAL_S,
            "first_new_record_median_s": GOAL_FIRST_S,
            "first_new_record_on": goal_kind,
            "scan_and_start_ok": scan_max is not None and scan_max <= GOAL_S,
            "first_new_record_median_ok": first_median is not None and first_median <= GOAL_FIRST_S,
        },
        "bench_wall_s": round(time.monotonic() - started, 1),
    }
    dump(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
