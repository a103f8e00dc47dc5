"""``compare`` with a perf bundle it cannot use: one line naming the bundle and what is
wrong, exit code 2, and the bundle left as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def perf_bundle(tmp_path: Path, summary: str | None) -> Path:
    root = tmp_path / "2026-01-04_030000_perf_speed"
    (root / "points").mkdir(parents=True)
    manifest = {"schema_version": 1, "kind": "perf", "models": [], "status": "done"}
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    if summary is not None:
        (root / "summary.json").write_text(summary, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("summary", "reason"),
    [
        (None, "summary.json is missing or unreadable ([Errno 2] No such file or directory: "),
        ("[1, 2]", "summary.json is not a JSON object"),
        ('{"points": [', "summary.json is missing or unreadable (Expecting value: "),
    ],
)
def test_unusable_perf_bundle_is_one_line_exit_2(
    tmp_path: Path, summary: str | None, reason: str
) -> None:
    root = perf_bundle(tmp_path, summary)
    before = sorted((p.name, p.read_bytes()) for p in root.rglob("*") if p.is_file())
    done = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "compare", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {root}: {reason}")
    assert sorted((p.name, p.read_bytes()) for p in root.rglob("*") if p.is_file()) == before
