"""The preflight content probe in a run (issue 28 item 3): each model's warm-up answer is
classified; a flagged one prints one warning line naming the flag, an example and the likely
fix, and with ``--strict-preflight`` that model stops before its cells, which stay without a
record until a ``--resume`` runs them. Real Ray, simulators on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import all_keys, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.fleet.probe import PROBE_FIXES

pytestmark = pytest.mark.slow

BASE = {"ttft_ms": 1, "tps": 4000, "answer_tokens": 30}
LEAK = {"leak_markers": "<|im_end|>\n<|im_start|>user", "echo_prompt": "user"}
# the simulator's warm-up answer: the prompt, the leaked markers, then its filler
EXAMPLE = (
    "'Antworte mit einem Wort: bereit?\\n\\n<|im_end|>\\n<|im_start|>user\\n\\nEntlastung "
    "Aufgabe und Frage Umgebung überlegen Umgebung '"
)


def _events(bundle: Path) -> list[dict[str, object]]:
    lines = (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_a_flagged_warmup_warns_and_strict_stops_only_that_model(
    rc: RayCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack_data = tiny_pack(2) | {"language": "de"}
    pack = write_yaml(tmp_path / "pack.yaml", pack_data)
    models = [
        {"id": "clean", "engine": "simulated", "sim": BASE},
        {"id": "leak", "engine": "simulated", "sim": BASE | LEAK},
    ]
    config = write_yaml(
        tmp_path / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": models,
            "scheduling": {"max_attempts": 1},
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )
    outcome, printed = run(pack, config, out=tmp_path / "runs", strict_preflight=True)
    assert outcome.bundle is not None, printed
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warm-up answer" in line]
    assert warnings == [
        "preflight: warning: local: leak: warm-up answer shows template_leak, prompt_echo "
        f"({EXAMPLE}): likely fix: {PROBE_FIXES['template_leak']}"
    ]
    reason = "warm-up answer shows template_leak, prompt_echo"
    assert outcome.models_stopped == {"leak": reason} and outcome.exit_code == 1
    assert (outcome.n_ok, outcome.n_failed) == (4, 0)
    keys = sorted(r["key"] for r in shard_lines(outcome.bundle))
    assert keys == sorted(all_keys(pack_data, ["clean"]))
    stopped = [e for e in _events(outcome.bundle) if e["event"] == "model_stopped"]
    assert [(e["model"], e["reason"]) for e in stopped] == [("leak", reason)]
    manifest = json.loads((outcome.bundle / "bundle.json").read_text(encoding="utf-8"))
    servers = manifest["servers"]
    assert servers["clean"]["warmup"] == {
        "flags": [],
        "example": servers["clean"]["warmup"]["example"],
    }
    assert servers["leak"]["warmup"]["flags"] == ["template_leak", "prompt_echo"]
    assert servers["leak"]["warmup"]["fix"] == PROBE_FIXES["template_leak"]
    assert servers["leak"]["stopped_reason"] == reason
    assert printed.splitlines()[-2].endswith(f" s; leak vor seinen Zellen angehalten: {reason}")

    # without --strict-preflight the warning stays a warning: the resume runs the 4 cells once
    resumed, _ = run(pack, config, resume=outcome.bundle)
    assert (resumed.n_reused, resumed.n_ok, resumed.n_failed) == (4, 4, 0)
    assert resumed.models_stopped == {} and resumed.exit_code == 0
    records = shard_lines(outcome.bundle)
    assert sorted(r["key"] for r in records) == sorted(all_keys(pack_data, ["clean", "leak"]))
    after = json.loads((outcome.bundle / "bundle.json").read_text(encoding="utf-8"))["servers"]
    assert after["leak"]["stopped_reason"] is None  # this run went on
    assert after["leak"]["warmup"]["flags"] == ["template_leak", "prompt_echo"]
    leak = {r["key"]: r["answer_flags"] for r in records if r["model"] == "leak"}
    assert leak == {  # "Notfall!" (E1) is one word: too short a prompt to look for
        "leak|baseline|A1|1": ["template_leak", "prompt_echo"],
        "leak|none|A1|1": ["template_leak", "prompt_echo"],
        "leak|baseline|E1|1": ["template_leak"],
        "leak|none|E1|1": ["template_leak"],
    }
