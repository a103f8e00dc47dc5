"""The engine footprint in the report: hardware table, timeline line, scorecard row, compare."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import yaml
from report_factories import make_bundle

from touchstone_ray.doc import Callout, Table
from touchstone_ray.lang import labels
from touchstone_ray.records import EngineProcessSample, EvalResponse
from touchstone_ray.report._data import load_report_data, row_stats
from touchstone_ray.report._footprint import engine_footprint
from touchstone_ray.report._speed import _memory_series
from touchstone_ray.report.compare import compare_rows
from touchstone_ray.scoring.scorecard import build_scorecard

EP = "http://127.0.0.1:8080/v1"


def _rewrite(path: Path, fn: object) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = [fn(i, r) for i, r in enumerate(rows)]  # type: ignore[operator]
    path.write_text("".join(json.dumps(r) + "\n" for r in out))


def engine_bundle(tmp_path: Path, models_per_host: int = 1) -> Path:
    """The report fixture with m-fast (gpu-a) served by a found process on port 8080."""
    root = make_bundle(tmp_path, judged=False)
    manifest = json.loads((root / "bundle.json").read_text())
    manifest["models"][0].update(engine="openai", base_url=EP)
    manifest["hosts"]["gpu-a"]["engines"] = {EP: {"pid": 4242, "found_by": "port", "reason": None}}
    manifest["hosts"]["local"]["engines"] = {
        "simulated:m-slow": {"pid": None, "found_by": None, "reason": "simulated: no process"}
    }
    (root / "bundle.json").write_text(json.dumps(manifest))
    (root / "config.yaml").write_text(
        yaml.safe_dump({"scheduling": {"models_per_host": models_per_host}})
    )

    def fast(i: int, r: dict[str, object]) -> dict[str, object]:
        return r | {
            "engine_rss_mb": 1900.0 + 10 * i,
            "engine_rss_delta_mb": 400.0 + i,
            "engine_gpu_mem_mb": 300.0,
            "engine_cpu_pct": 100.0 + 10 * i,
            "foreign_cpu_pct": 900.0 if i == 0 else 1.0,
            "host_contended": i == 0,
        }

    _rewrite(root / "responses" / "m-fast.jsonl", fast)

    def sample(i: int, s: dict[str, object]) -> dict[str, object]:
        eng = EngineProcessSample(endpoint=EP, pid=4242, rss_mb=1024.0 * (1 + i % 2))
        return s | {"engines": [eng.model_dump()]}

    _rewrite(root / "hosts" / "gpu-a.jsonl", sample)
    return root


def test_footprint_table_beside_system_figures(tmp_path: Path) -> None:
    data = load_report_data(engine_bundle(tmp_path), judged=False)
    t = labels("de")
    table, *rest = engine_footprint(data, "gpu-a", t)
    assert rest == []  # one model per host: no note
    assert isinstance(table, Table)
    assert table.head[:3] == ("Modell", "Engine-Prozess", "Engine-RSS-Peak MB")
    (row,) = table.rows
    texts = ["".join(str(getattr(p, "text", p)) for p in c.parts) for c in row]
    fast = [r for r in data.responses if r.model == "m-fast"]
    n = len(fast)
    sys_peak = max(r.sys_used_mb for r in fast if r.ok and r.sys_used_mb is not None)  # ok cells
    assert texts[:6] == [
        "m-fast",
        "PID 4242 (per Port)",
        f"{1900 + 10 * (n - 1)}",
        f"{400 + n - 1}",
        "300",
        f"{100 + 10 * (n - 1) / 2:.0f}",
    ]
    assert texts[6] == f"{sys_peak:.0f}" and texts[8] == "1"
    (local,) = engine_footprint(data, "local", t)[0].rows  # type: ignore[union-attr]
    assert local[1].parts == ("simulated: no process",)
    assert local[2].parts == ("–",)


def test_multi_model_host_says_which_figure_to_trust(tmp_path: Path) -> None:
    data = load_report_data(engine_bundle(tmp_path, models_per_host=2), judged=False)
    data.responses = [r.model_copy(update={"host": "gpu-a"}) for r in data.responses]
    blocks = engine_footprint(data, "gpu-a", labels("en"))
    assert len(blocks[0].rows) == 2  # type: ignore[union-attr]
    note = blocks[1]
    assert isinstance(note, Callout) and note.title == "Several models per host"
    assert note.text is not None and "engine figures" in note.text
    single = load_report_data(engine_bundle(tmp_path / "b", models_per_host=1), judged=False)
    single.responses = data.responses
    assert len(engine_footprint(single, "gpu-a", labels("en"))) == 1


def test_no_engine_data_no_table(tmp_path: Path) -> None:
    data = load_report_data(make_bundle(tmp_path, judged=False), judged=False)
    assert engine_footprint(data, "gpu-a", labels("de")) == []


def test_timeline_has_the_engine_line(tmp_path: Path) -> None:
    data = load_report_data(engine_bundle(tmp_path), judged=False)
    series = _memory_series(data, "gpu-a")
    assert list(series.engines_gb) == [EP]
    assert series.engines_gb[EP][:3] == [1.0, 2.0, 1.0]
    assert _memory_series(data, "local").engines_gb == {}


def test_contended_cells_counted_and_out_of_speed(tmp_path: Path) -> None:
    data = load_report_data(engine_bundle(tmp_path), judged=False)
    fast = [r for r in data.responses if r.model == "m-fast" and r.variant == "none"]
    stats = row_stats(fast)
    assert stats.n_contended == sum(1 for r in fast if r.host_contended)
    timed = [
        r.decode_tps
        for r in fast
        if r.ok and not r.is_cold_start and not r.host_contended and not r.throttled
    ]
    base = EvalResponse.model_validate(fast[0].model_dump() | {"decode_tps": 1.0})
    fast_hot = [
        base.model_copy(update={"key": "x|none|Z|1", "host_contended": True, "decode_tps": 1e6}),
        base.model_copy(update={"key": "x|none|Z|2", "throttled": True, "decode_tps": 1e6}),
    ]
    assert row_stats(fast + fast_hot).decode_tps_median == stats.decode_tps_median
    assert stats.engine_rss_peak_mb == max(r.engine_rss_mb for r in fast if r.engine_rss_mb)
    card = build_scorecard(
        data.pack, fast + fast_hot, [], [], judges=[], vote="majority", simulated=True
    ).model_dump(mode="json")
    (row,) = card["rows"]
    assert row["n_contended"] == stats.n_contended + 1
    assert row["engine_rss_peak_mb"] == stats.engine_rss_peak_mb
    assert row["decode_tps_median"] == statistics.median([v for v in timed if v is not None])


def test_compare_uses_the_engine_footprint(tmp_path: Path) -> None:
    rows, _ = compare_rows([engine_bundle(tmp_path)])
    by_model = {r.model: r for r in rows}
    fast, slow = by_model["m-fast"], by_model["m-slow"]
    assert fast.memory_source == "engine" and fast.memory_mb == fast.engine_rss_peak_mb
    assert slow.memory_source == "system" and slow.memory_mb == slow.peak_ram_mb
    assert slow.engine_rss_peak_mb is None


def test_variant_latency_difference_leaves_out_disturbed_cells(tmp_path: Path) -> None:
    from touchstone_ray.scoring.stats import compare_variants

    data = load_report_data(make_bundle(tmp_path, judged=False), judged=False)
    rs = [r for r in data.responses if r.model == "m-fast" and r.ok]
    clean = compare_variants("m-fast", "baseline", "none", [], rs)
    slow = [
        r.model_copy(update={"key": f"m-fast|none|Z|{i}", "e2e_s": 99.0, **flag})
        for i, flag in enumerate(({"host_contended": True}, {"throttled": True}) * 3)
        for r in rs[:1]
    ]
    slow = [s.model_copy(update={"variant": "none", "is_cold_start": False}) for s in slow]
    assert compare_variants("m-fast", "baseline", "none", [], rs + slow).e2e_median_diff_s == (
        clean.e2e_median_diff_s
    )


def test_written_report_carries_the_footprint(tmp_path: Path) -> None:
    from touchstone_ray.report import write_report

    root = engine_bundle(tmp_path, models_per_host=2)
    md_path, html_path = write_report(root, unjudged=True)
    md, html = md_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")
    for text in (md, html):
        assert "Engine-RSS-Peak MB" in text and "PID 4242 (per Port)" in text
        assert "Mehrere Modelle je Host" not in text  # one model on each host here
    charts = root / "rating-task-charts"  # unjudged: the rating task's charts
    assert "Engine-RSS" in (charts / "memory-gpu-a.svg").read_text(encoding="utf-8")
    assert "Engine-RSS" not in (charts / "memory-local.svg").read_text(encoding="utf-8")
