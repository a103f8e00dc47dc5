"""``eval`` with ``engine: vllm`` against a loopback server speaking vLLM's endpoints: the
context check by its ``/tokenize`` and ``max_model_len``, and its own TTFT histogram read
before and after the model's cells into ``bundle.json`` ``server_checks``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from eval_helpers import run, tiny_pack, write_yaml
from loopback_app import LoopbackApp
from ray_env import RayCluster

from touchstone_ray.engines.vllm import TTFT_METRIC
from touchstone_ray.errors import UsageError

MODEL = "Qwen/Qwen3-8B"
SERVER_TTFT_S = 0.25
"""The TTFT each chat adds to the fake server's histogram (s)."""


class FakeVllm(LoopbackApp):
    """vLLM's ``/version``, ``/v1/models``, ``/tokenize`` (4 tokens a message + 1 per 4 chars),
    ``/metrics`` (a TTFT histogram that grows by one request of 0.25 s per chat) and a
    streamed chat."""

    thread_name = "fake-vllm"

    def __init__(self, max_model_len: int) -> None:
        super().__init__()
        self.max_model_len = max_model_len
        self.chats = 0

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/version", self._version)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/tokenize", self._tokenize)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_post("/v1/chat/completions", self._chat)

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "0.8.1"})

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": MODEL, "root": MODEL, "max_model_len": self.max_model_len}]
        return web.json_response({"object": "list", "data": data})

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        count = sum(4 + len(m["content"]) // 4 for m in body["messages"])
        return web.json_response({"count": count, "max_model_len": self.max_model_len})

    async def _metrics(self, request: web.Request) -> web.Response:
        label = f'{{model_name="{MODEL}"}}'
        text = (
            f"# TYPE {TTFT_METRIC} histogram\n"
            f"{TTFT_METRIC}_count{label} {float(self.chats)}\n"
            f"{TTFT_METRIC}_sum{label} {self.chats * SERVER_TTFT_S}\n"
        )
        return web.Response(text=text, content_type="text/plain")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.chats += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"content": "Ja"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
        ]
        for chunk in chunks:
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def files(tmp: Path, url: str, warmup: bool) -> tuple[Path, Path]:
    pack = write_yaml(tmp / "pack.yaml", tiny_pack(3))
    model = {"id": MODEL, "engine": "vllm", "base_url": url + "/v1"}
    config = {
        "models": [model],
        "scheduling": {"warmup": warmup, "max_attempts": 1},
        "ray": {"include_dashboard": False},
        "monitor": {"gpu": "off"},
        "out": str(tmp / "runs"),
    }
    return pack, write_yaml(tmp / "config.yaml", config)


def test_server_ttft_over_the_cells_goes_into_the_manifest(rc: RayCluster, tmp_path: Path) -> None:
    server = FakeVllm(max_model_len=4096)
    server.start()
    try:
        outcome, _ = run(*files(tmp_path, server.url, warmup=True))
    finally:
        server.stop()
    assert (outcome.n_ok, outcome.n_failed) == (6, 0)  # 3 prompts × 2 variants
    assert outcome.bundle is not None
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    # the warm-up's chat came before the first snapshot: only the 6 cells are counted
    assert manifest["server_checks"][MODEL] == {
        "metric": TTFT_METRIC,
        "requests": 6,
        "server_ttft_mean_s": pytest.approx(SERVER_TTFT_S),
    }
    server_entry = manifest["servers"][MODEL]
    assert server_entry["engine_kind"] == "vllm"
    assert server_entry["server_facts"] == {
        "version": "0.8.1",
        "max_model_len": 4096,
        "root": MODEL,
    }
    records = [
        json.loads(line)
        for line in next((outcome.bundle / "responses").glob("*.jsonl")).read_text().splitlines()
    ]
    assert {(r["engine_version"], r["context_tokens"]) for r in records} == {("vllm 0.8.1", 4096)}


def test_a_prompt_over_max_model_len_stops_the_run(rc: RayCluster, tmp_path: Path) -> None:
    server = FakeVllm(max_model_len=16)
    server.start()
    try:
        with pytest.raises(UsageError) as info:
            run(*files(tmp_path, server.url, warmup=False))
        chats = server.chats
    finally:
        server.stop()
    # variant baseline: system "Sei hilfreich." (4 + 3) + user "Frage Nummer 1: was ist zu tun?"
    # (4 + 7) = 18 tokens by the server's count; max_tokens unset
    assert str(info.value) == (
        f"{MODEL}: prompt A1 (variant baseline) does not fit the context: 18 prompt tokens "
        "(server) + max_tokens 0 = 18 > context 16; raise context_tokens or pass --allow-cut"
    )
    assert chats == 0  # stopped before any request
