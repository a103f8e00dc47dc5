"""The readers and writers of the bundle's file families on real files: response shards,
host samples, the event log and a judge's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from touchstone_ray.bundle import (
    JudgeFiles,
    Layout,
    ResponseShards,
    judge_ids,
    read_events,
    read_host_samples,
)
from touchstone_ray.storage import JsonlWriter


def _line(**fields: object) -> bytes:
    return (json.dumps(fields) + "\n").encode()


def test_shards_scan_repairs_a_torn_tail_and_dedupes(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.responses_dir.mkdir()
    lay.shard("m").write_bytes(
        _line(key="a", ok=False, n_samples=None)
        + _line(ok=True, key="a", n_samples=3)  # key not first: still read
        + _line(key="b", ok=False, n_samples=None)
        + b'{"key": "c", "ok": tr'
    )
    shards = ResponseShards(lay)
    scan = shards.scan(repair=True)
    assert (scan.ok_keys, scan.error_keys, scan.n_lines, scan.torn_bytes) == ({"a"}, {"b"}, 3, 21)
    assert (tmp_path / "responses" / "m.jsonl.torn").read_bytes() == b'{"key": "c", "ok": tr\n'
    assert [(r["key"], r["ok"]) for r in shards.records()] == [("a", True), ("b", False)]
    assert shards.unfinalized_keys() == {"b"}


def test_shard_writer_appends_one_line_per_record(tmp_path: Path) -> None:
    shards = ResponseShards(Layout(tmp_path), "points")
    with shards.writer("qwen3:8b") as w:
        w.write({"key": "k1", "ok": True})
        w.write({"key": "k2", "ok": True})
    assert (tmp_path / "points" / "qwen3_8b.jsonl").read_text() == (
        '{"key":"k1","ok":true}\n{"key":"k2","ok":true}\n'
    )


def test_host_samples_one_reader_sorted_and_tolerant(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    with JsonlWriter(lay.host("b")) as w:
        w.write({"ts": 2.0, "host": "b"})
        w.write({"ts": 1.0, "host": "b", "sys_used_mb": 10.0})
        w.write({"ts": "soon", "host": "b"})
    with JsonlWriter(lay.host("a")) as w:
        w.write({"ts": 5.0, "host": "a"})
    with pytest.warns(UserWarning, match=r"b\.jsonl: skipped a bad HostSample \(1 errors\)"):
        got = read_host_samples(lay)
    assert list(got) == ["a", "b"]
    assert [(s.ts, s.sys_used_mb) for s in got["b"]] == [(1.0, 10.0), (2.0, None)]


def test_events_read_in_order_and_missing_is_empty(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    assert read_events(lay) == []
    lay.events.write_bytes(_line(event="run_start", ts=1.0) + _line(event="run_done", ts=2.0))
    assert [e["event"] for e in read_events(lay)] == ["run_start", "run_done"]


def test_judge_files_keep_the_last_record_per_key_and_row(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    files = JudgeFiles(lay, "j2")
    files.append("verdicts", {"key": "k", "score": 2})
    files.append("verdicts", {"key": "k", "score": 4})
    files.append("verdicts", {"score": 1})  # no key: not a verdict of a cell
    files.append("reports", {"model": "m", "variant": "v", "dim_scores": {"Q1": 2}})
    files.append("reports", {"model": "m", "variant": "v", "dim_scores": {"Q1": 5}})
    files.append("calibration", {"key": "calibration|v|A1|0", "score": 3})
    files.close()
    other = JudgeFiles(lay, "j1")
    other.append("verdicts", {"key": "x"})
    other.close()
    assert files.verdicts() == {"k": {"key": "k", "score": 4}}
    assert files.reports() == {("m", "v"): {"model": "m", "variant": "v", "dim_scores": {"Q1": 5}}}
    assert list(files.calibration()) == ["calibration|v|A1|0"]
    assert judge_ids(lay) == ["j1", "j2"]
    assert lay.verdicts("j2").read_text().count("\n") == 3
