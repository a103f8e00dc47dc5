"""The real llama.cpp server answers as engine-notes.md describes (the suite's ground floor)."""

from __future__ import annotations

import json
import urllib.request

from llama_server import MODEL_ALIAS, LlamaServer


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def test_server_serves_the_model_with_the_configured_context(real_server: LlamaServer) -> None:
    models = _get(real_server.base_url + "/models")
    assert isinstance(models, dict)
    assert [m["id"] for m in models["data"]] == [MODEL_ALIAS]
    slots = _get(real_server.root + "/slots")
    assert isinstance(slots, list)
    assert [slot["n_ctx"] for slot in slots] == [4096, 4096]
