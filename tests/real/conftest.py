"""One real llama.cpp server for the whole session (see ``llama_server.py``), and one local Ray
per test module that asks for it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest
from llama_server import LlamaServer, llama_server
from ray_env import isolated_ray_auth


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama-server with Gemma 3 270M, ``--ctx-size 8192 --parallel 2`` (4096 tokens a slot)."""
    with llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


@pytest.fixture(scope="module")
def local_ray(request: pytest.FixtureRequest) -> Iterator[None]:
    """One local Ray for the module (``RAY_CPUS`` in the module, default 2); HOME and
    RAY_TMPDIR in a short temp folder (socket path limit), auth state reset before and after."""
    import ray

    tmp = tempfile.mkdtemp(prefix="trc-")
    with pytest.MonkeyPatch.context() as mp, isolated_ray_auth():
        mp.setenv("HOME", tmp)
        mp.setenv("RAY_TMPDIR", tmp)
        num_cpus = getattr(request.module, "RAY_CPUS", 2)
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        try:
            yield
        finally:
            ray.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
