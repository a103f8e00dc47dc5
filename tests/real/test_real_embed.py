"""``touchstone-ray perf --embed`` against the real llama.cpp server serving Gemma 3 270M with
``--embeddings --pooling mean``: embeddings/s and tokens/s over the run, the tokens counted by
the server (its own ``/tokenize`` agrees), the p95 batch latency, and the peak memory of the
engine process from the footprint monitor.

Started with ``--embeddings`` alone, this model's default pooling is ``none`` and the server
refuses ``/v1/embeddings`` with HTTP 400 ("Pooling type 'none' is not OAI compatible. Please
use a different pooling type"); the first test pins that answer down, the second measures
with mean pooling, which this build accepts (640-dimensional vectors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from llama_server import MODEL_ALIAS, LlamaServer, llama_server

REPO = Path(__file__).resolve().parents[2]
CHUNKS, CHUNK_TOKENS, BATCH = 8, 48, 4
REFUSAL = "Pooling type 'none' is not OAI compatible. Please use a different pooling type"


def post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return int(resp.status), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_embeddings_without_pooling_are_refused(tmp_path: Path) -> None:
    with llama_server(tmp_path, ctx_size=1024, parallel=1, extra_args=("--embeddings",)) as srv:
        status, body = post(srv.base_url + "/embeddings", {"model": MODEL_ALIAS, "input": ["a"]})
    assert status == 400
    assert body["error"]["message"] == REFUSAL


@pytest.fixture(scope="module")
def embed_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with llama_server(
        tmp_path_factory.mktemp("llama-embed"),
        ctx_size=2048,
        parallel=1,
        extra_args=("--embeddings", "--pooling", "mean"),
    ) as server:
        yield server


def test_embed_throughput_on_the_real_server(embed_server: LlamaServer, tmp_path: Path) -> None:
    config = {
        "models": [{"id": MODEL_ALIAS, "engine": "llamacpp", "base_url": embed_server.base_url}],
        "scheduling": {"max_attempts": 2, "warmup": False},
        "ray": {"include_dashboard": False},
        "monitor": {"interval_s": 0.25},
        "out": str(tmp_path / "runs"),
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update(HOME=str(tmp_path), RAY_TMPDIR=tempfile.mkdtemp(prefix="tre", dir="/tmp"))
    done = subprocess.run(
        [
            sys.executable, "-m", "touchstone_ray.cli", "perf", "--config", str(path),
            "--contexts", "64", "--concurrency", "1", "--runs", "1", "--output-tokens", "2",
            "--embed", "--embed-chunks", str(CHUNKS), "--embed-tokens", str(CHUNK_TOKENS),
            "--embed-batch", str(BATCH),
        ],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    bundle = Path(done.stdout.strip().splitlines()[-1])
    records = lines(bundle / "embed" / f"{MODEL_ALIAS}.jsonl")
    assert [r["key"] for r in records] == [f"{MODEL_ALIAS}|local|embed|{BATCH}|{i}" for i in (1, 2)]
    from touchstone_ray.perf.embed import chunks

    texts = chunks(CHUNKS, CHUNK_TOKENS)
    tokenize = embed_server.root + "/tokenize"
    for i, r in enumerate(records):
        assert r["ok"] and r["error"] is None and r["n_inputs"] == BATCH
        assert r["chunk_tokens"] == CHUNK_TOKENS
        # the server's count: each input tokenized with its BOS, as its /tokenize counts them
        counted = [
            len(post(tokenize, {"content": t, "add_special": True})[1]["tokens"])
            for t in texts[i * BATCH : (i + 1) * BATCH]
        ]
        assert r["prompt_tokens"] == sum(counted)
        assert 0.6 * CHUNK_TOKENS * BATCH < r["prompt_tokens"] < 1.6 * CHUNK_TOKENS * BATCH
        assert r["latency_s"] == pytest.approx(r["t_end"] - r["t_start"])
        assert r["engine_rss_mb"] is not None  # finalize joined the engine footprint
    figures = json.loads((bundle / "summary.json").read_text())["embed"][f"{MODEL_ALIAS}|local"]
    wall = max(r["t_end"] for r in records) - min(r["t_start"] for r in records)
    assert figures["n_ok"] == 2 and figures["batch"] == BATCH
    assert figures["embeddings_per_s"] == pytest.approx(CHUNKS / wall)
    assert figures["embeddings_per_s"] > 0
    assert figures["tokens_per_s"] == pytest.approx(sum(r["prompt_tokens"] for r in records) / wall)
    latencies = [r["latency_s"] for r in records]
    assert figures["batch_latency_p95_s"] == pytest.approx(float(np.percentile(latencies, 95)))
    assert min(latencies) <= figures["batch_latency_p95_s"] <= max(latencies)
    # peak memory: the llama-server process the footprint monitor found on the endpoint
    samples = lines(bundle / "hosts" / "local.jsonl")
    engines = [x for s in samples for x in s.get("engines") or [] if x.get("rss_mb") is not None]
    assert engines, "no engine footprint sampled"
    pid = engines[-1]["pid"]
    assert "llama-server" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    assert figures["peak_engine_rss_mb"] == max(r["engine_rss_mb"] for r in records)
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        rss_now_mb = next(int(x.split()[1]) for x in fh if x.startswith("VmRSS:")) / 1024
    assert 0.7 * rss_now_mb < figures["peak_engine_rss_mb"] < 1.3 * rss_now_mb
    line = next(x for x in done.stdout.splitlines() if x.startswith(f"{MODEL_ALIAS} on local: "))
    assert f"(batches of {BATCH} × ~{CHUNK_TOKENS} tok)" in line
