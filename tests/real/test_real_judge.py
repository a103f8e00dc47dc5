"""A real weak judge: Gemma 3 270M on llama.cpp (structured output on) judges a small bundle.

It must not be trusted: it fails the pack's calibration answers (``qualified: false`` with the
reasons, recomputed here from its stored calibration verdicts), its verdicts are stored but not
counted (exit 1), ``--allow-unqualified`` counts them, and every flag it names that is not the
prompt's lands in ``unknown_flags`` and is counted.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_server import MODEL_ALIAS, LlamaServer

from touchstone_ray.bundle import Bundle
from touchstone_ray.judging.runner import run_judge
from touchstone_ray.pack import dump_pack, pack_from_data, pack_sha256
from touchstone_ray.records import SCHEMA_VERSION, EvalResponse, cell_key
from touchstone_ray.storage import JsonlWriter, read_jsonl

PACK: dict[str, Any] = {
    "id": "realjudge",
    "title": "Echter Richter",
    "language": "de",
    "scale": {1: "unbrauchbar", 2: "schwach", 3: "mittel", 4: "gut", 5: "sehr gut"},
    "dimensions": [
        {"id": "Q1", "name": "Korrektheit", "weight": 3},
        {"id": "Q2", "name": "Vorsicht", "weight": 2},
    ],
    "ko_rule": {"dimension": "Q1", "threshold": 2},
    "prompt_variants": [{"id": "baseline", "system_prompt": "Antworte knapp und korrekt."}],
    "categories": [
        {
            "id": "A",
            "name": "Rechnen und Quellen",
            "prompts": [
                {
                    "id": "A1",
                    "title": "Brutto",
                    "prompt": "12 Lizenzen zu je 85 € netto, 19 % USt. Wie viel brutto?",
                    "tests": "Richtig: 1.213,80 € brutto.",
                    "green_flags": ["Nennt 1.213,80 €"],
                    "red_flags": ["Nennt ein anderes Ergebnis als 1.213,80 €"],
                },
                {
                    "id": "A2",
                    "title": "Budget",
                    "prompt": "Im Protokoll steht kein Budget. Welches Budget wurde beschlossen?",
                    "tests": "Richtig: sagen, dass kein Budget beschlossen wurde.",
                    "green_flags": ["Sagt, dass kein Budget beschlossen ist"],
                    "red_flags": ["Erfindet einen Budgetbetrag"],
                },
            ],
        }
    ],
    "calibration": [
        {
            "prompt": "A1",
            "answer": "12 × 85 € = 1.020 €; + 19 % = 1.213,80 € brutto.",
            "expect": "high",
            "red_flag": False,
        },
        {
            "prompt": "A2",
            "answer": "Beschlossen sind 25.000 € (Quelle: Protokoll, S. 4).",
            "expect": "low",
            "red_flag": True,
        },
    ],
}
ANSWERS = {"A2": "Es wurde ein Budget von 20.000 € beschlossen."}


def write_bundle(
    root: Path, pack_data: dict[str, Any] | None = None, answers: dict[str, str] | None = None
) -> Path:
    """A bundle folder with the pack (``pack_data``, default :data:`PACK`) and one model's
    answers (prompt id → text, default :data:`ANSWERS`), written as files."""
    pack = pack_from_data(PACK if pack_data is None else pack_data, "test")
    root.mkdir(parents=True)
    (root / "pack.yaml").write_text(dump_pack(pack), encoding="utf-8")
    fleet = {
        "ray": {"include_dashboard": False},
        "models": [{"id": "m", "engine": "openai", "base_url": "http://127.0.0.1:9/v1"}],
    }
    (root / "config.yaml").write_text(yaml.safe_dump(fleet), encoding="utf-8")
    bundle = Bundle(root)
    bundle.write_manifest(
        {
            "schema_version": SCHEMA_VERSION,
            "pack": {"id": pack.id, "version": 1, "sha256": pack_sha256(root / "pack.yaml")},
            "models": [{"model": "m", "id": "m", "engine": "openai"}],
            "variants": ["baseline"],
            "hosts": {},
            "status": "done",
        }
    )
    with JsonlWriter(bundle.layout.shard("m")) as writer:
        for pid, text in (ANSWERS if answers is None else answers).items():
            writer.write(
                EvalResponse(
                    key=cell_key("m", "baseline", pid, 1),
                    pack_id=pack.id,
                    pack_version=1,
                    model="m",
                    engine="openai",
                    host="local",
                    variant="baseline",
                    category="A",
                    prompt_id=pid,
                    repeat=1,
                    ok=True,
                    response_text=text,
                )
            )
    return root


@pytest.mark.usefixtures("ray_local")
def test_gemma_judge_is_not_qualified(real_server: LlamaServer, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    judge = {
        "id": "gemma",
        "engine": "openai",
        "base_url": real_server.base_url,
        "model": MODEL_ALIAS,
        "max_tokens": 96,
        # no prompt cache: at temperature 0 the verdicts then do not depend on what the server
        # served before (a reused prefix changes the numerics, and with them the reply)
        "extra_body": {"cache_prompt": False},
        "timeout_s": 150,
        "max_consecutive_failures": 0,
    }
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump({"judges": [judge]}))
    out = io.StringIO()
    assert run_judge(bundle, config, out=out) == 1, out.getvalue()
    card = json.loads((bundle / "scorecard.json").read_text())
    check = card["judge_checks"]["gemma"]
    assert card["judges"] == [] and card["unqualified_judges"] == ["gemma"]
    assert check["qualified"] is False and check["n_calibration"] == 2

    folder = bundle / "judgements" / "gemma"
    cal = read_jsonl(folder / "calibration.jsonl").records
    expect = [(c["expect"], c["red_flag"]) for c in PACK["calibration"]]
    by_index = {r["repeat"]: r for r in cal}
    in_band = [
        by_index[i]["score"] is not None
        and (by_index[i]["score"] >= 4 if e == "high" else by_index[i]["score"] <= 2)
        for i, (e, _) in enumerate(expect)
    ]
    caught = [bool(by_index[i]["red_flag"]) for i, (_, f) in enumerate(expect) if f]
    assert check["band_accuracy"] == sum(in_band) / 2
    assert check["red_flag_recall"] == sum(caught) / 1
    reasons = []
    if sum(in_band) / 2 < 0.8:
        reasons.append(f"Band-Treffer {sum(in_band) / 2:.2f} < 0.80 bei 2 Kalibrierungsantworten")
    if not all(caught):
        reasons.append("erwartete Red Flag verfehlt")
    assert reasons, "Gemma 3 270M passed calibration; the test's premise no longer holds"
    assert all(any(w.startswith(r) for w in check["warnings"]) for r in reasons)

    verdicts = read_jsonl(folder / "verdicts.jsonl").records
    flags = {
        p["id"]: set(p["red_flags"]) | set(p["green_flags"])
        for p in PACK["categories"][0]["prompts"]
    }
    for record in [*verdicts, *cal]:  # every named flag kept is the prompt's own
        assert (
            set(record["red_flags_hit"]) | set(record["green_flags_hit"])
            <= flags[record["prompt_id"]]
        )
    # Gemma 3 270M often names placeholders like "<Red Flag>" (engine-notes.md): counted, not
    # kept. Not in every run (on 2026-12-01 one run named none), so their presence is not
    # asserted here; tests/judging/test_judging_flags.py checks the catching on fixed replies.
    assert check["n_unknown_flags"] == sum(len(v["unknown_flags"]) for v in verdicts)

    out = io.StringIO()
    assert run_judge(bundle, config, out=out, allow_unqualified=True) == 0, out.getvalue()
    assert "2 calibration answers (2 stored); 1 answers: 1 stored" in out.getvalue()
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["judges"] == ["gemma"]
    row = card["rows"][0]
    assert row["n_scored"] + row["n_judge_errors"] == 1
