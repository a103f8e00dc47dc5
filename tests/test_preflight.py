"""`touchstone-ray hosts` on a local Ray: endpoints reached from the host, served models."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from loopback_app import LoopbackApp
from ray_env import LocalRay

from touchstone_ray.fleet.hosts import NodeInfo
from touchstone_ray.fleet.preflight import HostReport, preflight_problems, run_hosts
from touchstone_ray.sim import SimConfig, SimServer


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with SimServer(SimConfig(models=["served-model"])) as server:
        yield server.url


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(tmp_path: Path, models: list[dict[str, object]]) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"ray": {"include_dashboard": False}, "models": models}))
    return path


@pytest.mark.slow
def test_hosts_ok(ray_local: LocalRay, sim_url: str, tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        [{"id": "served-model", "engine": "ollama", "base_url": sim_url}],
    )
    out = io.StringIO()
    assert run_hosts(config, None, out) == 0
    text = out.getvalue()
    assert "served-model" in text
    assert "PSI: yes (/proc/pressure/memory)" in text
    assert "problem:" not in text


def test_hosts_json_is_one_line_for_programs(
    ray_local: LocalRay, sim_url: str, tmp_path: Path
) -> None:
    config = _config(
        tmp_path,
        [
            {"id": "served-model", "engine": "ollama", "base_url": sim_url},
            {"id": "other-model", "engine": "openai", "base_url": f"{sim_url}/v1"},
        ],
    )
    out = io.StringIO()
    assert run_hosts(config, None, out, as_json=True) == 1
    [line] = out.getvalue().splitlines()
    data = json.loads(line)
    [host] = data["hosts"]
    assert (host["host"], host["error"]) == ("local", None)
    assert host["psi"] == "yes (/proc/pressure/memory)"
    served = {label: (m["reachable"], m["model_served"]) for label, m in host["models"].items()}
    assert served == {"served-model": (True, True), "other-model": (True, False)}
    assert host["models"]["other-model"]["served"] == ["served-model"]
    assert data["problems"] == ["local: other-model: not served (server lists ['served-model'])"]


@pytest.mark.slow
def test_hosts_reports_unreachable_and_unserved(
    ray_local: LocalRay, sim_url: str, tmp_path: Path
) -> None:
    port = _closed_port()
    config = _config(
        tmp_path,
        [
            {"id": "other-model", "engine": "openai", "base_url": f"{sim_url}/v1"},
            {"id": "gone", "engine": "openai", "base_url": f"http://127.0.0.1:{port}/v1"},
        ],
    )
    out = io.StringIO()
    assert run_hosts(config, None, out) == 1
    problems = [line for line in out.getvalue().splitlines() if line.startswith("problem:")]
    assert problems[0] == "problem: local: other-model: not served (server lists ['served-model'])"
    assert problems[1].startswith("problem: local: gone: endpoint unreachable (")
    assert len(problems) == 2


class _KeyedServer(LoopbackApp):
    """An OpenAI-compatible model list that answers 401 without the right bearer key."""

    def add_routes(self, app: web.Application) -> None:
        async def models(request: web.Request) -> web.Response:
            if request.headers.get("Authorization") != "Bearer sk-preflight":
                return web.json_response({"error": "unauthorized"}, status=401)
            return web.json_response({"object": "list", "data": [{"id": "keyed"}]})

        app.router.add_get("/v1/models", models)


@pytest.mark.slow
def test_hosts_sends_the_api_key(
    ray_local: LocalRay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _KeyedServer()
    server.start()
    try:
        monkeypatch.setenv("TS_PREFLIGHT_KEY", "sk-preflight")
        config = _config(
            tmp_path,
            [
                {
                    "id": "keyed",
                    "engine": "openai",
                    "base_url": f"{server.url}/v1",
                    "api_key_env": "TS_PREFLIGHT_KEY",
                }
            ],
        )
        out = io.StringIO()
        assert run_hosts(config, None, out) == 0, out.getvalue()
        assert "sk-preflight" not in out.getvalue()
    finally:
        server.stop()


def test_preflight_problems_say_each_problem_one_way() -> None:
    """eval's, perf's and ``hosts``' lines of a preflight come from the one writer."""
    result = {
        "up": {"reachable": True, "model_served": True, "served": ["up"]},
        "gone": {"reachable": False, "error": "ConnectError: refused", "served": []},
        "other": {"reachable": True, "model_served": False, "served": ["a", "b"]},
        "sim": {"reachable": True, "served": []},  # no model_served: a simulated endpoint
    }
    assert preflight_problems("gpu-a", result, "unused") == [
        "gpu-a: gone: endpoint unreachable (ConnectError: refused)",
        "gpu-a: other: not served (server lists ['a', 'b'])",
    ]
    assert preflight_problems("gpu-a", None, "no preflight answer within 60 s") == [
        "gpu-a: no preflight answer within 60 s"
    ]
    assert preflight_problems("gpu-a", {}, "unused") == []
    node = NodeInfo(node_id="n" * 56, ip="10.0.0.1", hostname="box", labels={}, alive=True)
    report = HostReport(host="gpu-a", node=node, models=result)
    assert report.problems == preflight_problems("gpu-a", result, "")
    report.error = "no endpoints answer within 60 s"
    assert report.problems == ["gpu-a: no endpoints answer within 60 s"]
