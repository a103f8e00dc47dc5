"""Repeat stability on the real llama.cpp server (issue 28 item 6): repeats at temperature 0
on its 2 slots (concurrency 2, so requests share a batch); the scorecard's stability figure and
the report's table match the distinct answers counted from the records themselves."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml
from llama_server import MODEL_ALIAS, LlamaServer
from ray_env import LocalRay

from touchstone_ray.eval.run import EvalOptions, run_eval
from touchstone_ray.pack import load_pack
from touchstone_ray.records import EvalResponse
from touchstone_ray.report import write_report
from touchstone_ray.scoring import build_scorecard

RAY_CPUS = 1
"""One CPU for this module's local Ray (``ray_local``, tests/conftest.py)."""
REPEATS = 4
PROMPTS = {
    "A1": "Nenne drei Farben.",
    "A2": "Was ist die Hauptstadt von Frankreich?",
    "E1": "Erkläre kurz, was ein Computer ist.",
}


def _pack() -> dict[str, Any]:
    def prompt(pid: str, **kw: Any) -> dict[str, Any]:
        text = PROMPTS[pid]
        return {"id": pid, "title": "t", "prompt": text, "max_tokens": 24, "repeats": REPEATS, **kw}

    return {
        "id": "repeats",
        "title": "Wiederholungen",
        "language": "de",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [{"id": "Q1", "name": "Korrektheit", "weight": 1}],
        "ko_rule": {"dimension": "Q1", "red_flag_prompts": ["E1"]},
        "prompt_variants": [{"id": "none"}],
        "sampling": {"temperature": 0.0, "seed": 42},
        "categories": [
            {"id": "A", "name": "Alpha", "prompts": [prompt("A1"), prompt("A2")]},
            {"id": "E", "name": "Quer", "prompts": [prompt("E1", safety_critical=True)]},
        ],
    }


def test_stability_matches_the_distinct_answers_in_the_records(
    real_server: LlamaServer, ray_local: LocalRay, tmp_path: Path
) -> None:
    pack_path = tmp_path / "pack.yaml"
    pack_path.write_text(yaml.safe_dump(_pack(), allow_unicode=True), encoding="utf-8")
    model = {"id": MODEL_ALIAS, "engine": "llamacpp", "base_url": real_server.base_url}
    config = {
        "models": [model | {"concurrency": real_server.parallel}],
        "scheduling": {"max_attempts": 3, "warmup": False},
        "ray": {"include_dashboard": False},
        "out": str(tmp_path / "runs"),
    }
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    outcome = run_eval(EvalOptions(pack=pack_path, config=config_path), io.StringIO())
    assert outcome.bundle is not None
    assert (outcome.n_ok, outcome.n_failed) == (len(PROMPTS) * REPEATS, 0)
    shard = next((outcome.bundle / "responses").glob("*.jsonl"))
    lines = [json.loads(line) for line in shard.read_text(encoding="utf-8").splitlines()]
    assert all(r["request"]["temperature"] == 0.0 for r in lines)
    # counted from the records, outside touchstone's own code
    texts: dict[str, set[str]] = {}
    for r in lines:
        texts.setdefault(r["prompt_id"], set()).add(r["response_text"])
    distinct = {pid: len(t) for pid, t in texts.items()}
    stable = sum(1 for n in distinct.values() if n == 1)
    responses = [EvalResponse.model_validate(r) for r in lines]
    card = build_scorecard(
        load_pack(pack_path), responses, [], [], judges=[], vote="majority", simulated=False
    )
    [row] = card.rows
    assert row.distinct_answers == distinct
    assert row.n_repeat_prompts == len(PROMPTS)
    assert row.repeat_stability_pct == stable / len(PROMPTS) * 100.0
    write_report(outcome.bundle, "md", unjudged=True)
    text = (outcome.bundle / "rating-task.md").read_text(encoding="utf-8")
    section = text.split("### Stabilität über Wiederholungen\n", 1)[1].split("\n### ", 1)[0]
    unstable = ", ".join(f"{p} ({n})" for p, n in distinct.items() if n > 1) or "–"
    figure = f"{stable / len(PROMPTS) * 100.0:.1f}"
    row_line = f"| `{MODEL_ALIAS}` | none | {len(PROMPTS)} | {stable} | {figure} | {unstable} |"
    assert row_line in section.splitlines()
    print(f"repeat stability on llama.cpp, 2 slots, temperature 0: {figure} % ({distinct})")
