"""``report --runs DIR``: every bundle below DIR rebuilt, one line per bundle (judged, rating
task, skipped, broken), exit 1 when one failed; and the flag rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_factories import make_bundle

from touchstone_ray.cli import main
from touchstone_ray.report import write_report


def test_runs_rebuilds_every_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    judged = make_bundle(runs, "2026-01-02_030000_eval_mini")
    task = make_bundle(runs / "older", "2026-01-01_030000_eval_mini", judged=False)
    write_report(task, "md", unjudged=True)
    plain = make_bundle(runs, "2026-01-03_030000_eval_mini", judged=False)
    broken = runs / "2026-01-04_030000_eval_broken"
    broken.mkdir()
    (broken / "bundle.json").write_text("{not json", encoding="utf-8")

    assert main(["report", "--runs", str(runs), "--format", "md"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        f"{judged}: report.md",
        f"{plain}: skipped (no scorecard and no rating task)",
        f"{broken}: error: " + lines[2].split(": error: ", 1)[1],
    ]
    assert lines[3:] == [f"{task}: rating-task.md"]
    assert (judged / "report.md").is_file() and not (judged / "report.html").exists()
    assert not (plain / "report.md").exists()

    broken.joinpath("bundle.json").unlink()
    broken.rmdir()
    assert main(["report", "--runs", str(runs)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{judged}: report.md, report.html"


def test_runs_and_bundle_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_bundle(tmp_path)
    assert main(["report", "--runs", str(tmp_path), "--bundle", str(root)]) == 2
    assert "give exactly one of --bundle and --runs" in capsys.readouterr().err
    assert main(["report"]) == 2
    assert main(["report", "--runs", str(tmp_path), "--critique"]) == 2
    assert "--runs: rebuilds the reports as they are" in capsys.readouterr().err
