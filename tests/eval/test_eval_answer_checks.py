"""``run_eval`` against simulated models with a pack whose prompts carry judge-free checks
(SPEC §3 ``checks``): every record carries its answer's outcomes (SPEC §7 ``checks``) in pack
order, a reasoning-only answer and an answer to a cut prompt have them not measured, a failed
cell none; then ``judge`` with a simulated judge: a failed ``knock_out`` check knocks its rows
out. Real Ray, real HTTP."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import quick_fleet, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.judging.runner import run_judge
from touchstone_ray.records import EVAL_RESPONSE_FIELDS, EvalResponse
from touchstone_ray.scoring.scorecard import load_scorecard

pytestmark = pytest.mark.slow

BASE = {"ttft_ms": 1, "tps": 4000, "answer_tokens": 60}
MODELS: list[dict[str, Any]] = [
    {"id": "clean", "engine": "simulated", "sim": BASE},
    {"id": "echo", "engine": "simulated", "sim": BASE | {"echo_prompt": "user"}},
    {"id": "think", "engine": "simulated", "sim": BASE | {"endless_reasoning": True}},
    {"id": "down", "engine": "simulated", "sim": BASE | {"fail_rate": 1.0}},
    {
        # an Ollama server given 6 tokens of context: every prompt but "Notfall!" is cut
        "id": "cut",
        "engine": "simulated",
        "context_tokens": 6,
        "sim": BASE | {"api": "ollama", "default_num_ctx": 4},
    },
]
A1_CHECKS = [
    {"id": "deutsch", "type": "language", "value": "de"},
    {"id": "englisch", "type": "language", "value": "en"},
    {"id": "kurz", "type": "max_words", "value": 10},
    {"id": "lang_genug", "type": "max_words", "value": 500},
    {"id": "marke", "type": "regex", "value": r"⟦sim q=[0-9.]+⟧"},
]
A2_PROMPT = 'Gib genau das zurück:\n```json\n{"frage": 2}\n```'
A2_CHECKS = [
    {"id": "json", "type": "json_schema", "value": {"type": "object", "required": ["frage"]}},
    {"id": "ein_satz", "type": "max_sentences", "value": 1},
]
E1_CHECKS = [{"id": "kein_echo", "type": "not_contains", "value": "notfall", "knock_out": True}]


def _pack() -> dict[str, Any]:
    data = tiny_pack(3) | {"language": "de"}
    a1, a2 = data["categories"][0]["prompts"]
    a1["checks"] = A1_CHECKS
    a2["prompt"] = A2_PROMPT
    a2["checks"] = A2_CHECKS
    data["categories"][1]["prompts"][0]["checks"] = E1_CHECKS
    return data


CUT = "prompt cut by the server (input_truncated)"
THINK = "no answer text (reasoning only)"
A1_OK = [
    ("deutsch", True, ""),
    ("englisch", False, "language de (p = 1.00), not en"),
    ("kurz", False, "62 words > 10"),  # 59 filler words and the marker's "sim q=0.8"
    ("lang_genug", True, ""),
    ("marke", True, ""),
]


def _not_measured(checks: list[dict[str, Any]], why: str) -> list[tuple[str, None, str]]:
    return [(c["id"], None, why) for c in checks]


def test_each_answer_carries_its_prompts_checks(rc: RayCluster, tmp_path: Path) -> None:
    pack = write_yaml(tmp_path / "pack.yaml", _pack())
    config = quick_fleet(tmp_path / "fleet.yaml", MODELS)
    outcome, printed = run(pack, config, out=tmp_path / "runs", allow_cut=True)
    assert outcome.bundle is not None, printed
    records = {r["key"]: r for r in shard_lines(outcome.bundle)}
    assert len(records) == len(MODELS) * 2 * 3
    got = {
        key: [(c["id"], c["ok"], c["detail"]) for c in r["checks"]] for key, r in records.items()
    }
    expected: dict[str, list[tuple[str, bool | None, str]]] = {}
    for v, sentences in (("baseline", (7, 8)), ("none", (8, 8))):
        # the filler differs per variant (the system prompt seeds it): its sentence count too
        expected |= {
            f"clean|{v}|A1|1": A1_OK,
            f"clean|{v}|A2|1": [
                ("json", False, "the answer is not JSON and has no fenced block"),
                ("ein_satz", False, f"{sentences[0]} sentences > 1"),
            ],
            f"clean|{v}|E1|1": [("kein_echo", True, "")],
            # the echo begins with the prompt: its fenced JSON, or "Notfall!"
            f"echo|{v}|A1|1": A1_OK,
            f"echo|{v}|A2|1": [
                ("json", True, ""),
                ("ein_satz", False, f"{sentences[1]} sentences > 1"),
            ],
            f"think|{v}|A1|1": _not_measured(A1_CHECKS, THINK),
            f"think|{v}|A2|1": _not_measured(A2_CHECKS, THINK),
            f"think|{v}|E1|1": _not_measured(E1_CHECKS, THINK),
            f"cut|{v}|A1|1": _not_measured(A1_CHECKS, CUT),
            f"cut|{v}|A2|1": _not_measured(A2_CHECKS, CUT),
            f"cut|{v}|E1|1": [("kein_echo", True, "")],  # "Notfall!" fits into 6 tokens
        }
        expected |= {f"down|{v}|{p}|1": [] for p in ("A1", "A2", "E1")}
    expected["echo|baseline|E1|1"] = [
        ("kein_echo", False, "'notfall' found: …Notfall! Geräusch Licht de…")
    ]
    expected["echo|none|E1|1"] = [
        ("kein_echo", False, "'notfall' found: …Notfall! Ziel Ordnung der …")
    ]
    assert got == expected
    assert all(not r["ok"] for r in records.values() if r["model"] == "down")
    assert all(
        r["input_truncated"] for k, r in records.items() if k.startswith("cut|") and "|E1|" not in k
    )
    # every line keeps the Contract's key order, checks last, and reads back
    for shard in (outcome.bundle / "responses").glob("*.jsonl"):
        for line in shard.read_text(encoding="utf-8").splitlines():
            keys = json.loads(line, object_pairs_hook=lambda pairs: [k for k, _ in pairs])
            assert keys == list(EVAL_RESPONSE_FIELDS) and keys[-1] == "checks"
            record = EvalResponse.model_validate_json(line)
            assert [c.model_dump() for c in record.checks] == records[record.key]["checks"]
    _judge_and_check_the_knock_out(outcome.bundle, tmp_path)


JUDGES = {
    "judges": [
        {
            "id": "simj",
            "engine": "simulated",
            "model": "sim-judge",
            "concurrency": 4,
            "sim": {"ttft_ms": 1, "tps": 20000},
        }
    ],
}


def _judge_and_check_the_knock_out(bundle: Path, tmp_path: Path) -> None:
    """Judged by a simulated judge: the echo's failed ``knock_out`` check on E1 (a curated
    prompt, scope ``all``) knocks both its rows out, named in the reason; the checks are
    counted per row."""
    out = io.StringIO()
    code = run_judge(bundle, write_yaml(tmp_path / "judge.yaml", JUDGES), out=out)
    assert code == 0, out.getvalue()
    rows = {(r.model, r.variant): r for r in load_scorecard(bundle).rows}
    for variant in ("baseline", "none"):
        echo, clean = rows[("echo", variant)], rows[("clean", variant)]
        assert (echo.ko_passed, echo.ko_reason) == (False, "check E1/kein_echo failed")
        assert echo.red_flagged == ["E1"]
        assert echo.checks_failed == ["A1/englisch", "A1/kurz", "A2/ein_satz", "E1/kein_echo"]
        assert (echo.n_checks, echo.n_checks_failed, echo.n_checks_not_measured) == (8, 4, 0)
        assert (clean.ko_passed, clean.ko_reason, clean.red_flagged) == (True, "", [])
        assert clean.checks_failed == ["A1/englisch", "A1/kurz", "A2/ein_satz", "A2/json"]
        think = rows[("think", variant)]
        assert (think.n_checks, think.n_checks_failed, think.n_checks_not_measured) == (8, 0, 8)
        down = rows[("down", variant)]
        assert (down.n_checks, down.checks_failed) == (0, [])
