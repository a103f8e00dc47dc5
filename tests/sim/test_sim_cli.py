"""``sim-server`` command: --help lists every knob with its unit; it serves until Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import typer
from procs import sigint_default, stop_group
from typer.testing import CliRunner

from touchstone_ray.sim import SimConfig
from touchstone_ray.sim._config import SimModelKnobs
from touchstone_ray.sim_cli import _is_loopback, sim_server

app = typer.Typer()
app.command("sim-server")(sim_server)


@app.command("other")
def _other() -> None:
    """A second command, so that ``sim-server`` is addressed by name as in the main CLI."""


def test_help_lists_every_knob_with_unit() -> None:
    result = CliRunner().invoke(app, ["sim-server", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    knobs = [n for n in SimConfig.model_fields if n not in ("models", "model_overrides")]
    for name in [*knobs, "models", "api", "port", "host", "config"]:
        assert f"--{name.replace('_', '-')}" in result.output, name
    for unit in ("milliseconds", "tokens per second", "Seconds", "Probability (0..1)"):
        assert unit in result.output
    assert set(SimModelKnobs.model_fields) <= set(SimConfig.model_fields)


def test_bad_knob_is_usage_error(tmp_path: object) -> None:
    result = CliRunner().invoke(app, ["sim-server", "--fail-rate", "2"])
    assert result.exit_code == 2
    assert "fail_rate" in result.output
    result = CliRunner().invoke(app, ["sim-server", "--reasoning-channel", "telepathy"])
    assert result.exit_code == 2


def test_tool_knob_flags_are_checked() -> None:
    result = CliRunner().invoke(app, ["sim-server", "--tool-calls", "[{name: x}]"])
    assert result.exit_code == 2 and "not JSON" in result.output
    result = CliRunner().invoke(app, ["sim-server", "--tool-calls", '[{"nme": "x"}]'])
    assert result.exit_code == 2 and "tool_calls.0.nme" in result.output
    result = CliRunner().invoke(app, ["sim-server", "--tool-call-shape", "chaos"])
    assert result.exit_code == 2 and "tool_call_shape" in result.output


def test_loopback_detection() -> None:
    assert _is_loopback("127.0.0.1") and _is_loopback("::1") and _is_loopback("localhost")
    assert not _is_loopback("0.0.0.0") and not _is_loopback("gpu-a.lan")


def test_serves_until_ctrl_c(tmp_path: os.PathLike[str]) -> None:
    config = os.path.join(tmp_path, "sim.yaml")
    with open(config, "w", encoding="utf-8") as f:
        f.write("answer_tokens: 4\nmodel_overrides:\n  fast: {tps: 1000}\n")
    code = "import typer; from touchstone_ray.sim_cli import sim_server; typer.run(sim_server)"
    args = ["--port", "0", "--api", "openai", "--models", "a,fast", "--config", config]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_default,  # Ctrl-C reaches it when the suite runs in the background too
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "(models: a,fast)" in line
        base = line.split(" on ", 1)[1].split()[0]
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        assert [m["id"] for m in httpx.get(f"{base}/models").json()["data"]] == ["a", "fast"]
        body = {"model": "fast", "messages": [{"role": "user", "content": "Hallo"}]}
        reply = httpx.post(f"{base}/chat/completions", json=body, timeout=10).json()
        assert reply["usage"]["completion_tokens"] == 4
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=10) == 0
        finally:
            stop_group(proc)
    assert proc.stderr is not None
    assert "Traceback" not in proc.stderr.read()
