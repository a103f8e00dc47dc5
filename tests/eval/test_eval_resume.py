"""Crash and resume on a real cluster: a SIGKILLed CLI run resumed, torn and malformed shard
lines, and resumes refused for a changed pack or generation setting.

One cluster (head + gpu-a + gpu-b) for the module; one finished bundle on it is copied by the
tests that damage a bundle.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import (
    REPO,
    all_keys,
    cli,
    count_lines,
    run,
    shard_lines,
    sim_keys,
    sim_stats,
    snapshot,
    tiny_pack,
    warmup_key,
    write_yaml,
)
from ray_env import RayCluster

from touchstone_ray.bundle import Bundle
from touchstone_ray.bundle._responses import _prefix_key_and_ok
from touchstone_ray.eval.driver import QUEUE_AHEAD
from touchstone_ray.pack import pack_sha256
from touchstone_ray.sim import SimConfig, SimServer
from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.slow

FAST = {"ttft_ms": 5, "tps": 2000, "answer_tokens": 20}


RAY_HOSTS = ["gpu-a", "gpu-b"]
"""A worker per host label in this module's ``rc`` (tests/conftest.py)."""


@dataclass
class Base:
    """A finished bundle (models ra on gpu-a, rb on gpu-b; 8 cells each) and its inputs."""

    pack_data: dict[str, Any]
    pack: Path
    config_data: dict[str, Any]
    config: Path
    bundle: Path

    def copy(self, dest: Path) -> Path:
        """A copy of the bundle under ``dest`` (same folder name)."""
        target = dest / self.bundle.name
        shutil.copytree(self.bundle, target)
        return target


@pytest.fixture(scope="module")
def base(rc: RayCluster, tmp_path_factory: pytest.TempPathFactory) -> Base:
    tmp = tmp_path_factory.mktemp("base")
    pack_data = tiny_pack(4)
    pack = write_yaml(tmp / "pack.yaml", pack_data)
    config_data = {
        "ray": {"include_dashboard": False},
        "hosts": {"gpu-a": {"label": "gpu-a"}, "gpu-b": {"label": "gpu-b"}},
        "models": [
            {"id": "ra", "engine": "simulated", "host": "gpu-a", "concurrency": 2, "sim": FAST},
            {"id": "rb", "engine": "simulated", "host": "gpu-b", "concurrency": 2, "sim": FAST},
        ],
        "monitor": {"interval_s": 0.2, "gpu": "off"},
    }
    config = write_yaml(tmp / "fleet.yaml", config_data)
    outcome, printed = run(pack, config, out=tmp / "runs")
    assert outcome.exit_code == 0 and outcome.bundle is not None, printed
    assert len(shard_lines(outcome.bundle)) == 16
    return Base(pack_data, pack, config_data, config, outcome.bundle)


def _ok_count(bundle: Path) -> Counter[str]:
    return Counter(r["key"] for r in shard_lines(bundle) if r["ok"])


# --- crash + resume ----------------------------------------------------------------------
def test_sigkilled_run_resumes_only_unfinished_cells(rc: RayCluster, tmp_path: Path) -> None:
    pack_data = tiny_pack(6)  # 12 cells
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    out = tmp_path / "runs"
    with SimServer(SimConfig(ttft_ms=100, tps=40, answer_tokens=20)) as sim:  # ~0.6 s/cell
        assert sim.url is not None
        config = write_yaml(
            tmp_path / "fleet.yaml",
            {
                "ray": {"include_dashboard": False},
                "models": [
                    {"id": "cm", "engine": "openai", "base_url": f"{sim.url}/v1", "concurrency": 2}
                ],
                "monitor": {"interval_s": 0.2, "gpu": "off"},
            },
        )
        args = ["--pack", str(pack), "--config", str(config), "--address", rc.address]
        with open(tmp_path / "run1.out", "w") as stdout, open(tmp_path / "run1.err", "w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "touchstone_ray.cli", "eval", *args, "--out", str(out)],
                stdout=stdout,
                stderr=err,
                env=dict(os.environ),
                cwd=REPO,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 90
            shard: Path | None = None
            while time.monotonic() < deadline and proc.poll() is None:
                found = list(out.glob("*/responses/cm.jsonl"))
                if found and count_lines(found[0]) >= 3:
                    shard = found[0]
                    break
                time.sleep(0.02)
            assert proc.poll() is None, (tmp_path / "run1.err").read_text()
            assert shard is not None, "no records within 90 s"
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        bundle = shard.parents[1]
        before = read_jsonl(shard)
        ok_before = {r["key"] for r in before.records if r["ok"]}
        assert len(ok_before) >= 3 and len(before.records) < 12
        assert json.loads((bundle / "bundle.json").read_text())["status"] == "running"

        resumed = cli("eval", *args, "--resume", str(bundle))
        stats = sim_stats(sim.url)

    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    assert lines[0] == f"{len(ok_before)} reused, {12 - len(ok_before)} to run"
    assert lines[-1] == str(bundle)
    # final: the full matrix, exactly one ok record per key
    ok = _ok_count(bundle)
    assert set(ok) == all_keys(pack_data, ["cm"])
    assert set(ok.values()) == {1}
    # from the simulator's counters: only unfinished cells were requested again
    by_key = stats["requests_by_key"]
    assert by_key[warmup_key("cm")] == 2  # one warm-up per run
    cell_counts = {cell: by_key.get(k, 0) for k, cell in sim_keys(pack_data, "cm").items()}
    assert set(cell_counts.values()) <= {1, 2}
    assert all(cell_counts[k] == 1 for k in ok_before)
    twice = {k for k, n in cell_counts.items() if n == 2}
    # at most `concurrency` cells in flight and QUEUE_AHEAD queued in the orphaned actor
    assert len(twice) <= 2 + QUEUE_AHEAD
    assert stats["requests"]["cm"] == 12 + len(twice) + 2
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["status"] == "done" and manifest.get("resumed_at")
    events = [json.loads(line)["event"] for line in (bundle / "events.jsonl").open()]
    assert events.count("run_start") == 2 and events.count("run_done") == 1


def test_first_new_cell_is_sent_before_the_last_shard_is_read(
    rc: RayCluster, base: Base, tmp_path: Path
) -> None:
    """Per-shard start, observed as an order, not a time: the bundle's last shard is a named
    pipe nobody writes to, so the scan cannot finish reading it. ra's missing cell is run and
    its record written all the same (its own shard was read first); only then does the test
    open the pipe (and take its name away, so finalize never meets it), and the run ends."""
    bundle = base.copy(tmp_path)
    shard = bundle / "responses" / "ra.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    cut_key = json.loads(lines[-1])["key"]
    shard.write_bytes(b"".join(lines[:-1]))
    pipe = bundle / "responses" / "zz.jsonl"  # a model this run does not plan: read last
    os.mkfifo(pipe)
    args = ["--pack", str(base.pack), "--config", str(base.config), "--address", rc.address]
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "touchstone_ray.cli", "eval", *args, "--resume", str(bundle)],
            stdout=out,
            stderr=err,
            env=dict(os.environ),
            cwd=REPO,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while count_lines(shard) < len(lines) and time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "err").read_text()
            time.sleep(0.05)
        assert count_lines(shard) == len(lines), "no new record while the last shard was unread"
        assert json.loads(shard.read_bytes().splitlines()[-1])["key"] == cut_key
        assert proc.poll() is None  # still waiting for the pipe's shard
        fd = -1
        while fd < 0 and time.monotonic() < deadline:
            try:  # the scan holds the pipe open for reading by now
                fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.05)
        assert fd >= 0, "the scan never opened the last shard"
        pipe.unlink()
        os.close(fd)  # the scan reads an empty shard and ends
        assert proc.wait(timeout=120) == 0, (tmp_path / "err").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    printed = (tmp_path / "out").read_text().splitlines()
    assert printed[0] == "15 reused, 1 to run" and printed[-1] == str(bundle)
    scans = [e for e in read_jsonl(bundle / "events.jsonl").records if e["event"] == "resume_scan"]
    assert [(s["shard"], s["lines"], s["ok"]) for s in scans[0]["shards"]] == [
        ("ra.jsonl", 7, 7),
        ("rb.jsonl", 8, 8),
        ("zz.jsonl", 0, 0),
    ]
    ok = _ok_count(bundle)
    assert set(ok) == all_keys(base.pack_data, ["ra", "rb"]) and set(ok.values()) == {1}


# --- torn and malformed lines --------------------------------------------------------------
def test_torn_last_line_is_cut_into_torn_file_and_completed(base: Base, tmp_path: Path) -> None:
    bundle = base.copy(tmp_path)
    shard = bundle / "responses" / "ra.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    last = lines[-1]
    fragment = last[: len(last) // 2]
    cut_key = json.loads(last)["key"]
    shard.write_bytes(b"".join(lines[:-1]) + fragment)

    outcome, printed = run(base.pack, base.config, resume=bundle)

    assert outcome.exit_code == 0, printed
    assert printed.splitlines()[0] == "15 reused, 1 to run"
    assert (bundle / "responses" / "ra.jsonl.torn").read_bytes() == fragment + b"\n"
    assert shard.read_bytes().startswith(b"".join(lines[:-1]))
    ok = _ok_count(bundle)  # strict parse: the shard ends cleanly now
    assert set(ok) == all_keys(base.pack_data, ["ra", "rb"]) and set(ok.values()) == {1}
    new = json.loads(shard.read_bytes().splitlines()[-1])
    assert new["key"] == cut_key and new["ok"] and outcome.n_ok == 1


def test_malformed_middle_line_is_quarantined_and_the_rest_read(base: Base, tmp_path: Path) -> None:
    bundle = base.copy(tmp_path)
    shard = bundle / "responses" / "rb.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    broken_key = json.loads(lines[2])["key"]
    bad = b'{"key": "' + broken_key.encode() + b'", "ok": tru\n'
    shard.write_bytes(b"".join([*lines[:2], bad, *lines[3:]]))

    with pytest.warns(UserWarning, match=r"rb\.jsonl:3: malformed line quarantined"):
        outcome, printed = run(base.pack, base.config, resume=bundle)

    assert outcome.exit_code == 0, printed
    assert printed.splitlines()[0] == "15 reused, 1 to run"
    after = shard.read_bytes().splitlines(keepends=True)
    assert after[2] == bad  # left in place, byte for byte
    with pytest.warns(UserWarning, match="malformed line quarantined"):
        scan = read_jsonl(shard)
    assert scan.malformed == [3] and scan.torn_tail is None
    assert len(scan.records) == 8  # 7 good old lines + the re-run cell
    assert scan.records[-1]["key"] == broken_key and scan.records[-1]["ok"]
    assert Counter(r["key"] for r in scan.records if r["ok"])[broken_key] == 1
    assert not (bundle / "responses" / "rb.jsonl.torn").exists()


def test_resume_of_a_complete_bundle_runs_nothing(base: Base, tmp_path: Path) -> None:
    bundle = base.copy(tmp_path)
    shards = {p.name: p.read_bytes() for p in (bundle / "responses").iterdir()}
    outcome, printed = run(base.pack, base.config, resume=bundle)
    assert outcome.exit_code == 0, printed
    assert printed.splitlines()[0] == "16 reused, 0 to run"
    assert outcome.n_ok == 0 and outcome.n_reused == 16
    assert {p.name: p.read_bytes() for p in (bundle / "responses").iterdir()} == shards


def test_dry_run_resume_changes_nothing(base: Base, tmp_path: Path) -> None:
    bundle = base.copy(tmp_path)
    shard = bundle / "responses" / "ra.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])  # torn tail: 7 ok + 1 torn
    before = snapshot(bundle)
    outcome, printed = run(base.pack, base.config, resume=bundle, dry_run=True)
    assert outcome.bundle is None
    assert printed.splitlines()[-1] == "1 cell on 2 hosts"
    assert snapshot(bundle) == before


def test_prefix_scan_of_a_real_bundle_with_failures_equals_the_full_parse(
    base: Base, tmp_path: Path
) -> None:
    """A real run with failures (ra's first 3 requests get HTTP 500, one attempt each), its
    shards finalized, one torn: the prefix scan finds what a full parse finds, every
    complete line took the prefix path, and the resume runs exactly the rest."""
    config_data = json.loads(json.dumps(base.config_data))
    config_data["scheduling"] = {"max_attempts": 1, "warmup": False}
    config_data["models"][0]["sim"] = {**FAST, "fail_first_n": 3}
    config = write_yaml(tmp_path / "fleet.yaml", config_data)
    outcome, printed = run(base.pack, config, out=tmp_path / "runs")
    assert (outcome.n_ok, outcome.n_failed) == (13, 3), printed
    assert outcome.bundle is not None
    bundle = outcome.bundle
    rb = bundle / "responses" / "rb.jsonl"
    lines = rb.read_bytes().splitlines(keepends=True)
    torn_key = json.loads(lines[-1])["key"]
    rb.write_bytes(b"".join(lines[:-1]) + lines[-1][:30])

    complete = [
        line
        for shard in sorted((bundle / "responses").glob("*.jsonl"))
        for line in shard.read_bytes().splitlines(keepends=True)
        if line.endswith(b"\n")
    ]
    assert len(complete) == 15
    assert [_prefix_key_and_ok(line) for line in complete] == [
        (json.loads(line)["key"], json.loads(line)["ok"]) for line in complete
    ]
    parsed = [json.loads(line) for line in complete]
    want_ok = {r["key"] for r in parsed if r["ok"]}
    want_err = {r["key"] for r in parsed if not r["ok"]} - want_ok
    scan = Bundle.open(bundle).scan_responses()
    assert (scan.ok_keys, scan.error_keys, scan.n_lines) == (want_ok, want_err, 15)
    assert len(want_ok) == 12 and len(want_err) == 3 and torn_key not in want_ok

    outcome, printed = run(base.pack, config, resume=bundle)
    assert printed.splitlines()[0] == "12 reused, 4 to run"
    # a new client actor's simulator counts from 0 again: the 3 re-run cells get the 500s
    assert (outcome.n_ok, outcome.n_failed) == (1, 3), printed
    resumed = [
        e for e in read_jsonl(bundle / "events.jsonl").records if e["event"] == "resume_scan"
    ]
    assert len(resumed) == 1 and (resumed[0]["lines"], resumed[0]["ok"]) == (15, 12)
    spans = resumed[0]
    assert spans["scan_end"] - spans["scan_start"] == pytest.approx(spans["scan_s"], abs=1e-3)
    assert spans["ray_start_end"] - spans["ray_start_start"] == pytest.approx(
        spans["ray_start_s"], abs=1e-3
    )


# --- refused resumes -----------------------------------------------------------------------
def _damage_tail(bundle: Path) -> None:
    """Give a shard a torn tail, which a resume that went ahead would cut."""
    with open(bundle / "responses" / "ra.jsonl", "ab") as fh:
        fh.write(b'{"key": "ra|none|A1|1", "o')


def test_changed_pack_is_refused_and_nothing_changes(base: Base, tmp_path: Path) -> None:
    bundle = base.copy(tmp_path)
    _damage_tail(bundle)
    changed = tmp_path / "pack-changed.yaml"
    text = base.pack.read_text(encoding="utf-8")
    assert "Frage Nummer 2:" in text
    changed.write_text(text.replace("Frage Nummer 2:", "Frage Nummer zwei:"), encoding="utf-8")
    before = snapshot(bundle)

    proc = cli(
        "eval", "--pack", str(changed), "--config", str(base.config), "--resume", str(bundle)
    )

    assert proc.returncode == 2
    frozen, new = pack_sha256(base.pack), pack_sha256(changed)
    assert proc.stderr.splitlines() == [
        f"error: {bundle}: pack {changed} (sha256 {new[:12]}) differs from the bundle's "
        f"pack.yaml (sha256 {frozen[:12]}); resume needs the same pack"
    ]
    assert proc.stdout == ""
    assert snapshot(bundle) == before


GENERATION = "resume needs the same generation settings"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"extra_body": {"think": False}},
            "model rb: extra_body changed since the bundle was started ({} → {'think': False}); "
            + GENERATION,
        ),
        (
            {"sim": {**FAST, "quality": 0.1}},
            f"model rb: sim changed since the bundle was started ({FAST!r} → "
            f"{ {**FAST, 'quality': 0.1}!r}); " + GENERATION,
        ),
        (
            {"id": "rb-renamed"},
            "model rb-renamed is not in this bundle (its models: ra, rb); resume with the "
            "bundle's config.yaml, or start a new run without --resume",
        ),
    ],
    ids=["extra_body", "sim", "new model"],
)
def test_a_changed_model_is_refused(
    base: Base, tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    bundle = base.copy(tmp_path)
    _damage_tail(bundle)
    data = json.loads(json.dumps(base.config_data))
    data["models"][1].update(change)
    config = write_yaml(tmp_path / "fleet-changed.yaml", data)
    before = snapshot(bundle)

    proc = cli("eval", "--pack", str(base.pack), "--config", str(config), "--resume", str(bundle))

    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"error: {bundle}: {reason}"]
    assert snapshot(bundle) == before
