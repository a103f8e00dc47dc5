"""Issue 27 on the real llama.cpp server: the tools path, not the model (Gemma 3 270M is not
expected to call tools well).

The session's server runs the GGUF's default template (llama.cpp's ChatML fallback), which
cannot render tools: ``/props`` ``chat_template_caps`` says so and the run refuses the model
before any cell, with one line naming the fix. A second server with a template that renders
tools (``tools_template.jinja`` beside this file): the tools are sent (the server counts
their tokens in the prompt), the cell is recorded with its turn, and since the model answers
without calling, its ``calls`` check fails.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_server import MODEL_ALIAS, LlamaServer, llama_server
from ray_env import LocalRay

from touchstone_ray.engines.base import EngineSettings
from touchstone_ray.engines.llamacpp import LlamaCppEngine
from touchstone_ray.tool_records import ToolsRecord
from touchstone_ray.toolpack import tools_pack_from_data
from touchstone_ray.tools.loop import first_messages
from touchstone_ray.tools.run import ToolsOptions, ToolsOutcome, run_tools

RAY_CPUS = 1
TEMPLATE = Path(__file__).with_name("tools_template.jinja")
READ = {
    "name": "read",
    "description": "Eine Datei lesen",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
PACK: dict[str, Any] = {
    "kind": "tools",
    "id": "echt",
    "title": "Echt",
    "language": "de",
    "tools": [READ],
    "world": {"files": {"a.py": "def f():\n    return 1\n"}},
    "items": [
        {
            "id": "lesen",
            "prompt": "Lies die Datei a.py mit dem Werkzeug read.",
            "tools": ["read"],
            "max_turns": 2,
            "max_tokens": 24,
            "checks": [{"id": "ruft", "type": "calls", "expect": ["read"]}],
        }
    ],
}


def _write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _run(tmp: Path, server: LlamaServer) -> ToolsOutcome:
    model = {"id": MODEL_ALIAS, "engine": "llamacpp", "base_url": server.base_url, "timeout_s": 60}
    config = {
        "ray": {"include_dashboard": False},
        "models": [model],
        "scheduling": {"max_attempts": 2},
        "monitor": {"interval_s": 0.5, "gpu": "off"},
        "out": str(tmp / "runs"),
    }
    pack = _write(tmp / "echt.yaml", PACK)
    return run_tools(ToolsOptions(pack=str(pack), config=_write(tmp / "f.yaml", config)),
                     io.StringIO())  # fmt: skip


@pytest.fixture(scope="module")
def tools_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The same GGUF with a template that renders tools and tool calls."""
    folder = tmp_path_factory.mktemp("tools-template")
    extra = ("--chat-template-file", str(TEMPLATE))
    with llama_server(folder, ctx_size=2048, parallel=1, extra_args=extra) as server:
        yield server


def test_a_template_without_tools_is_refused_before_the_cells(
    real_server: LlamaServer, ray_local: LocalRay, tmp_path: Path
) -> None:
    outcome = _run(tmp_path, real_server)
    assert outcome.bundle is not None
    assert (outcome.exit_code, outcome.n_ok, outcome.n_failed, outcome.n_missing) == (1, 0, 0, 1)
    assert outcome.stopped == {
        MODEL_ALIAS: f"{real_server.root}: the chat template cannot call tools (/props "
        "chat_template_caps: supports_tools false and supports_tool_calls false); restart "
        "llama-server with --jinja and a template that renders tools and tool calls "
        "(--chat-template-file FILE)"
    }
    assert list((outcome.bundle / "cells").glob("*.jsonl")) == []


def test_the_tools_are_sent_and_a_cell_without_a_call_fails_calls(
    tools_server: LlamaServer, ray_local: LocalRay, tmp_path: Path
) -> None:
    outcome = _run(tmp_path, tools_server)
    assert outcome.bundle is not None
    assert (outcome.exit_code, outcome.n_ok, outcome.n_passed) == (0, 1, 0)
    [shard] = (outcome.bundle / "cells").glob("*.jsonl")
    [record] = [ToolsRecord.model_validate_json(x) for x in shard.read_text().splitlines()]
    assert record.ok and record.engine_version is not None
    [turn] = record.turns  # no call: the loop ends after the first answer
    assert turn.tool_calls == [] and turn.finish_reason in ("stop", "length")
    assert [(c.id, c.ok) for c in record.checks] == [("ruft", False)]
    assert record.checks[0].detail != ""
    assert record.passed is False
    # the tools went out: the server's prompt count is the templated messages with the tools
    pack = tools_pack_from_data(PACK, "echt")
    engine = LlamaCppEngine(EngineSettings(base_url=tools_server.base_url))

    async def count(tools: list[dict[str, Any]] | None) -> int | None:
        try:
            messages = first_messages(pack, pack.items[0])
            return await engine.count_prompt_tokens(MODEL_ALIAS, messages, tools=tools)
        finally:
            await engine.aclose()

    with_tools = asyncio.run(count([READ_TOOL]))
    assert turn.prompt_tokens == with_tools
    engine = LlamaCppEngine(EngineSettings(base_url=tools_server.base_url))
    without = asyncio.run(count(None))
    assert with_tools is not None and without is not None and with_tools > without + 20
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    assert manifest["status"] == "done" and manifest["kind"] == "tools"


READ_TOOL = {"type": "function", "function": READ}
