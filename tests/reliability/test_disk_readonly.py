"""The bundle's disk turns read-only mid-run: a clean abort (exit 1, one error line, no
traceback), every record written before intact, and a resume from a writable copy completes.

The bundle lives on a small ext4 image that fails on cue (:mod:`disk_image`); the mount and
its loop device are removed after each test. Needs root (skipped otherwise).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from disk_image import ext4_mount, turn_read_only
from eval_helpers import all_keys, cli, shard_lines, snapshot, tiny_pack, write_yaml
from ray_env import RayCluster
from rel_helpers import fault_when, line_count, read_log, start_cli

from touchstone_ray.sim import SimConfig, SimServer

pytestmark = pytest.mark.slow

MODELS = ("da", "db")
JUDGE_MODEL = "judge-d"


@pytest.fixture(scope="module")
def sims() -> Iterator[tuple[str, str]]:
    answers = SimConfig(ttft_ms=100, tps=50, answer_tokens=10, models=list(MODELS))
    judge = SimConfig(ttft_ms=100, tps=200, models=[JUDGE_MODEL])
    with SimServer(answers) as a, SimServer(judge) as j:
        assert a.url is not None and j.url is not None
        yield a.url, j.url


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if "error" in line.lower()]


def _intact(before: dict[Path, bytes]) -> None:
    """Every byte written before the disk turned read-only is still there, line for line."""
    for path, data in before.items():
        assert path.read_bytes().startswith(data), path
        for line in data.splitlines():
            json.loads(line)


DISK_ERRORS = ("Read-only file system", "Input/output error")
"""What a write gets once ext4 has taken its error: EROFS after the remount, EIO for a write
already on its way when the error hit (timing: seen on a loaded machine)."""


def abort_lines(bundle: Path, command: str) -> list[list[str]]:
    """The one error line of a run whose bundle's disk failed, for each error the kernel may
    give the failing write (:data:`DISK_ERRORS`)."""
    return [
        [
            f"error: {bundle}: cannot write the bundle ({error}); {command} aborted, "
            "every record written before is intact"
        ]
        for error in DISK_ERRORS
    ]


def fail_disk_after(
    args: list[str], log: Path, mnt: Path, files: Callable[[], list[Path]], n: int
) -> tuple[dict[Path, bytes], list[str]]:
    """Start the CLI with ``args``, turn ``mnt`` read-only once ``files()`` hold ``n`` lines,
    and assert the run then ends with exit 1, no traceback; returns the bytes written before
    (:func:`_intact` checks them) and its error lines."""
    before: dict[Path, bytes] = {}

    def fail() -> None:
        before.update({p: p.read_bytes() for p in files()})
        turn_read_only(mnt)

    proc = start_cli(args, log)
    fault_when(proc, lambda: line_count(files()) >= n, f"{n} lines", log, fail, timeout_s=90)
    out, err = read_log(log)
    assert proc.returncode == 1, (out, err)
    return before, _error_lines(err)


def test_eval_and_judge_abort_cleanly_and_resume_from_a_copy(
    rc: RayCluster, sims: tuple[str, str], tmp_path: Path
) -> None:
    answers_url, judge_url = sims
    pack_data = tiny_pack(6, pack_id="disk")  # 24 cells for two models
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    models = [
        {"id": m, "engine": "openai", "base_url": f"{answers_url}/v1", "concurrency": 2}
        for m in MODELS
    ]
    fleet = write_yaml(
        tmp_path / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": models,
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )
    judge = {"id": "jd", "engine": "openai", "base_url": f"{judge_url}/v1", "model": JUDGE_MODEL}
    judge_config = write_yaml(tmp_path / "judge.yaml", {"judges": [judge]})
    args = ["--pack", str(pack), "--config", str(fleet), "--address", rc.address]
    keys = all_keys(pack_data, list(MODELS))
    safe = tmp_path / "safe"

    # --- eval: the disk fails after 6 records -----------------------------------------
    with ext4_mount(tmp_path, "evaldisk") as mnt:

        def shards() -> list[Path]:
            return sorted(mnt.glob("runs/*/responses/*.jsonl"))

        eval_args = ["eval", *args, "--out", str(mnt / "runs")]
        before, errors = fail_disk_after(eval_args, tmp_path / "eval", mnt, shards, 6)
        bundle = shards()[0].parents[1]
        assert errors in abort_lines(bundle, "run")
        _intact(before)
        assert sum(len(d.splitlines()) for d in before.values()) >= 6
        # a resume on the broken disk refuses at once, and changes nothing
        kept = snapshot(bundle)
        again = cli("eval", *args, "--resume", str(bundle), timeout=120)
        assert again.returncode == 1, (again.stdout, again.stderr)
        assert _error_lines(again.stderr) == abort_lines(bundle, "run")[0], again.stderr
        assert snapshot(bundle) == kept
        shutil.copytree(bundle, safe / bundle.name)  # what a user does: copy it off
    bundle = safe / bundle.name

    resumed = cli("eval", *args, "--resume", str(bundle), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    ok = [r for r in shard_lines(bundle) if r["ok"]]
    assert sorted(r["key"] for r in ok) == sorted(keys)

    # --- judge: the disk fails after 5 verdicts ---------------------------------------
    with ext4_mount(tmp_path, "judgedisk") as mnt:
        copy = mnt / bundle.name
        shutil.copytree(bundle, copy)
        verdicts = copy / "judgements" / "jd" / "verdicts.jsonl"
        jargs = ["--judge-config", str(judge_config), "--address", rc.address]
        judge_args = ["judge", "--bundle", str(copy), *jargs]
        before, errors = fail_disk_after(judge_args, tmp_path / "judge", mnt, lambda: [verdicts], 5)
        assert errors in abort_lines(copy, "judge")
        _intact(before)
        judged = safe / "judged"
        shutil.copytree(copy, judged)

    rerun = cli("judge", "--bundle", str(judged), *jargs, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert (judged / "scorecard.json").exists()


def test_perf_aborts_cleanly_when_the_disk_turns_read_only(
    rc: RayCluster, sims: tuple[str, str], tmp_path: Path
) -> None:
    """Two models × 4 points of 4 requests; the disk fails after the first point's records:
    exit 1, the one line, no traceback, the points written before intact."""
    answers_url, _ = sims
    models = [{"id": m, "engine": "openai", "base_url": f"{answers_url}/v1"} for m in MODELS]
    fleet = write_yaml(
        tmp_path / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": models,
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )
    with ext4_mount(tmp_path, "perfdisk") as mnt:
        args = ["perf", "--config", str(fleet), "--address", rc.address, "--out", str(mnt)]
        args += ["--contexts", "64,128", "--concurrency", "1,2", "--runs", "4"]
        args += ["--output-tokens", "8"]

        def shards() -> list[Path]:
            return sorted(mnt.glob("*/points/*.jsonl"))

        before, errors = fail_disk_after(args, tmp_path / "perf", mnt, shards, 4)
        assert errors in abort_lines(shards()[0].parents[1], "run")
        _intact(before)
        assert line_count(shards()) < 2 * 4 * 4  # it stopped: not every point was written
