"""One real llama.cpp server for the whole session (see ``llama_server.py``); a module's local
Ray is the suite's ``ray_local`` (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_server import LlamaServer, llama_server


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama-server with Gemma 3 270M, ``--ctx-size 8192 --parallel 2`` (4096 tokens a slot)."""
    with llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server
