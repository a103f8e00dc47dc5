"""Starting Ray from the CLI, in subprocesses: Ray's own start-up lines stay out of the
terminal unless ``--debug``; a local Ray (or the demo's cluster) that does not start is tried
once more, then one line says what to do (exit 1).

The start is made to fail for real: ``RAY_TMPDIR`` names a path under a regular file, so
Ray cannot create its session folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from touchstone_ray.fleet.session import start_failed_line

pytestmark = pytest.mark.slow

RAY_LINE_MARKERS = (
    " -- ",  # Ray's Python log format: "<date> <time>,<ms>\tINFO worker.py:2007 -- Started …"
    "Started a local Ray instance",
    "Token authentication is enabled",
    "(raylet)",
    "Ray deduplicates logs",
)


def _env(ray_tmp: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env.update(HOME=ray_tmp, RAY_TMPDIR=ray_tmp)
    return env


def _cli(
    args: list[str], env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def _files(tmp: Path) -> list[str]:
    """``eval`` arguments for a 2-cell run on one simulated model of the driver's node, with
    Ray's dashboard on (its URL line is one of Ray's start-up lines)."""
    pack = {
        "id": "quiet",
        "title": "Quiet",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q6", "name": "Sicherheit", "weight": 3},
        ],
        "ko_rule": {"dimension": "Q6", "red_flag_prompts": ["E1"]},
        "prompt_variants": [{"id": "baseline"}],
        "categories": [
            {
                "id": "A",
                "name": "Alpha",
                "prompts": [{"id": "A1", "title": "t", "prompt": "Eins?"}],
            },
            {
                "id": "E",
                "name": "Querschnitt",
                "prompts": [
                    {"id": "E1", "title": "t", "prompt": "Notfall!", "safety_critical": True}
                ],
            },
        ],
    }
    fleet = {
        "models": [
            {"id": "sim-q", "engine": "simulated", "sim": {"ttft_ms": 5, "answer_tokens": 8}}
        ],
        "monitor": {"interval_s": 0.5, "gpu": "off"},
    }
    (tmp / "pack.yaml").write_text(yaml.safe_dump(pack, allow_unicode=True), encoding="utf-8")
    (tmp / "fleet.yaml").write_text(yaml.safe_dump(fleet), encoding="utf-8")
    return [
        "--pack",
        str(tmp / "pack.yaml"),
        "--config",
        str(tmp / "fleet.yaml"),
        "--out",
        str(tmp / "runs"),
    ]


def _ray_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(m in line for m in RAY_LINE_MARKERS)]


def test_eval_keeps_rays_start_up_lines_out_unless_debug(tmp_path: Path) -> None:
    args = _files(tmp_path)
    quiet = _cli(["eval", *args], _env(tempfile.mkdtemp(prefix="tsq", dir="/tmp")))
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stderr == ""
    assert quiet.stdout.splitlines()[-2].startswith("eval done: 2 ok, 0 failed, 0 reused in ")
    loud = _cli(["eval", "--debug", *args], _env(tempfile.mkdtemp(prefix="tsq", dir="/tmp")))
    assert loud.returncode == 0, loud.stderr[-3000:]
    shown = _ray_lines(loud.stderr)
    assert any("Started a local Ray instance" in line for line in shown), loud.stderr[-3000:]
    assert any("Token authentication is enabled" in line for line in shown), loud.stderr[-3000:]


def _unstartable_env(tmp: Path) -> tuple[dict[str, str], str]:
    blocker = tmp / "not-a-folder"
    blocker.write_text("")
    ray_tmp = str(blocker / "ray")
    env = _env(tempfile.mkdtemp(prefix="tsq", dir="/tmp"))
    env["RAY_TMPDIR"] = ray_tmp
    return env, ray_tmp


def test_eval_retries_a_failed_local_start_once_then_says_what_to_do(tmp_path: Path) -> None:
    env, ray_tmp = _unstartable_env(tmp_path)
    proc = _cli(["eval", *_files(tmp_path)], env)
    cause = f"NotADirectoryError: [Errno 20] Not a directory: '{ray_tmp}'"
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"Ray did not start ({cause}); shutting it down and trying once more",
        "error: " + start_failed_line(NotADirectoryError(20, "Not a directory", ray_tmp)),
    ]
    assert proc.stderr.splitlines()[-1] == (
        f"error: could not start a local Ray on this machine (tried twice; {cause}); join a "
        "running cluster with --address, or retry on a quieter machine"
    )
    assert not (tmp_path / "runs").exists()  # nothing was created before Ray ran


def test_demo_retries_its_cluster_once_then_says_what_to_do(tmp_path: Path) -> None:
    env, ray_tmp = _unstartable_env(tmp_path)
    proc = _cli(["demo", "--quick", "--out", str(tmp_path / "demo")], env)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert len(lines) == 2, proc.stderr[-3000:]
    assert lines[0].startswith("Ray did not start (") and lines[0].endswith(
        "); shutting it down and trying once more"
    )
    assert lines[1].startswith("error: could not start a local Ray on this machine (tried twice; ")
    assert lines[1].endswith(
        "); join a running cluster with --address, or retry on a quieter machine"
    )
    assert ray_tmp in lines[1]
