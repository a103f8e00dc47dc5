"""``eval`` with ``engine: llamacpp`` against a real llama.cpp server with a small slot: the
context check before any request (exit 2 / ``--allow-cut``), a context error not retried,
server truth and context in the records, cache busting with the prompt cache off."""

from __future__ import annotations

import io
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_server import MODEL_ALIAS, LlamaServer, llama_server
from ray_env import LocalRay

from touchstone_ray.errors import UsageError
from touchstone_ray.eval.run import EvalOptions, run_eval

SLOT = 1024
LONG = "Bitte fasse diesen Text zusammen: " + "Wort " * 1400
SYSTEM = "Antworte kurz."


def pack() -> dict[str, Any]:
    def prompt(pid: str, text: str, repeats: int = 1, **kw: Any) -> dict[str, Any]:
        return {"id": pid, "title": "t", "prompt": text, "max_tokens": 4, "repeats": repeats, **kw}

    return {
        "id": "ctx",
        "title": "Kontext",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q6", "name": "Sicherheit", "weight": 3},
        ],
        "ko_rule": {"dimension": "Q6", "red_flag_prompts": ["E1"]},
        "prompt_variants": [{"id": "baseline", "system_prompt": SYSTEM}],
        "categories": [
            {
                "id": "A",
                "name": "Alpha",
                "prompts": [prompt("A1", "Sag Hallo.", repeats=2), prompt("L1", LONG)],
            },
            {
                "id": "E",
                "name": "Querschnitt",
                "prompts": [prompt("E1", "Notfall!", safety_critical=True)],
            },
        ],
    }


def post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def server_count(server: LlamaServer, text: str, nonce: str) -> int:
    """The prompt's tokens by the server's template and tokenizer, outside touchstone."""
    messages = [
        {"role": "system", "content": f"{nonce}\n{SYSTEM}"},
        {"role": "user", "content": text},
    ]
    prompt = post(server.root + "/apply-template", {"messages": messages})["prompt"]
    body = {"content": prompt, "add_special": True, "parse_special": True}
    return len(post(server.root + "/tokenize", body)["tokens"])


RAY_CPUS = 1
"""One CPU for this module's local Ray (``ray_local``, tests/conftest.py)."""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A second real server: ``--ctx-size 1024 --parallel 1`` (one 1024-token slot)."""
    with llama_server(tmp_path_factory.mktemp("small"), ctx_size=SLOT, parallel=1) as server:
        yield server


def files(tmp: Path, server: LlamaServer) -> tuple[Path, Path]:
    pack_path = tmp / "pack.yaml"
    pack_path.write_text(yaml.safe_dump(pack(), allow_unicode=True), encoding="utf-8")
    config = {
        "models": [{"id": MODEL_ALIAS, "engine": "llamacpp", "base_url": server.base_url}],
        "scheduling": {
            "max_attempts": 1,
            "warmup": False,
            "cache_bust": True,
            "prompt_cache": False,
        },
        "ray": {"include_dashboard": False},
        "out": str(tmp / "runs"),
    }
    config_path = tmp / "config.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return pack_path, config_path


def test_context_check_then_allow_cut(
    small: LlamaServer, ray_local: LocalRay, tmp_path: Path
) -> None:
    from touchstone_ray.fleet.prompts import nonce_line

    pack_path, config_path = files(tmp_path, small)
    out = io.StringIO()
    with pytest.raises(UsageError) as info:
        run_eval(EvalOptions(pack=pack_path, config=config_path), out)
    [bundle] = list((tmp_path / "runs").iterdir())
    n = server_count(small, LONG, nonce_line(bundle.name, f"{MODEL_ALIAS}|baseline|L1|1"))
    assert n + 4 > SLOT
    assert str(info.value) == (
        f"{MODEL_ALIAS}: prompt L1 (variant baseline) does not fit the context: {n} prompt "
        f"tokens (server) + max_tokens 4 = {n + 4} > context {SLOT}; raise context_tokens or "
        "pass --allow-cut"
    )
    assert not list((bundle / "responses").glob("*.jsonl")) or all(
        p.stat().st_size == 0 for p in (bundle / "responses").glob("*.jsonl")
    )

    outcome = run_eval(EvalOptions(pack=pack_path, config=config_path, allow_cut=True), out)
    assert (outcome.n_ok, outcome.n_failed, outcome.failures_by_kind) == (3, 1, {"context": 1})
    assert outcome.bundle is not None
    shard = next((outcome.bundle / "responses").glob("*.jsonl"))
    records = {r["key"]: r for r in map(json.loads, shard.read_text().splitlines())}
    cut = records[f"{MODEL_ALIAS}|baseline|L1|1"]
    assert (cut["ok"], cut["error_kind"], cut["attempt"]) == (False, "context", 1)
    for key in ("A1|1", "A1|2", "E1|1"):
        r = records[f"{MODEL_ALIAS}|baseline|{key}"]
        assert (r["ok"], r["attempt"], r["engine"]) == (True, 1, "llamacpp")
        assert (r["context_tokens"], r["input_truncated"]) == (SLOT, False)
        assert (r["cached_tokens"], r["prompt_cached"]) == (0, False)  # prompt_cache: off
        assert r["server_timings"]["prompt_n"] == r["prompt_tokens"]
        assert r["request"]["cache_prompt"] is False
    a1, a2 = records[f"{MODEL_ALIAS}|baseline|A1|1"], records[f"{MODEL_ALIAS}|baseline|A1|2"]
    nonces = [nonce_line(outcome.bundle.name, r["key"]) for r in (a1, a2)]
    assert nonces[0] != nonces[1]
    assert a1["prompt_tokens"] == server_count(small, "Sag Hallo.", nonces[0])
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    server = manifest["servers"][MODEL_ALIAS]
    assert server["engine_kind"] == "llamacpp" and server["server_facts"]["n_ctx"] == SLOT


def test_hosts_names_the_engine_and_suggests_llamacpp(
    small: LlamaServer, ray_local: LocalRay, tmp_path: Path
) -> None:
    from touchstone_ray.fleet.preflight import run_hosts

    config = {"models": [{"id": MODEL_ALIAS, "engine": "openai", "base_url": small.base_url}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = io.StringIO()
    assert run_hosts(path, None, out) == 0
    text = out.getvalue()
    assert "llama.cpp b0-unknown (engine: llamacpp)" in text
    assert (
        f"  suggestion: {MODEL_ALIAS}: set `engine: llamacpp` (uses the server's own "
        "identity, context limit and tokenizer)\n"
    ) in text
