"""``touchstone-ray agents`` without a cluster, and the lines it prints (no Ray started)."""

from __future__ import annotations

import re

import pytest

from touchstone_ray.cli import main
from touchstone_ray.fleet.agent_actor import code_version, settings_hash
from touchstone_ray.fleet.agent_admin import format_status
from touchstone_ray.fleet.agents import busy_line


def test_agents_need_an_address(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main(["agents", "up"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: agents: they live on a cluster that stays up; give its address with "
        "--address (or RAY_ADDRESS)\n"
    )


def test_an_unknown_action_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "restart", "--address", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == (
        "error: agents: unknown action 'restart'; use one of up, status, down\n"
    )


def test_code_version_and_settings_hash_are_stable() -> None:
    assert re.fullmatch(r"0\.1\.0\+[0-9a-f]{12}", code_version())
    settings = {"python": "3.11.7", "ray": "2.60.0", "env": {}}
    assert settings_hash(settings) == settings_hash(dict(reversed(list(settings.items()))))
    assert settings_hash(settings) != settings_hash({**settings, "ray": "2.61.0"})
    assert len(settings_hash(settings)) == 16


def test_status_lines() -> None:
    row = {
        "name": "agent:ab",
        "host": "gpu-a",
        "node_id": "1a2b3c4d5e6f",
        "pid": 4242,
        "version": "0.1.0+0123456789ab",
        "started_at": 1000.0,
        "run": {"run_id": "2026-12-05_120000_eval_x"},
    }
    idle = {**row, "host": "gpu-b", "run": None}
    lines = format_status(
        {"on": True, "agents": [row, idle, {"name": "agent:cd", "error": "gone"}]}, now=1125.4
    )
    assert lines == [
        "agents: on (3 running)",
        "gpu-a: node 1a2b3c4d, pid 4242, 0.1.0+0123456789ab, up 125 s, "
        "serves run 2026-12-05_120000_eval_x",
        "gpu-b: node 1a2b3c4d, pid 4242, 0.1.0+0123456789ab, up 125 s, serves no run",
        "agent:cd: not answering (gone)",
    ]
    assert busy_line("gpu-a", "1a2b3c4d5e6f", "r1") == (
        "host gpu-a: its agent (node 1a2b3c4d) serves run r1; an agent serves one measuring "
        "run at a time: wait for that run, or stop it"
    )
