"""Speed measured under conditions that make it incomparable (SPEC §9): prompt-cache hits are
kept out of the prompt-side aggregates and counted, ``ttft_cold_p50_s`` takes the first
uncached cell of each prompt, and rows measured with ``concurrency`` > 1 are labelled "under
load" and kept off the single-stream Pareto chart. Records are written as real JSONL shards of
a hand-made bundle; the scorecard is the real ``build_scorecard``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_factories import make_bundle, responses

from touchstone_ray.bundle import Manifest
from touchstone_ray.records import EvalResponse
from touchstone_ray.report import load_report_data, write_report
from touchstone_ray.scoring.aggregates import (
    cold_ttft_cells,
    counts_for_decode,
    counts_for_prompt,
    row_stats,
    speed_exclusions,
    under_load,
)
from touchstone_ray.scoring.render import ranking_table
from touchstone_ray.scoring.scorecard import build_scorecard


def _cell(prompt_id: str, repeat: int, **fields: Any) -> EvalResponse:
    base: dict[str, Any] = {
        "key": f"m|baseline|{prompt_id}|{repeat}",
        "pack_id": "p",
        "pack_version": 1,
        "model": "m",
        "engine": "openai",
        "host": "local",
        "variant": "baseline",
        "category": "A",
        "prompt_id": prompt_id,
        "repeat": repeat,
        "ok": True,
        "response_text": "Antwort.",
    }
    return EvalResponse(**{**base, **fields})


def _timed(ttft: float, e2e: float, decode: float, prefill: float, **fields: Any) -> dict[str, Any]:
    return {"ttft_s": ttft, "ttfa_s": ttft, "e2e_s": e2e, "decode_tps": decode,
            "prefill_tps": prefill, **fields}  # fmt: skip


CACHED = {"prompt_cached": True, "cached_tokens": 100}
ROW = [
    _cell("P1", 1, is_cold_start=True, **_timed(2.0, 3.0, 10.0, 50.0)),
    _cell("P1", 2, **_timed(0.4, 1.0, 40.0, 500.0, cached_tokens=0)),
    _cell("P2", 1, **_timed(0.05, 0.6, 50.0, 4000.0, **CACHED)),
    _cell("P2", 2, **_timed(0.3, 0.9, 44.0, 700.0)),
    _cell("P2", 3, **_timed(0.2, 0.7, 46.0, 800.0)),
    _cell("P3", 1, ok=False, response_text="", error_kind="timeout"),
    _cell("P3", 2, is_cold_start=True, **_timed(1.5, 2.5, 12.0, 90.0, **CACHED)),
]


def test_one_predicate_names_every_reason_a_cell_is_left_out() -> None:
    assert [speed_exclusions(r) for r in ROW] == [
        ("cold_start",),
        (),
        ("prompt_cached",),
        (),
        (),
        ("failed",),
        ("cold_start", "prompt_cached"),
    ]
    assert [counts_for_prompt(r) for r in ROW] == [False, True, False, True, True, False, False]
    # a prompt cache shortens the prompt phase only: decode figures keep the cached cell
    assert [counts_for_decode(r) for r in ROW] == [False, True, True, True, True, False, False]
    assert [(r.prompt_id, r.repeat) for r in cold_ttft_cells(ROW)] == [("P1", 2), ("P2", 2)]


def test_row_stats_keep_cached_cells_out_of_ttft_and_prefill_and_count_them() -> None:
    stats = row_stats(ROW)
    assert stats.ttft_p50_s == pytest.approx(0.3)  # P1#2, P2#2, P2#3
    assert stats.ttft_p95_s == pytest.approx(0.3 + 0.9 * 0.1)
    assert stats.ttft_cold_p50_s == pytest.approx(0.35)  # P1#2 0.4, P2#2 0.3
    assert stats.e2e_p50_s == pytest.approx(0.9)
    assert stats.prefill_tps_median == 700.0  # 4000 tok/s of the cache hit is not prefill
    assert stats.decode_tps_median == 45.0  # 40, 44, 46 and the cached cell's 50
    assert stats.n_cached == 2 and stats.n_cold == 2 and stats.n_failed == 1
    assert stats.excluded == {"cold_start": 2, "failed": 1, "prompt_cached": 2}


def test_memory_figures_come_from_ok_cells_only() -> None:
    memory = {"sys_used_mb": 1200.0, "sys_used_delta_mb": 1.0, "gpu_mem_used_mb": 900.0}
    gone = _cell("P1", 1, ok=False, response_text="", error_kind="connect", **memory)
    served = _cell("P2", 1, sys_used_mb=1100.0, sys_used_delta_mb=300.0)
    stats = row_stats([gone, served])
    assert (stats.peak_ram_mb, stats.model_delta_mb, stats.peak_gpu_mem_mb) == (1100.0, 300.0, None)
    never = row_stats([gone])
    assert (never.peak_ram_mb, never.model_delta_mb, never.peak_gpu_mem_mb) == (None,) * 3


def test_a_row_of_cache_hits_only_has_no_ttft_but_a_decode_rate() -> None:
    only_cached = [r for r in ROW if r.prompt_cached and not r.is_cold_start]
    stats = row_stats(only_cached)
    assert (stats.ttft_p50_s, stats.ttft_cold_p50_s, stats.prefill_tps_median) == (None,) * 3
    assert stats.decode_tps_median == 50.0 and stats.n_cached == 1


def test_scorecard_rows_carry_cold_ttft_cache_hits_and_concurrency() -> None:
    from report_factories import PACK

    from touchstone_ray.pack import pack_from_data

    pack = pack_from_data(PACK, "test")
    other = [
        r.model_copy(update={"model": "n", "key": r.key.replace("m|", "n|", 1)}) for r in ROW[:2]
    ]
    scorecard = build_scorecard(
        pack, ROW + other, [], [], judges=[], vote="any", simulated=False, concurrency={"m": 4}
    )
    card = scorecard.model_dump(mode="json")
    rows = {r["model"]: r for r in card["rows"]}
    m, n = rows["m"], rows["n"]
    assert m["ttft_p50_s"] == pytest.approx(0.3) and m["ttft_cold_p50_s"] == pytest.approx(0.35)
    assert (m["n_cached"], m["concurrency"], m["decode_tps_median"]) == (2, 4, 45.0)
    assert (n["n_cached"], n["concurrency"]) == (0, None)
    assert n["ttft_p50_s"] == n["ttft_cold_p50_s"] == pytest.approx(0.4)
    table = ranking_table(scorecard).splitlines()
    assert "0.300 (c = 4)" in next(line for line in table if line.split()[1:2] == ["m"])
    assert "(c = " not in next(line for line in table if line.split()[1:2] == ["n"])


def test_concurrency_comes_from_the_frozen_fleet_config() -> None:
    models = [{"model": "a", "concurrency": 1}, {"model": "b", "concurrency": 3}, {"model": "c"}]
    manifest = Manifest.from_dict({"models": models})
    assert manifest.model_concurrency() == {"a": 1, "b": 3}
    assert [under_load(c) for c in (None, 1, 2)] == [False, False, True]


def _cache_some(root: Path) -> None:
    """Mark E1 repeat 2 of ``m-slow`` a cache hit in both variants, in its real shard."""
    shard = root / "responses" / "m-slow.jsonl"
    lines = []
    for r in responses():
        if r.model != "m-slow":
            continue
        if (r.prompt_id, r.repeat) == ("E1", 2):
            r = r.model_copy(update={"prompt_cached": True, "cached_tokens": 30})
        lines.append(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n")
    shard.write_text("".join(lines), encoding="utf-8")


@pytest.mark.parametrize(
    ("language", "load", "single", "note"),
    [
        ("de", "unter Last (c = 2)", "einzeln (c = 1)", "2 von 12 Zellen nahm der Server"),
        ("en", "under load (c = 2)", "single stream (c = 1)", "prompt cache on 2 of 12 cells"),
    ],
)
def test_report_labels_load_and_counts_cache_hits(
    tmp_path: Path, language: str, load: str, single: str, note: str
) -> None:
    root = make_bundle(tmp_path, language=language)  # m-fast c = 1, m-slow c = 2
    _cache_some(root)
    md_path, html_path = write_report(root)
    md = md_path.read_text(encoding="utf-8")
    lines = md.splitlines()
    qs_rows = [line for line in lines if line.startswith("| m-slow |") and "★" not in line]
    assert any(line.endswith(f"| {load} |") for line in qs_rows), qs_rows
    latency = [line for line in lines if line.startswith("| m-") and single in line]
    assert len(latency) == 2 and all(line.startswith("| m-fast |") for line in latency)
    assert sum(load in line for line in lines if line.startswith("| m-slow |")) == 4
    assert note in md
    charts = root / "report-charts"
    single_svg = (charts / "quality-speed.svg").read_text(encoding="utf-8")
    load_svg = (charts / "quality-speed-load.svg").read_text(encoding="utf-8")
    assert "m-fast" in single_svg and "m-slow" not in single_svg
    assert "m-slow" in load_svg and "m-fast" not in load_svg
    html = html_path.read_text(encoding="utf-8")
    assert html.count('id="quality-speed-load-') >= 1 and load in html


def test_report_figures_exclude_the_cache_hits(tmp_path: Path) -> None:
    root = make_bundle(tmp_path)
    _cache_some(root)
    data = load_report_data(root, judged=False)
    stats = data.stats[("m-slow", "baseline")]
    rows = [r for r in data.responses if (r.model, r.variant) == ("m-slow", "baseline")]
    fair = [r.ttft_s for r in rows if not r.is_cold_start and not r.prompt_cached]
    assert len(fair) == 1 and stats.ttft_p50_s == fair[0]
    assert stats.n_cached == 1 and stats.ttft_cold_p50_s == fair[0]
    assert data.concurrency("m-slow") == 2 and data.concurrency("m-fast") == 1


def test_a_judged_report_shows_the_scorecards_figures_once(tmp_path: Path) -> None:
    root = make_bundle(tmp_path)
    card = json.loads((root / "scorecard.json").read_text(encoding="utf-8"))
    row = next(r for r in card["rows"] if (r["model"], r["variant"]) == ("m-slow", "baseline"))
    row.update(ttft_p50_s=0.4321, decode_tps_median=98.7, model_delta_mb=3000.0)
    (root / "scorecard.json").write_text(json.dumps(card), encoding="utf-8")
    stats = load_report_data(root, judged=True).stats[("m-slow", "baseline")]
    assert (stats.ttft_p50_s, stats.decode_tps_median, stats.model_delta_mb) == (
        0.4321,
        98.7,
        3000.0,
    )
    assert stats.ttfa_p50_s == pytest.approx(0.165)  # not in the scorecard: computed here
    md = write_report(root)[0].read_text(encoding="utf-8")
    lines = [line for line in md.splitlines() if line.startswith("| 4 | m-slow | baseline")]
    assert len(lines) == 1 and "| 0.432 | 98.7 |" in lines[0]
    latency = [line for line in md.splitlines() if line.startswith("| m-slow | baseline | unter")]
    assert len(latency) == 1 and latency[0].split(" | ")[3] == "0.432"
    assert "0.165 | 0.160 |" not in latency[0]  # the recomputed TTFT p50 is not shown beside it


def _cut_some(root: Path) -> None:
    """Two cut prompts in the real shards: m-fast baseline A1 cut at its 40-token context,
    m-slow none E1 #1 of which the server saw 12 tokens of a 100-token context."""
    cut = {
        ("m-fast", "baseline", "A1", 1): {"prompt_tokens": 40, "context_tokens": 40,
                                          "request": {"max_tokens": 200}},
        ("m-slow", "none", "E1", 1): {"prompt_tokens": 12, "context_tokens": 100,
                                      "request": {"max_tokens": 16}},
    }  # fmt: skip
    by_model: dict[str, list[str]] = {}
    for r in responses():
        fields = cut.get((r.model, r.variant, r.prompt_id, r.repeat))
        if fields is not None:
            r = r.model_copy(update={"input_truncated": True, **fields})
        line = json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n"
        by_model.setdefault(r.model, []).append(line)
    for model, lines in by_model.items():
        (root / "responses" / f"{model}.jsonl").write_text("".join(lines), encoding="utf-8")


@pytest.mark.parametrize(
    ("language", "advice"),
    [("de", "context_tokens auf ≥ {n} erhöhen"), ("en", "raise context_tokens to ≥ {n}")],
)
def test_report_lists_cut_prompts_with_the_context_they_need(
    tmp_path: Path, language: str, advice: str
) -> None:
    root = make_bundle(tmp_path, language=language)
    _cut_some(root)
    md_path, _ = write_report(root)
    md = md_path.read_text(encoding="utf-8")
    advice = advice.replace("_", "\\_")  # Markdown escapes the underscore
    rows = [line for line in md.splitlines() if "context\\_tokens" in line and "|" in line]
    # A1: server's 40 prompt tokens (more than the 23 estimated from 89 characters) + 200
    # E1: 12 seen + 16 = 28, but it did not fit a 100-token context: at least 101
    assert rows == [
        f"| m-fast | baseline | `A1` | 1 | 40 | 40 | {advice.format(n=240)} |",
        f"| m-slow | none | `E1` | 1 | 12 | 100 | {advice.format(n=101)} |",
    ]
    assert md.count("✂ Prompt gekürzt" if language == "de" else "✂ prompt cut") == 2


def test_a_fleet_measured_only_under_load_gets_no_empty_single_stream_chart(
    tmp_path: Path,
) -> None:
    root = make_bundle(tmp_path, language="en")
    manifest = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    for model in manifest["models"]:
        model["concurrency"] = 3
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    md = write_report(root)[0].read_text(encoding="utf-8")
    assert "report-charts/quality-speed.svg" not in md
    assert "report-charts/quality-speed-load.svg" in md
    assert "★" not in md.split("## Quality vs speed")[1].split("### Latency")[0]
    assert md.count("| under load (c = 3) |") == 8  # 4 rows × (Pareto column, latency table)
