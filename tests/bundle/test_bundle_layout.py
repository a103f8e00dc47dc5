"""The bundle layer's paths and manifest: every SPEC §7/§7b path from one Layout, and a
manifest that round-trips byte for byte and changes only through edit_manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from touchstone_ray.bundle import (
    Bundle,
    Layout,
    ShardFolder,
    edit_manifest,
    read_manifest,
    write_manifest,
)
from touchstone_ray.bundle import _manifest as manifest_module
from touchstone_ray.errors import BundleError
from touchstone_ray.perf.bundle import PerfBundle


def test_layout_knows_every_path() -> None:
    lay = Layout(Path("/b"))
    got = {
        "manifest": lay.manifest,
        "pack": lay.pack,
        "config": lay.config,
        "events": lay.events,
        "scorecard_json": lay.scorecard_json,
        "scorecard_md": lay.scorecard_md,
        "report_md": lay.report("md"),
        "report_html": lay.report("html"),
        "task_md": lay.report("md", "rating-task"),
        "charts": lay.charts_dir(),
        "export": lay.export_dir,
        "shard": lay.shard("qwen3:8b"),
        "point": lay.shard("qwen3:8b", ShardFolder.POINTS),
        "embed": lay.shard("qwen3:8b", ShardFolder.EMBED),
        "host": lay.host("gpu a"),
        "verdicts": lay.verdicts("j1"),
        "reports": lay.reports("j1"),
        "calibration": lay.calibration("j1"),
        "marker": lay.judge_marker("j1", "ingested.json"),
        "summary": lay.summary,
    }
    assert {k: str(v) for k, v in got.items()} == {
        "manifest": "/b/bundle.json",
        "pack": "/b/pack.yaml",
        "config": "/b/config.yaml",
        "events": "/b/events.jsonl",
        "scorecard_json": "/b/scorecard.json",
        "scorecard_md": "/b/scorecard.md",
        "report_md": "/b/report.md",
        "report_html": "/b/report.html",
        "task_md": "/b/rating-task.md",
        "charts": "/b/report-charts",
        "export": "/b/export",
        "shard": "/b/responses/qwen3_8b.jsonl",
        "point": "/b/points/qwen3_8b.jsonl",
        "embed": "/b/embed/qwen3_8b.jsonl",
        "host": "/b/hosts/gpu_a.jsonl",
        "verdicts": "/b/judgements/j1/verdicts.jsonl",
        "reports": "/b/judgements/j1/reports.jsonl",
        "calibration": "/b/judgements/j1/calibration.jsonl",
        "marker": "/b/judgements/j1/ingested.json",
        "summary": "/b/summary.json",
    }


def test_layout_lists_existing_files_sorted(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    for rel in ("responses/b.jsonl", "responses/a.jsonl", "hosts/h.jsonl", "responses/x.torn"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "judgements" / "zj").mkdir(parents=True)
    (tmp_path / "judgements" / "aj").mkdir()
    assert [p.name for p in lay.shards()] == ["a.jsonl", "b.jsonl"]
    assert [p.name for p in lay.host_files()] == ["h.jsonl"]
    assert [p.name for p in lay.judge_dirs()] == ["aj", "zj"]
    assert Layout(tmp_path / "none").judge_dirs() == []


# a manifest as written today: perf-style key order, an int timestamp, unknown keys
WRITTEN: dict[str, Any] = {
    "schema_version": 3,
    "kind": "perf",
    "config_name": "lab",
    "models": [{"model": "m", "id": "m", "engine": "simulated"}],
    "points": [{"model": "m", "host": "h", "context": 512, "concurrency": 1, "runs": 2}],
    "hosts": {},
    "started_at": 1700000000,
    "finished_at": None,
    "status": "running",
    "dashboard_url": "http://127.0.0.1:8265",
    "future": {"nested": [1, 2.5, "x"]},
}


def _write(path: Path, data: dict[str, Any]) -> bytes:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text.encode()


def test_manifest_round_trip_keeps_bytes_and_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    before = _write(path, WRITTEN)
    manifest = read_manifest(path)
    assert manifest.kind == "perf" and manifest.started_at == 1700000000
    assert isinstance(manifest.started_at, int)
    assert manifest.to_dict() == WRITTEN and list(manifest.to_dict()) == list(WRITTEN)
    write_manifest(path, manifest)
    assert path.read_bytes() == before


def test_edit_manifest_changes_one_field_in_place_and_appends_new_ones(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    _write(path, WRITTEN)
    with edit_manifest(path) as m:
        m.status = "done"
        m.resumed_at = 1700000100.5
        m.host("h").node_id = "n1"
    data = json.loads(path.read_text())
    assert list(data) == [*WRITTEN, "resumed_at"]
    assert data == {**WRITTEN, "status": "done", "hosts": {"h": {"node_id": "n1"}},
                    "resumed_at": 1700000100.5}  # fmt: skip


def test_edit_that_changes_nothing_does_not_write(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    _write(path, WRITTEN)
    before = (path.stat().st_ino, path.stat().st_mtime_ns)
    with edit_manifest(path) as m:
        m.status = "running"
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == before


def test_a_wrong_field_type_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    before = _write(path, WRITTEN)
    with pytest.raises(BundleError) as err, edit_manifest(path) as m:
        m.status = 5  # type: ignore[assignment]
    assert str(err.value) == f"{path}: status: Input should be a valid string"
    assert path.read_bytes() == before


def test_an_error_inside_the_edit_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    before = _write(path, WRITTEN)
    with pytest.raises(RuntimeError, match="boom"), edit_manifest(path) as m:
        m.status = "done"
        raise RuntimeError("boom")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "not a touchstone bundle manifest"),
        ('{"hosts": []}', "hosts: Input should be a valid dictionary"),
        ('{"status": "run', "not valid JSON (Unterminated string starting at: line 1 column 12"),
    ],
)
def test_unreadable_manifests_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bundle.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BundleError) as err:
        read_manifest(path)
    assert str(err.value).startswith(f"{path}: {message}")


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as err:
        read_manifest(tmp_path / "bundle.json")
    assert str(err.value) == f"{tmp_path}/bundle.json: missing; is this a bundle?"


def test_bundle_kinds_check_their_manifest(tmp_path: Path) -> None:
    _write(tmp_path / "bundle.json", WRITTEN)
    with pytest.raises(BundleError) as err:
        Bundle(tmp_path).update_manifest(status="done")
    assert str(err.value) == (
        f"{tmp_path}: a perf bundle (bundle.json has kind: perf); this command needs an eval bundle"
    )
    PerfBundle(tmp_path).update_manifest(status="done")
    assert Bundle(tmp_path).read_manifest().status == "done"
    assert Bundle(tmp_path).kind() == "perf"
    eval_like = {"pack": {"id": "p", "version": 1, "sha256": "ab"}, "status": "running"}
    _write(tmp_path / "bundle.json", eval_like)
    with pytest.raises(BundleError) as err:
        PerfBundle(tmp_path).manifest()
    assert str(err.value) == f"{tmp_path}: not a perf bundle (bundle.json has no kind: perf)"
    assert Bundle(tmp_path).manifest().to_dict() == eval_like


def test_manifest_documents_every_field_of_every_part() -> None:
    parts = [getattr(manifest_module, name) for name in manifest_module.__all__]
    models = [p for p in parts if isinstance(p, type) and issubclass(p, BaseModel)]
    undocumented = [
        f"{model.__name__}.{name}"
        for model in models
        for name, info in model.model_fields.items()
        if not info.description
    ]
    assert len(models) == 15 and undocumented == []
