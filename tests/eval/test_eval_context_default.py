"""Context cuts nobody configured (issue 28 item 7): ``run_eval`` against simulated Ollama
servers whose default context cuts a long prompt silently, and an OpenAI-compatible one that
lists ``max_model_len``. Every Ollama model gets a ``num_ctx``, the choice lands in
``bundle.json``; a prompt cut at the context it was given is flagged and never judged. Real Ray,
real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import quick_fleet, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.pack import load_pack
from touchstone_ray.records import EvalResponse
from touchstone_ray.scoring.formulas import pre_judge_verdict

pytestmark = pytest.mark.slow

SIM = {"ttft_ms": 1, "tps": 4000, "answer_tokens": 8}
OLLAMA = SIM | {"api": "ollama", "default_num_ctx": 4}
"""A server whose own default context (4 tokens) is shorter than every prompt here."""
NEED = 32 + 64
"""The prompts' need: the longest prompt by the estimate (system "Sei hilfreich." ceil(14 / 3)
+ 8 = 13, user "Frage Nummer 1: was ist zu tun?" ceil(31 / 3) + 8 = 19) plus max_tokens 64."""


def test_every_ollama_model_gets_a_context_and_a_cut_is_flagged(
    rc: RayCluster, tmp_path: Path
) -> None:
    data = tiny_pack(3) | {"language": "de"}
    for category in data["categories"]:
        for prompt in category["prompts"]:
            prompt["max_tokens"] = 64
    pack = write_yaml(tmp_path / "pack.yaml", data)
    models = [
        {"id": "needs", "engine": "simulated", "sim": OLLAMA},
        {"id": "known", "engine": "simulated", "sim": OLLAMA | {"context_length": 32768}},
        {"id": "cut", "engine": "simulated", "context_tokens": 6, "sim": OLLAMA},
        {
            "id": "oai",
            "engine": "simulated",
            "sim": SIM | {"context_length": 16384, "models": ["oai"]},
        },
    ]
    config = quick_fleet(tmp_path / "fleet.yaml", models)
    outcome, printed = run(pack, config, out=tmp_path / "runs", allow_cut=True)
    assert outcome.exit_code == 0, printed
    assert outcome.bundle is not None
    manifest = json.loads((outcome.bundle / "bundle.json").read_text(encoding="utf-8"))
    assert {m["model"]: m["context"] for m in manifest["models"]} == {
        "needs": {"tokens": NEED, "source": "prompts", "sent": True},
        "known": {"tokens": 32768, "source": "model", "sent": True},
        "cut": {"tokens": 6, "source": "configured", "sent": True},
        "oai": {"tokens": 16384, "source": "server", "sent": False},
    }
    records = {r["key"]: r for r in shard_lines(outcome.bundle)}
    assert len(records) == 4 * 2 * 3 and all(r["ok"] for r in records.values())
    by_model: dict[str, dict[str, tuple[object, ...]]] = {}
    for r in records.values():
        cell = f"{r['variant']}|{r['prompt_id']}"
        seen = (r["request"].get("num_ctx"), r["prompt_tokens"], r["input_truncated"])
        by_model.setdefault(r["model"], {})[cell] = (r["context_tokens"], *seen)
    # the simulator counts words: system 2, A1/A2 7, E1 1; nothing is cut where the context
    # was sent, though the server's own default (4) is shorter than every prompt
    words = {"baseline|A1": 9, "baseline|A2": 9, "baseline|E1": 3}
    words |= {"none|A1": 7, "none|A2": 7, "none|E1": 1}
    assert by_model["needs"] == {c: (NEED, NEED, n, False) for c, n in words.items()}
    assert by_model["known"] == {c: (32768, 32768, n, False) for c, n in words.items()}
    assert by_model["oai"] == {c: (16384, None, n, False) for c, n in words.items()}
    # a context of 6: the longer prompts come back at 6 tokens, flagged; the short ones not
    assert by_model["cut"] == {c: (6, 6, min(n, 6), n > 6) for c, n in words.items()}
    # a cut prompt is never judged as a normal answer
    loaded = load_pack(pack)
    for r in records.values():
        if r["model"] != "cut":
            continue
        verdict = pre_judge_verdict(
            EvalResponse.model_validate(r), loaded.prompt(r["prompt_id"]), judge="j"
        )
        if r["input_truncated"]:
            assert verdict is not None
            assert (verdict.status, verdict.score) == ("unscored_input_truncated", None)
        else:
            assert verdict is None  # the judge reads it
