"""The bundle readers the overview uses (no browser): finding bundles, the run state with its
liveness rule, the kind, and the resume command."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from ui_helpers import T0, crashed_bundle, make_bundle, perf_bundle

from touchstone_ray.bundle import STALE_AFTER_S, Bundle, find_bundles
from touchstone_ray.errors import BundleError
from touchstone_ray.ui.overview import summarize


def _set_status(root: Path, status: str) -> None:
    path = root / "bundle.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["status"] = status
    path.write_text(json.dumps(data), encoding="utf-8")


def test_find_bundles_recurses_but_not_into_a_bundle(tmp_path: Path) -> None:
    a = make_bundle(tmp_path / "x" / "y")
    b = perf_bundle(tmp_path, "2026-01-04_030000_perf_speed")
    (a / "nested").mkdir()
    (a / "nested" / "bundle.json").write_text("{}", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "bundle.json").write_text("{}", encoding="utf-8")
    assert find_bundles(tmp_path) == [b, a]


def test_run_state_by_manifest_files_and_scorecard(tmp_path: Path) -> None:
    judged = Bundle(make_bundle(tmp_path / "j"))
    assert judged.run_state() == "judged"
    plain = Bundle(make_bundle(tmp_path / "p", judged=False))
    assert plain.run_state() == "done"
    _set_status(plain.root, "failed")
    assert plain.run_state() == "failed"
    _set_status(plain.root, "running")
    assert plain.run_state() == "running"
    last = plain.last_write()
    assert last is not None
    assert plain.run_state(now=last + STALE_AFTER_S - 1) == "running"
    assert plain.run_state(now=last + STALE_AFTER_S + 1) == "crashed"
    crashed = Bundle(crashed_bundle(tmp_path / "c", "2026-01-01_030000_eval_mini"))
    assert crashed.run_state() == "crashed"
    # one host sample appended makes it live again
    with open(crashed.root / "hosts" / "gpu-a.jsonl", "a", encoding="utf-8") as fh:
        fh.write("\n")
    assert crashed.run_state() == "running"


def test_last_write_is_the_newest_live_file(tmp_path: Path) -> None:
    b = Bundle(make_bundle(tmp_path, judged=False))
    old = time.time() - 1000.0
    for path in b.root.rglob("*"):
        os.utime(path, (old, old))
    newer = old + 500.0
    os.utime(b.root / "events.jsonl", (newer, newer))
    assert b.last_write() == newer
    os.utime(b.root / "pack.yaml", (old + 900.0, old + 900.0))  # not a live file
    assert b.last_write() == newer


def test_kind_and_resume_command(tmp_path: Path) -> None:
    perf = Bundle(perf_bundle(tmp_path, "2026-01-04_030000_perf_speed"))
    assert perf.kind() == "perf"
    assert perf.resume_command() == (
        f"touchstone-ray perf --config {perf.root}/config.yaml --resume {perf.root}"
    )
    tools_root = tmp_path / "2026-01-05_030000_tools_werkzeuge"
    tools_root.mkdir()
    (tools_root / "bundle.json").write_text('{"kind": "tools"}', encoding="utf-8")
    tools = Bundle(tools_root)
    assert tools.kind() == "tools"
    assert tools.resume_command() == (
        f"touchstone-ray tools --pack {tools_root}/pack.yaml --config {tools_root}/config.yaml "
        f"--resume {tools_root}"
    )
    ev = Bundle(make_bundle(tmp_path / "a b", judged=False))
    assert ev.kind() == "eval"
    assert ev.resume_command() == (
        f"touchstone-ray eval --pack '{ev.root}/pack.yaml' --config '{ev.root}/config.yaml' "
        f"--resume '{ev.root}'"
    )


def test_unreadable_manifest_is_a_row_with_the_error(tmp_path: Path) -> None:
    root = tmp_path / "2026-01-09_000000_eval_bad"
    root.mkdir()
    (root / "bundle.json").write_text('{"status": "run', encoding="utf-8")
    with pytest.raises(BundleError):
        Bundle(root).read_manifest()
    row = summarize(root, tmp_path)
    assert (row.state, row.kind) == ("unreadable", "?")
    assert row.error is not None
    assert row.error.startswith(f"{root}/bundle.json: not valid JSON (")


def test_eval_eta_after_a_resume_counts_only_this_runs_rate(tmp_path: Path) -> None:
    """A resumed run: m-slow kept 2 of its 6 cells from the first run (ended before the crash)
    and wrote 2 more since the resume; its ETA is 2 cells left at this run's rate (2 cells in
    the 20 s since its model started again), not the whole bundle's."""
    from touchstone_ray.ui.live import live_state

    root = make_bundle(tmp_path, judged=False)
    resumed = T0 + 1000.0
    shard = root / "responses" / "m-slow.jsonl"
    kept = [json.loads(x) for x in shard.read_text(encoding="utf-8").splitlines()[:4]]
    for rec in kept[2:]:  # written by the resumed run
        rec["t_start"], rec["t_end"] = resumed + 8.0, resumed + 12.0
    shard.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    with open(root / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": "run_start", "ts": resumed}) + "\n")
        event = {"event": "model_start", "ts": resumed + 5.0, "host": "local", "model": "m-slow"}
        fh.write(json.dumps(event) + "\n")
    manifest = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    manifest.update(status="running", finished_at=None, resumed_at=resumed)
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    now = resumed + 25.0
    os.utime(shard, (now, now))  # written a moment ago: the run is live
    hosts = {hp.host: hp for hp in live_state(root, now=now).hosts}
    slow = hosts["local"]
    assert (slow.planned, slow.ok + slow.failed, slow.current_model) == (6, 4, "m-slow")
    assert slow.eta_s == pytest.approx(2 / (2 / 20.0))
    assert hosts["gpu-a"].eta_s is None  # all 6 cells done
