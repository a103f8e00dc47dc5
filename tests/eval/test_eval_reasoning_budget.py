"""The reasoning budget (SPEC §4 ``reasoning_headroom_tokens``, §7 ``max_tokens_sent``,
``reasoning_s``, ``reasoning_tps``) and sampling fields left out when a pack sets them null
(§3): ``run_eval`` against simulated reasoning models on both protocols. Real Ray, real HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import cli, quick_fleet, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.config import load_config
from touchstone_ray.errors import ConfigError

# 40 tokens at 200 tok/s, the first 20 of them reasoning
SIM = {"ttft_ms": 5, "tps": 200, "answer_tokens": 40, "reasoning_share": 0.5}


@pytest.mark.slow
def test_headroom_is_sent_and_null_sampling_is_left_out(rc: RayCluster, tmp_path: Path) -> None:
    data = tiny_pack(3) | {"language": "de", "sampling": {"temperature": None, "seed": None}}
    for prompt in data["categories"][0]["prompts"]:
        prompt["max_tokens"] = 30  # A1, A2: 30 + 20 headroom; E1 has no cap
    pack = write_yaml(tmp_path / "pack.yaml", data)
    models = [
        {"id": "oa", "engine": "simulated", "reasoning_headroom_tokens": 20, "sim": SIM},
        {
            "id": "ol",
            "engine": "simulated",
            "reasoning_headroom_tokens": 20,
            "sim": SIM | {"api": "ollama"},
        },
    ]
    config = quick_fleet(tmp_path / "fleet.yaml", models)
    outcome, printed = run(pack, config, out=tmp_path / "runs")
    assert outcome.exit_code == 0, printed
    assert outcome.bundle is not None
    records = {r["key"]: r for r in shard_lines(outcome.bundle)}
    assert len(records) == 2 * 2 * 3
    for key, r in records.items():
        capped = r["prompt_id"] != "E1"
        assert r["max_tokens_sent"] == (50 if capped else None), key
        # the budget sent is the one recorded; no temperature or seed went out (Ollama also
        # gets its context, here what the uncapped E1 needs: more than 4096 tokens)
        if r["model"] == "oa":
            assert r["request"] == ({"max_tokens": 50} if capped else {}), key
        else:
            sent = {"num_ctx": r["context_tokens"]} | ({"num_predict": 50} if capped else {})
            assert r["request"] == sent and r["context_tokens"] > 4096, key
        assert (r["finish_reason"], r["answer_flags"]) == ("stop", []), key
        # the simulator writes token i at arrival + 5 ms + i / 200 tok/s, so the first answer
        # token (i = 20) comes 0.105 s after the request at the earliest; a late first reasoning
        # token shortens reasoning_s, never this sum
        assert r["reasoning_s"] == pytest.approx(r["ttfa_s"] - r["ttft_s"]), key
        assert r["ttfa_s"] >= 0.105 and r["reasoning_s"] > 0, key
        if r["model"] == "oa":
            assert r["reasoning_tokens"] == 20, key
            assert r["reasoning_tps"] == pytest.approx(20 / r["reasoning_s"]), key
        else:  # Ollama's eval_count does not say how many of its tokens were thinking
            assert (r["reasoning_tokens"], r["reasoning_tps"]) == (None, None), key
    manifest = (outcome.bundle / "bundle.json").read_text(encoding="utf-8")
    assert '"sampling": {\n    "temperature": null,\n    "seed": null\n  }' in manifest


def test_negative_headroom_is_a_one_line_config_error(tmp_path: Path) -> None:
    models = [{"id": "m1", "engine": "simulated", "reasoning_headroom_tokens": -1}]
    path = write_yaml(tmp_path / "fleet.yaml", {"models": models})
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}: models[0].reasoning_headroom_tokens: Input should be greater than or equal "
        "to 0 (got -1)"
    )
    pack = write_yaml(tmp_path / "pack.yaml", tiny_pack(3))
    proc = cli("eval", "--pack", str(pack), "--config", str(path), "--out", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"error: {info.value}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yaml", "pack.yaml"]


def test_default_headroom_keeps_the_pack_budget(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "fleet.yaml", {"models": [{"id": "m1", "engine": "simulated"}]})
    assert load_config(path).models[0].reasoning_headroom_tokens == 0
