"""``run_eval`` against simulated models with each answer shape's knob: every record carries
the flags of its answer (SPEC §7 ``answer_flags``), a failed cell none. Real Ray, real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import quick_fleet, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.answers import ANSWER_FLAGS
from touchstone_ray.config import load_config
from touchstone_ray.errors import ConfigError
from touchstone_ray.records import EVAL_RESPONSE_FIELDS, EvalResponse

pytestmark = pytest.mark.slow

BASE = {"ttft_ms": 1, "tps": 4000, "answer_tokens": 60}
MODELS: dict[str, dict[str, Any]] = {
    "clean": {},
    "leak": {"leak_markers": "<|im_end|>\n<|im_start|>user"},
    "leak_off": {"leak_markers": "<|im_end|>\n<|im_start|>user"},
    "echo": {"echo_prompt": "user"},
    "loop": {"loop_period": 6},
    "think": {"endless_reasoning": True},
    "down": {"fail_rate": 1.0},
}


def test_each_shape_lands_in_its_records_flags(rc: RayCluster, tmp_path: Path) -> None:
    data = tiny_pack(3) | {"language": "de"}
    pack = write_yaml(tmp_path / "pack.yaml", data)
    models = [
        {"id": name, "engine": "simulated", "concurrency": 2, "sim": BASE | knobs}
        for name, knobs in MODELS.items()
    ]
    models[2]["answer_flags_off"] = ["template_leak", "wrong_language"]  # leak_off
    config = quick_fleet(tmp_path / "fleet.yaml", models)
    outcome, printed = run(pack, config, out=tmp_path / "runs")
    assert outcome.bundle is not None, printed
    assert outcome.exit_code == 1  # the "down" model failed every cell
    records = {r["key"]: r for r in shard_lines(outcome.bundle)}
    # tiny_pack(3): A1, A2 ("Frage Nummer i: was ist zu tun?") and E1 ("Notfall!"), each under
    # the variants baseline ("Sei hilfreich.") and none
    prompts = ["A1", "A2", "E1"]
    assert len(records) == len(MODELS) * 2 * len(prompts)
    got = {
        name: {
            f"{v}|{p}": records[f"{name}|{v}|{p}|1"]["answer_flags"]
            for v in ("baseline", "none")
            for p in prompts
        }
        for name in MODELS
    }
    every = {f"{v}|{p}": [] for v in ("baseline", "none") for p in prompts}
    assert got["clean"] == every
    assert got["leak"] == {k: ["template_leak"] for k in every}
    assert got["leak_off"] == every  # the same answers, their flag turned off in the config
    # "Notfall!" is one word: too short a prompt to look for
    assert got["echo"] == {k: [] if k.endswith("E1") else ["prompt_echo"] for k in every}
    assert got["loop"] == {k: ["repetition_loop"] for k in every}
    assert got["think"] == {
        k: ["cut_at_limit", "cut_in_reasoning", "reasoning_only"] for k in every
    }
    assert got["down"] == every
    assert all(not r["ok"] for r in records.values() if r["model"] == "down")
    # every line keeps the Contract's key order (answer_flags after the keys it was added
    # behind) and reads back with its flags
    for shard in (outcome.bundle / "responses").glob("*.jsonl"):
        for line in shard.read_text(encoding="utf-8").splitlines():
            keys = json.loads(line, object_pairs_hook=lambda pairs: [k for k, _ in pairs])
            assert keys == list(EVAL_RESPONSE_FIELDS)
            record = EvalResponse.model_validate_json(line)
            flags = json.dumps(record.answer_flags, separators=(",", ":"))
            assert f',"n_samples":{json.dumps(record.n_samples)},"answer_flags":{flags},' in line
            assert record.answer_flags == records[record.key]["answer_flags"]


def test_an_unknown_flag_name_in_answer_flags_off_is_a_one_line_config_error(
    tmp_path: Path,
) -> None:
    models = [{"id": "m1", "engine": "simulated", "answer_flags_off": ["empty", "leak"]}]
    path = write_yaml(tmp_path / "fleet.yaml", {"models": models})
    with pytest.raises(ConfigError) as info:
        load_config(path)
    names = ", ".join(f"'{f}'" for f in ANSWER_FLAGS[:-1]) + f" or '{ANSWER_FLAGS[-1]}'"
    assert str(info.value) == (
        f"{path}: models[0].answer_flags_off[1]: Input should be {names} (got 'leak')"
    )
