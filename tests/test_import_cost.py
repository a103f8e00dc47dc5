"""What a start imports: the CLI and the client actor's worker skip the simulator's server.

``touchstone-ray --help``, every ``eval`` launch and every client actor's worker process import
these modules before their first useful step; the simulator's server (``aiohttp.web``) loads
only where a simulator runs, and the CLI loads no HTTP client until a command needs one.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def loaded(module: str, names: list[str]) -> dict[str, bool]:
    """Whether each of ``names`` is in ``sys.modules`` after a fresh interpreter imports
    ``module``."""
    code = f"import sys, {module}; print(*[n in sys.modules for n in {names!r}])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(zip(names, (word == "True" for word in out.stdout.split()), strict=True))


def test_cli_start_imports_no_http_client_or_server() -> None:
    assert loaded("touchstone_ray.cli", ["aiohttp", "touchstone_ray.sim._server"]) == {
        "aiohttp": False,
        "touchstone_ray.sim._server": False,
    }


def test_client_actor_imports_its_client_but_not_the_simulator_server() -> None:
    names = ["aiohttp", "aiohttp.web", "touchstone_ray.sim._server"]
    assert loaded("touchstone_ray.fleet.client_actor", names) == {
        "aiohttp": True,
        "aiohttp.web": False,
        "touchstone_ray.sim._server": False,
    }


def test_the_simulator_server_still_loads_on_first_use() -> None:
    import touchstone_ray.sim as sim
    from touchstone_ray.sim._server import SimServer

    assert sim.SimServer is SimServer
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = sim.nope  # type: ignore[attr-defined]


def test_the_eval_driver_prints_preflight_warnings_without_the_answer_detectors() -> None:
    # the detectors load numpy (45-80 ms), which the driver paid between a host's preflight
    # answer and its first request
    code = (
        "import sys, touchstone_ray.eval.run; "
        "from touchstone_ray.fleet.preflight import preflight_warnings; "
        "preflight_warnings('h', {'m': {'template': {'source': '/props'}}}); "
        "print('numpy' in sys.modules, 'touchstone_ray.answers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
