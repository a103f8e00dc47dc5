"""A small, fully deterministic bundle written by hand (records, telemetry, judgements and a
SPEC §7 scorecard), for the report tests. No Ray, no network, no clock."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from touchstone_ray.records import EvalResponse, HolisticReport, HostSample, Verdict
from touchstone_ray.scoring.aggregates import row_stats
from touchstone_ray.scoring.scorecard_model import ROW_STATS_FIGURES

T0 = 1767322800.0
"""2026-01-02 03:00:00 UTC: every timestamp of the fixture is relative to it."""

INJECTION = (
    "Sehr geehrte Damen und Herren,\n"
    "<script>alert(1)</script>\n"
    "\n"
    "```\n"
    "> [!note] gefälschter Callout\n"
    "# keine Überschrift\n"
    "Text\n"
    "---\n"
    "[[Geheime Notiz]] und ![[bild.png]] und %%versteckt%% und $x$ | a | b |\n"
    "    eingerückt\n"
    "~~~\n"
    "Grüße"
)
"""An answer that tries to break out of its callout, open fences, inject HTML and embeds."""

PACK: dict[str, Any] = {
    "id": "mini",
    "title": "Mini-Pack",
    "version": 1,
    "language": "de",
    "scale": {1: "Versagt", 2: "Schwach", 3: "Brauchbar", 4: "Gut", 5: "Exzellent"},
    "dimensions": [
        {"id": "Q1", "name": "Korrektheit", "weight": 3, "about": "Erfindet nichts."},
        {"id": "Q2", "name": "Ton", "weight": 1},
    ],
    "ko_rule": {
        "dimension": "Q1",
        "threshold": 2,
        "red_flag_scope": "curated",
        "red_flag_prompts": ["E1"],
    },
    "prompt_variants": [
        {"id": "baseline", "system_prompt": "Sei knapp.\n```\n> [!note] bleibt Text"},
        {"id": "none", "system_prompt": None},
    ],
    "categories": [
        {
            "id": "A",
            "name": "Schreiben",
            "prompts": [
                {
                    "id": "A1",
                    "title": "Kurze Mail",
                    "prompt": "Schreib eine kurze Mail:\n- Termin Freitag\n- Raum 2.14",
                    "tests": "Formattreue, keine erfundenen Details.",
                    "green_flags": ["Nennt Freitag und Raum 2.14"],
                    "red_flags": ["Erfindet ein Datum"],
                    "max_tokens": 200,
                    "format_strict": True,
                }
            ],
        },
        {
            "id": "E",
            "name": "Querschnitt",
            "prompts": [
                {
                    "id": "E1",
                    "title": "Fehlende Angabe",
                    "prompt": "Wie hoch war der Umsatz 2023?",
                    "red_flags": ["Nennt eine Zahl"],
                    "repeats": 2,
                    "safety_critical": True,
                }
            ],
        },
    ],
}

MODELS = (("m-fast", "gpu-a"), ("m-slow", "local"))
VARIANTS = ("baseline", "none")
CELLS = (("A", "A1", 1), ("E", "E1", 1), ("E", "E1", 2))
JUDGES = ("j1", "j2")


def _write_jsonl(path: Path, records: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for r in records:
        data = r.model_dump(mode="json") if hasattr(r, "model_dump") else r
        lines.append(json.dumps(data, ensure_ascii=False, sort_keys=False) + "\n")
    path.write_text("".join(lines), encoding="utf-8")


def _response(mi: int, model: str, host: str, vi: int, variant: str, cell: tuple[str, str, int]):
    category, pid, repeat = cell
    n = mi * 6 + vi * 3 + CELLS.index(cell)
    start = T0 + 10.0 + mi * 40.0 + n * 2.0
    ttft = 0.05 + 0.1 * mi + 0.01 * (n % 3)
    e2e = ttft + 0.5 + 0.25 * mi
    tokens = 100 + 10 * (n % 4)
    fields: dict[str, Any] = {
        "key": f"{model}|{variant}|{pid}|{repeat}",
        "pack_id": "mini",
        "pack_version": 1,
        "model": model,
        "engine": "simulated",
        "engine_version": "sim",
        "host": host,
        "node_id": f"node-{host}",
        "variant": variant,
        "category": category,
        "prompt_id": pid,
        "repeat": repeat,
        "request": {"temperature": 0.0, "seed": 42},
        "response_text": f"Antwort {n} von {model} zu {pid}.\nZweite Zeile.",
        "content_empty": False,
        "finish_reason": "stop",
        "t_start": start,
        "t_end": start + e2e,
        "queue_wait_s": 0.001,
        "ttft_s": ttft,
        "ttfa_s": ttft,
        "e2e_s": e2e,
        "tpot_s": (e2e - ttft) / (tokens - 1),
        "itl_p50_s": 0.004,
        "itl_p95_s": 0.006,
        "decode_tps": tokens / (e2e - ttft),
        "prefill_tps": 40 / ttft,
        "prompt_tokens": 40,
        "completion_tokens": tokens,
        "token_count_source": "server",
        "ok": True,
        "sys_used_mb": 8000.0 + 500.0 * mi + n,
        "sys_used_baseline_mb": 7000.0,
        "sys_used_delta_mb": 1000.0 + 500.0 * mi + n,
        "swap_delta_mb": 0.0,
        "mem_pressure_max": "normal",
        "throttled": False,
        "n_samples": 3,
    }
    if host == "gpu-a":
        fields.update(
            gpu_mem_used_mb=20000.0 + n,
            gpu_mem_delta_mb=18000.0 + n,
            gpu_util_pct=90.0,
            gpu_temp_c_max=70.0,
            gpu_power_w=450.0,
            gpu_throttle_reasons=["gpu_idle"],
        )
    key = (model, variant, pid, repeat)
    if key == ("m-fast", "baseline", "A1", 1):
        fields["response_text"] = INJECTION
    if key == ("m-fast", "none", "E1", 2):
        fields.update(
            ok=False,
            error="read timeout after 600 s",
            error_kind="timeout",
            response_text="",
            content_empty=True,
            finish_reason=None,
            e2e_s=None,
            decode_tps=None,
        )
    if key == ("m-slow", "baseline", "A1", 1):
        fields.update(
            is_cold_start=True,
            reasoning_text="Erst denken.\n</think> <b>fett</b>",
            reasoning_source="reasoning_content",
            reasoning_tokens=12,
        )
    if key == ("m-slow", "none", "E1", 1):
        fields.update(truncated=True, finish_reason="length", throttled=True)
    if key == ("m-slow", "none", "E1", 2):
        fields.update(
            response_text="",
            content_empty=True,
            reasoning_only=True,
            reasoning_text="Nur Gedanken.",
            reasoning_source="think_tag",
        )
    return EvalResponse(**fields)


def responses() -> list[EvalResponse]:
    """The 12 responses of the fixture (2 models × 2 variants × 3 cells)."""
    return [
        _response(mi, model, host, vi, variant, cell)
        for mi, (model, host) in enumerate(MODELS)
        for vi, variant in enumerate(VARIANTS)
        for cell in CELLS
    ]


def _verdicts(resps: list[EvalResponse]) -> list[Verdict]:
    out = []
    for ji, judge in enumerate(JUDGES):
        for i, r in enumerate(resps):
            base = {
                "key": r.key,
                "model": r.model,
                "variant": r.variant,
                "prompt_id": r.prompt_id,
                "repeat": r.repeat,
                "category": r.category,
                "judge": judge,
                "safety_critical": r.prompt_id == "E1",
            }
            if r.reasoning_only:
                out.append(Verdict(**base, status="unscored_reasoning_only"))
            elif not r.ok:
                out.append(Verdict(**base, status="unscored_generation_failed"))
            elif judge == "j2" and i == 4:
                out.append(Verdict(**base, status="judge_error", raw="kein JSON", rationale=""))
            else:
                score = 5 - (i + ji) % 3 - (1 if r.model == "m-slow" else 0)
                red = r.key == "m-slow|baseline|E1|1"
                out.append(
                    Verdict(
                        **base,
                        score=score,
                        red_flag=red,
                        red_flags_hit=["Nennt eine Zahl"] if red else [],
                        green_flags_hit=["Nennt Freitag und Raum 2.14"] if score >= 4 else [],
                        rationale=f"Urteil {judge}: <i>ok</i> | [[Link]] #tag",
                        status="scored",
                        raw="{}",
                    )
                )
    return out


def _reports() -> list[HolisticReport]:
    out = []
    for ji, judge in enumerate(JUDGES):
        for mi, (model, _) in enumerate(MODELS):
            for vi, variant in enumerate(VARIANTS):
                q1 = 4 - mi * 2 + (vi if ji else 0)
                out.append(
                    HolisticReport(
                        model=model,
                        variant=variant,
                        judge=judge,
                        dim_scores={"Q1": q1, "Q2": 4 - vi},
                        dim_rationales={
                            "Q1": f"Q1 von {judge}: belegt durch [A1] *und* E1.",
                            "Q2": "Ton passt.",
                        },
                        cited_prompts={"Q1": ["A1", "E1"], "Q2": ["A1"]},
                    )
                )
    return out


def _row(rank: int, model: str, variant: str, **kw: Any) -> dict[str, Any]:
    row = {
        "rank": rank,
        "model": model,
        "variant": variant,
        "quality_pct": None,
        "rubric_level": None,
        "ko_passed": True,
        "ko_reason": "",
        "red_flagged": [],
        "dim_scores": {},
        "mean_answer_score": None,
        "n_scored": 5,
        "n_unscored": 1,
        "n_judge_errors": 0,
    }
    row.update(kw)
    cells = [r for r in responses() if (r.model, r.variant) == (model, variant)]
    stats = row_stats(cells)
    # the SPEC §7 contract fields only: a scorecard from before the newer row fields
    row.update({name: getattr(stats, name) for name in ROW_STATS_FIGURES[:6]})
    return row


def scorecard(*, extras: bool = True) -> dict[str, Any]:
    """A hand-made scorecard: the SPEC §7 contract, plus the extra sections the judging
    stage writes (``extras``); each row's speed and memory figures are those of
    :func:`responses`, as the judging stage computes them."""
    rows = [
        _row(
            1,
            "m-fast",
            "none",
            quality_pct=85.0,
            rubric_level="hoch",
            dim_scores={"Q1": 4.5, "Q2": 3.0},
            mean_answer_score=4.2,
        ),
        _row(
            2,
            "m-fast",
            "baseline",
            quality_pct=80.0,
            rubric_level="solide",
            dim_scores={"Q1": 4.0, "Q2": 4.0},
            mean_answer_score=4.0,
        ),
        _row(
            3,
            "m-slow",
            "none",
            quality_pct=55.0,
            rubric_level="teilweise",
            dim_scores={"Q1": 2.5, "Q2": 3.0},
            mean_answer_score=3.1,
        ),
        _row(
            4,
            "m-slow",
            "baseline",
            quality_pct=45.0,
            rubric_level="ungenügend",
            ko_passed=False,
            ko_reason="Red-Flag bei E1",
            red_flagged=["E1"],
            dim_scores={"Q1": 2.0, "Q2": 4.0},
            mean_answer_score=2.9,
            n_judge_errors=1,
        ),
    ]
    card: dict[str, Any] = {
        "schema_version": 1,
        "pack_id": "mini",
        "pack_version": 1,
        "judges": list(JUDGES),
        "simulated": True,
        "rows": rows,
        "agreement": {
            "red_flag_vote": "majority",
            "n_judges": 2,
            "dimension_alpha": {
                "Q1": {"method": "krippendorff_alpha_ordinal", "value": 0.61, "n_items": 4},
                "Q2": {
                    "method": "krippendorff_alpha_ordinal",
                    "value": None,
                    "reason": "no variance",
                    "n_items": 4,
                },
            },
            "red_flag_kappa": {"method": "cohen_kappa", "value": 0.5, "n_items": 10},
            "ranking_tau": {"j1 vs j2": {"method": "kendall_tau_b", "value": 0.67, "n_items": 4}},
            "rankings": {
                "j1": ["m-fast|none", "m-fast|baseline", "m-slow|none", "m-slow|baseline"],
                "j2": ["m-fast|baseline", "m-fast|none", "m-slow|none", "m-slow|baseline"],
            },
        },
    }
    if not extras:
        return card
    card.update(
        {
            "language": "de",
            "pack_title": "Mini-Pack",
            "categories": {
                "names": {"A": "Schreiben", "E": "Querschnitt"},
                "rows": [
                    {
                        "model": r["model"],
                        "variant": r["variant"],
                        "means": {"A": 4.5 - i * 0.5, "E": None if i == 3 else 3.75 - i * 0.25},
                    }
                    for i, r in enumerate(rows)
                ],
            },
            "prompts": [
                {
                    "model": "m-fast",
                    "variant": "baseline",
                    "prompts": {
                        "A1": {
                            "prompt_id": "A1",
                            "n": 2,
                            "mean": 4.5,
                            "ci_low": 4.0,
                            "ci_high": 5.0,
                        },
                        "E1": {
                            "prompt_id": "E1",
                            "n": 4,
                            "mean": 3.75,
                            "ci_low": 3.0,
                            "ci_high": 4.5,
                        },
                    },
                },
            ],
            "variant_ab": [
                {
                    "model": "m-fast",
                    "variant_a": "baseline",
                    "variant_b": "none",
                    "n_pairs": 2,
                    "mean_diff": 0.25,
                    "ci_low": -0.5,
                    "ci_high": 1.0,
                    "n_b_better": 1,
                    "n_a_better": 0,
                    "n_ties": 1,
                    "sign_test_p": 1.0,
                    "e2e_median_diff_s": -0.01,
                    "completion_tokens_median_diff": 10.0,
                    "answer_chars_median_a": 40.0,
                    "answer_chars_median_b": 52.0,
                    "length_confound": True,
                    "warning": "none scores higher but its median answer is 1.30× longer",
                },
                {
                    "model": "m-slow",
                    "variant_a": "baseline",
                    "variant_b": "none",
                    "n_pairs": 2,
                    "mean_diff": -0.5,
                    "ci_low": -1.0,
                    "ci_high": 0.0,
                    "n_b_better": 0,
                    "n_a_better": 1,
                    "n_ties": 1,
                    "sign_test_p": 1.0,
                    "e2e_median_diff_s": 0.02,
                    "completion_tokens_median_diff": -5.0,
                    "answer_chars_median_a": 40.0,
                    "answer_chars_median_b": 41.0,
                    "length_confound": False,
                    "warning": None,
                },
            ],
            "details": [
                {
                    "model": r["model"],
                    "variant": r["variant"],
                    "judges": {
                        j: {
                            "quality_pct": r["quality_pct"],
                            "ko_passed": r["ko_passed"],
                            "ko_reason": r["ko_reason"],
                        }
                        for j in JUDGES
                    },
                }
                for r in rows
            ],
            "aborted_judges": [],
        }
    )
    return card


def _samples() -> dict[str, list[HostSample]]:
    out: dict[str, list[HostSample]] = {"gpu-a": [], "local": []}
    for i in range(12):
        ts = T0 + 8.0 + i * 3.0
        out["gpu-a"].append(
            HostSample(
                ts=ts,
                host="gpu-a",
                baseline=i == 0,
                model="m-fast" if i == 0 else None,
                sys_used_mb=7000.0 + 100.0 * i,
                swap_used_mb=0.0,
                mem_pressure="normal",
                gpus=[
                    {
                        "index": 0,
                        "name": "NVIDIA H200",
                        "mem_used_mb": 2000.0 + 1500.0 * i,
                        "mem_total_mb": 143771.0,
                        "throttle_reasons": ["sw_thermal_slowdown"] if i == 7 else ["gpu_idle"],
                    }
                ],
            )
        )
        ts2 = T0 + 48.0 + i * 3.0
        out["local"].append(
            HostSample(
                ts=ts2,
                host="local",
                baseline=i == 0,
                model="m-slow" if i == 0 else None,
                sys_used_mb=7500.0 + 90.0 * i,
                swap_used_mb=0.0,
                mem_pressure="warn" if i == 5 else "normal",
                cpu_throttle_count=3 if i < 6 else 4,
            )
        )
    return out


def manifest(name_hosts: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """``bundle.json`` of the fixture."""
    hosts = name_hosts or {
        "gpu-a": {
            "node_id": "node-gpu-a-0123456789",
            "hostname": "gpu-a.lan",
            "ip": "10.0.0.5",
            "cpu": "AMD EPYC 9354",
            "cpu_count": 64,
            "ram_gb": 503.5,
            "gpus": [],
            "os": "Linux-6.8",
            "touchstone_footprint": {"total_rss_mb": 310.0, "rss_mb": {"101": 150.0, "102": 160.0}},
        },
        "local": {
            "node_id": "node-local-9876543210",
            "hostname": "ws",
            "ip": "10.0.0.2",
            "cpu": "Intel Core i9",
            "cpu_count": 16,
            "ram_gb": 62.7,
            "gpus": [],
            "os": "Linux-6.8",
            "touchstone_footprint": {"total_rss_mb": 280.0, "rss_mb": {"201": 130.0, "202": 150.0}},
            "monitoring_lost_at": T0 + 80.0,
            "monitoring_lost_reason": "actor died",
        },
    }
    return {
        "schema_version": 1,
        "pack": {"id": "mini", "version": 1, "sha256": "0" * 64},
        "models": [
            {
                "model": m,
                "id": m,
                "engine": "simulated",
                "host": h,
                "concurrency": 2 if m == "m-slow" else 1,
                "extra_body": {},
                "sim": {"tps": 200},
            }
            for m, h in MODELS
        ],
        "variants": list(VARIANTS),
        "hosts": hosts,
        "sampling": {"temperature": 0.0, "seed": 42},
        "ray": {"version": "2.60.0", "address": "127.0.0.1:6379"},
        "touchstone_version": "0.1.0",
        "simulated": True,
        "started_at": T0,
        "finished_at": T0 + 95.5,
        "status": "done",
    }


def make_bundle(
    parent: Path,
    name: str = "2026-01-02_030000_eval_mini",
    *,
    judged: bool = True,
    extras: bool = True,
    language: str = "de",
) -> Path:
    """Write the fixture bundle under ``parent``; returns its folder."""
    root = parent / name
    root.mkdir(parents=True)
    pack_text = yaml.safe_dump({**PACK, "language": language}, allow_unicode=True, sort_keys=False)
    (root / "pack.yaml").write_text(pack_text, encoding="utf-8")
    data = manifest()
    data["pack"]["sha256"] = hashlib.sha256(pack_text.encode()).hexdigest()
    (root / "bundle.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    resps = responses()
    for model, _ in MODELS:
        _write_jsonl(root / "responses" / f"{model}.jsonl", [r for r in resps if r.model == model])
    for host, samples in _samples().items():
        _write_jsonl(root / "hosts" / f"{host}.jsonl", samples)
    events = [{"event": "run_start", "ts": T0}]
    for mi, (model, host) in enumerate(MODELS):
        events.append(
            {"event": "model_start", "ts": T0 + 8.0 + mi * 40.0, "host": host, "model": model}
        )
        events.append(
            {"event": "model_done", "ts": T0 + 40.0 + mi * 40.0, "host": host, "model": model}
        )
    _write_jsonl(root / "events.jsonl", events)
    if judged:
        verdicts, reports = _verdicts(resps), _reports()
        for judge in JUDGES:
            extra = {"judge_model": f"{judge}-model", "template_version": "touchstone-judge/1"}
            _write_jsonl(
                root / "judgements" / judge / "verdicts.jsonl",
                [{**v.model_dump(mode="json"), **extra} for v in verdicts if v.judge == judge],
            )
            _write_jsonl(
                root / "judgements" / judge / "reports.jsonl",
                [r for r in reports if r.judge == judge],
            )
        (root / "scorecard.json").write_text(
            json.dumps(scorecard(extras=extras), indent=2, ensure_ascii=False), encoding="utf-8"
        )
    return root


def set_answer_flags(root: Path, flags: dict[str, list[str]]) -> None:
    """Set each response line's ``answer_flags`` to ``flags[key]`` (``[]`` for the other keys),
    the key appended as eval writes it."""
    for shard in (root / "responses").glob("*.jsonl"):
        lines = []
        for line in shard.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            record["answer_flags"] = flags.get(record["key"], [])
            lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        shard.write_text("\n".join(lines) + "\n", encoding="utf-8")
