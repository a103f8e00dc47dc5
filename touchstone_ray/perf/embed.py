"""``--embed``: embedding throughput of a model on its host.

``--embed-chunks`` (default :data:`N_CHUNKS`) corpus passages of about ``--embed-tokens``
(:data:`CHUNK_TOKENS`) tokens each (words × :data:`TOKENS_PER_WORD`, an estimate; the
server's ``usage.prompt_tokens`` is recorded as the truth) are sent in batches of
``--embed-batch`` (:data:`BATCH`), one batch in flight, to ``/v1/embeddings``
(OpenAI-compatible servers: ``{model, input: [str]}``) or Ollama's ``/api/embed``. Per batch
one record (``embed/<model>.jsonl``): ``t_start``/``t_end`` (epoch s), ``latency_s``,
``n_inputs``, ``chunk_tokens`` (the target), ``prompt_tokens`` (server, or ``None``),
``ok``/``error``; the summary:
embeddings/s and tokens/s over the whole run (first send to last answer), p95 batch latency
(s), and the host's peak memory (MB) from finalize.
"""

from __future__ import annotations

import time
from typing import Any

from touchstone_ray.descriptive import percentile
from touchstone_ray.engines.base import Engine
from touchstone_ray.perf.corpus import passage

N_CHUNKS = 64
"""Chunks embedded per model."""
CHUNK_TOKENS = 256
"""Target tokens per chunk."""
BATCH = 8
"""Chunks per request."""
TOKENS_PER_WORD = 1.4
"""Estimated tokens per corpus word (German and English prose)."""


def chunks(n: int = N_CHUNKS, tokens: int = CHUNK_TOKENS) -> list[str]:
    """``n`` consecutive corpus passages of about ``tokens`` tokens each."""
    words = max(1, round(tokens / TOKENS_PER_WORD))
    return [passage(words, i * words) for i in range(n)]


async def embed_batch(engine: Engine, model: str, texts: list[str]) -> dict[str, Any]:
    """One batch at the engine's :attr:`~touchstone_ray.engines.base.Engine.embed_path`;
    never raises: a failure is ``ok: false`` with one ``error`` line."""
    url, body = engine.base_url + engine.embed_path, {"model": model, "input": texts}
    t_start = time.time()
    try:
        status, data = await engine.request_json("POST", url, body)
    except Exception as exc:
        status, data = None, {"error": f"{type(exc).__name__}: {exc}"}
    t_end = time.time()
    ok = status == 200 and isinstance(data, dict)
    tokens = None
    if ok and isinstance(data, dict):
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        raw = usage.get("prompt_tokens", data.get("prompt_eval_count"))
        tokens = raw if isinstance(raw, int) else None
        n_out = len(data.get("data") or data.get("embeddings") or [])
        ok = n_out == len(texts)
    return {
        "t_start": t_start,
        "t_end": t_end,
        "latency_s": t_end - t_start,
        "n_inputs": len(texts),
        "prompt_tokens": tokens,
        "ok": ok,
        "error": None if ok else f"HTTP {status}: {str(data)[:200]}",
    }


def embed_line(model: str, host: str, s: dict[str, Any]) -> str:
    """``M on H: 120 embeddings/s, 30000 tok/s, p95 batch 0.08 s (batches of 8 × ~256 tok)``."""
    if not s.get("n_ok"):
        return f"{model} on {host}: embeddings failed ({s.get('n_batches', 0)} batches)"
    tps = s["tokens_per_s"]
    return (
        f"{model} on {host}: {s['embeddings_per_s']:.1f} embeddings/s, "
        + (f"{tps:.0f} tok/s, " if tps is not None else "")
        + f"p95 batch {s['batch_latency_p95_s']:.3f} s (batches of {s['batch']} × "
        f"~{s.get('chunk_tokens') or CHUNK_TOKENS} tok)"
    )


def embed_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Figures of one model's embed run (module docstring)."""
    ok = [r for r in records if r.get("ok")]
    if not ok:
        return {"n_batches": len(records), "n_ok": 0}
    wall = max(r["t_end"] for r in records) - min(r["t_start"] for r in records)
    tokens = [r["prompt_tokens"] for r in ok if r["prompt_tokens"] is not None]
    peaks = [float(r["sys_used_mb"]) for r in records if r.get("sys_used_mb") is not None]
    engine = [float(r["engine_rss_mb"]) for r in records if r.get("engine_rss_mb") is not None]
    return {
        "n_batches": len(records),
        "n_ok": len(ok),
        "batch": max(r["n_inputs"] for r in records),
        "chunk_tokens": records[0].get("chunk_tokens"),
        "embeddings_per_s": sum(r["n_inputs"] for r in ok) / wall if wall > 0 else None,
        "tokens_per_s": sum(tokens) / wall if tokens and wall > 0 else None,
        "batch_latency_p95_s": percentile([r["latency_s"] for r in ok], 95),
        "peak_sys_used_mb": max(peaks) if peaks else None,
        "peak_engine_rss_mb": max(engine) if engine else None,
    }
