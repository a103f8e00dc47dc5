"""What a job from the start form would run, without a cluster: the entrypoint per kind, the
hosts it holds, and the paths it may name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_ui_live import PACK

from touchstone_ray.errors import UsageError
from touchstone_ray.ui.jobs import UNPINNED, Jobs

FLEET = {
    "models": [
        {"id": "a", "engine": "simulated", "host": "gpu-b"},
        {"id": "b", "engine": "simulated", "host": "gpu-a"},
        {"id": "c", "engine": "simulated"},
    ],
    "hosts": {"gpu-a": {"label": "gpu-a"}, "gpu-b": {"label": "gpu-b"}},
}


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    (runs / "b1").mkdir(parents=True)
    packs.mkdir()
    (packs / "p.yaml").write_text(yaml.safe_dump(PACK), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    (tmp_path / "outside.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    return Jobs(None, runs.resolve(), packs.resolve())


def test_eval_perf_and_judge_entrypoints_and_hosts(jobs: Jobs) -> None:
    argv, hosts = jobs.entry("eval", {"pack": "p.yaml", "config": "fleet.yaml"})
    assert argv == [
        "touchstone-ray",
        "eval",
        "--pack",
        str(jobs.packs / "p.yaml"),
        "--config",
        str(jobs.packs / "fleet.yaml"),
        "--out",
        str(jobs.runs),
    ]
    assert hosts == (UNPINNED, "gpu-a", "gpu-b")
    argv, hosts = jobs.entry("perf", {"config": str(jobs.packs / "fleet.yaml")})
    assert argv[1:4] == ["perf", "--config", str(jobs.packs / "fleet.yaml")]
    assert hosts == (UNPINNED, "gpu-a", "gpu-b")
    argv, hosts = jobs.entry("judge", {"bundle": "b1", "judge_config": "fleet.yaml"})
    assert argv[1:] == [
        "judge",
        "--bundle",
        str(jobs.runs / "b1"),
        "--judge-config",
        str(jobs.packs / "fleet.yaml"),
    ]
    assert hosts == ()
    # listing jobs before any submission starts no cluster
    assert jobs.jobs() == []
    assert jobs.local is None


def test_paths_outside_runs_and_packs_and_unknown_kinds_are_refused(jobs: Jobs) -> None:
    outside = str(jobs.packs.parent / "outside.yaml")
    with pytest.raises(UsageError) as exc:
        jobs.entry("eval", {"pack": "p.yaml", "config": outside})
    assert str(exc.value) == f"config {outside}: not a file under --runs or the packs folder"
    with pytest.raises(UsageError) as exc:
        jobs.entry("eval", {"pack": "../outside.yaml", "config": "fleet.yaml"})
    assert str(exc.value) == "pack ../outside.yaml: not a file under --runs or the packs folder"
    with pytest.raises(UsageError) as exc:
        jobs.entry("bench", {})
    assert str(exc.value) == "kind 'bench': expected eval, perf or judge"
