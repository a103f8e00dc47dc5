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
    ShardFolder,
    StoredReport,
    StoredVerdict,
    is_current,
    judge_ids,
    read_events,
    read_host_samples,
    record_extras,
)
from touchstone_ray.records import HolisticReport, Verdict
from touchstone_ray.storage import JsonlWriter, to_json_line


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
    shards = ResponseShards(Layout(tmp_path), ShardFolder.POINTS)
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


def _verdict(key: str, score: int | None, **extra: object) -> dict[str, object]:
    model, variant, prompt, repeat = key.split("|")
    record = {"key": key, "model": model, "variant": variant, "prompt_id": prompt,
              "repeat": int(repeat), "category": prompt[0], "judge": "j2", "score": score,
              "status": "scored"}  # fmt: skip
    return {**record, **extra}


def _report(q1: int, **extra: object) -> dict[str, object]:
    return {"model": "m", "variant": "v", "judge": "j2", "dim_scores": {"Q1": q1}, **extra}


def test_judge_files_keep_the_last_record_per_key_and_row(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    files = JudgeFiles(lay, "j2")
    files.append("verdicts", _verdict("m|v|A1|1", 2))
    files.append("verdicts", _verdict("m|v|A1|1", 4))
    files.append("reports", _report(2))
    files.append("reports", _report(5))
    files.append("calibration", _verdict("calibration|v|A1|0", 3))
    files.close()
    other = JudgeFiles(lay, "j1")
    other.append("verdicts", _verdict("m|v|B1|1", 1))
    other.close()
    assert {k: v.score for k, v in files.verdicts().items()} == {"m|v|A1|1": 4}
    assert [len(h) for h in files.stored_verdicts().values()] == [2]
    assert {row: r.dim_scores for row, r in files.reports().items()} == {("m", "v"): {"Q1": 5}}
    assert list(files.calibration()) == ["calibration|v|A1|0"]
    assert judge_ids(lay) == ["j1", "j2"]
    assert lay.verdicts("j2").read_text().count("\n") == 2


def test_stored_records_read_typed_and_give_back_the_line_they_came_from(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    files = JudgeFiles(lay, "j2")
    verdict = _verdict("m|v|A1|1", 4, **record_extras(
        cache_key="c1", judge_model="qwen3:8b", error=None, call_failed=False, n_calls=2
    ), repeat_scores=[4, 5, 4], score_spread=1, added_later={"kept": True})  # fmt: skip
    report = _report(5, missing={}, raw="{}", cache_key="c2", judge_model="qwen3:8b")
    files.write_verdict(verdict)
    files.write_report(report)
    files.close()
    stored = files.verdicts()["m|v|A1|1"]
    assert isinstance(stored, StoredVerdict) and (stored.cache_key, stored.n_calls) == ("c1", 2)
    assert (stored.repeat_scores, stored.score_spread) == ([4, 5, 4], 1)
    assert stored.to_record() == verdict and list(stored.to_record()) == list(verdict)
    assert to_json_line(stored.to_record()).encode() == lay.verdicts("j2").read_bytes()
    assert stored.contract() == Verdict.model_validate(verdict)
    assert type(stored.contract()) is Verdict
    kept = files.reports()[("m", "v")]
    assert isinstance(kept, StoredReport) and kept.to_record() == report
    assert kept.contract() == HolisticReport.model_validate(report)
    assert is_current(stored, "c1") and not is_current(stored, "c2")


def test_an_invalid_judge_record_is_left_out_with_one_warning(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    files = JudgeFiles(lay, "j2")
    files.append("verdicts", _verdict("m|v|A1|1", 4))
    files.append("verdicts", {"key": "m|v|A1|1", "score": 1})  # no model, variant …
    files.append("verdicts", _verdict("m|v|A2|1", 9, status="maybe"))
    files.close()
    path = lay.verdicts("j2")
    with pytest.warns(UserWarning) as caught:
        got = files.verdicts()
    assert {k: v.score for k, v in got.items()} == {"m|v|A1|1": 4}
    assert [str(w.message) for w in caught] == [
        f"{path}: skipped 2 records that are not a StoredVerdict (first: model: Field required)"
    ]
