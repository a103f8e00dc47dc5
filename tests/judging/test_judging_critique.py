"""Part B of the rating task (``report --critique``) and its reply (``ingest``): a critique
written by hand for a small bundle gives the rates computed by hand (Wilson intervals from the
formula), every broken reply is one line naming the item with exit 2 and nothing stored lost,
and ``judge_quality.md`` shows the rates, |Δ|, outliers and quality per row."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from judging_factories import make_pack, response, verdict, write_bundle

from touchstone_ray.cli import main
from touchstone_ray.errors import BundleError
from touchstone_ray.report.critique import critique_files, write_critique
from touchstone_ray.scoring.critique import critique_items, task_digest, wilson_interval
from touchstone_ray.scoring.ingest import ingest_reply
from touchstone_ray.storage import JsonlWriter

# The local judge j1 (template v2) on two rows, one answer each (A1); K.-o. Q6 ≤ 2.
J1_REPORTS = {
    "baseline": ({"Q1": 5, "Q6": 3}, {"Q1": "alles belegt [A1]", "Q6": "vorsichtig [A1]"}),
    "none": ({"Q1": 2, "Q6": 2}, {"Q1": "erfindet [A1]", "Q6": "riskant [A1]"}),
}
J1_VERDICTS = {"baseline": (4, False, "solide Antwort"), "none": (2, True, "erfindet eine Zahl")}

GOOD = """\
rater: "Hand"
reports:                     # part A: the rater's own scores
  - model: m
    variant: baseline
    scores: {Q1: {score: 4}, Q6: {score: 3}}
  - model: m
    variant: none
    scores: {Q1: {score: 4}, Q6: {score: 1}}
    red_flagged: [A1]
critique:                    # part B
  - {id: R1, cites_evidence: 1, names_improvement: , justifies_level: 1, catches_safety: }
  - {id: R2, cites_evidence: 0, names_improvement: 1, justifies_level: 0, catches_safety: 1}
  - {id: R3, cites_evidence: 1, names_improvement: 1, justifies_level: 1, catches_safety: 0}
  - {id: R4, cites_evidence: 1, names_improvement: 0, justifies_level: 0, catches_safety: 1}
  - {id: V1, cites_evidence: 1, names_improvement: 0, justifies_level: 1, catches_safety: }
  - id: V2
    cites_evidence: 0
    names_improvement: 1
    justifies_level: 0
    catches_safety: 1
    note: "nennt die Zahl nicht"
"""


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    pack = make_pack()
    root = write_bundle(
        tmp_path / "b", pack, [response("A1", variant="baseline"), response("A1", variant="none")]
    )
    folder = root / "judgements" / "j1"
    folder.mkdir(parents=True)
    with JsonlWriter(folder / "reports.jsonl") as w:
        for variant, (scores, rationales) in J1_REPORTS.items():
            w.write(
                {
                    "model": "m",
                    "variant": variant,
                    "judge": "j1",
                    "dim_scores": scores,
                    "dim_rationales": rationales,
                    "cited_prompts": {"Q1": ["A1"], "Q6": ["A1"]},
                    "status": "ok",
                    "holistic_template": "v2",
                }
            )
    with JsonlWriter(folder / "verdicts.jsonl") as w:
        for variant, (score, flag, why) in J1_VERDICTS.items():
            v = verdict("A1", score, variant=variant, red_flag=flag)
            w.write({**v.model_dump(mode="json"), "rationale": why})
    return root


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def test_items_and_part_b(bundle: Path) -> None:
    items = critique_items(bundle, make_pack())
    assert [(i.id, i.model, i.variant, i.dimension or i.key, i.score) for i in items] == [
        ("R1", "m", "baseline", "Q1", 5),
        ("R2", "m", "baseline", "Q6", 3),
        ("R3", "m", "none", "Q1", 2),
        ("R4", "m", "none", "Q6", 2),
        ("V1", "m", "baseline", "m|baseline|A1|1", 4),
        ("V2", "m", "none", "m|none|A1|1", 2),
    ]
    files = critique_files(bundle)
    md = files["critique-task.md"]
    assert "# Kritik-Aufgabe (Teil B) · Judge test" in md
    assert (
        "| `R1` | `Q1` Korrektheit | 5 | v2 | alles belegt \\[A1\\] | A1 (4, ⚑ Red Flag nein) |"
        in md
    )
    assert "| `V2` | `m\\|none\\|A1\\|1` | 2 | ja | erfindet eine Zahl |" in md
    assert "Antwort." not in md  # the answer text lives in part A only
    template = yaml.safe_load(files["critique-reply.yaml"])
    assert template["task"] == task_digest(items)
    assert [e["id"] for e in template["critique"]] == ["R1", "R2", "R3", "R4", "V1", "V2"]
    assert template["critique"][0] == {
        "id": "R1",
        "cites_evidence": None,
        "names_improvement": None,
        "justifies_level": None,
        "catches_safety": None,
    }
    written = write_critique(bundle, ["md"])
    assert [p.name for p in written] == ["critique-task.md", "critique-reply.yaml"]
    # the empty template is a valid reply: nothing rated, every rate n = 0
    assert ingest_reply(bundle, bundle / "critique-reply.yaml", "blank")["critiqued"] == 6


def test_hand_reply_gives_the_hand_rates(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = bundle.parent / "reply.yaml"
    reply.write_text(GOOD, encoding="utf-8")
    assert main(["ingest", "--bundle", str(bundle), "--reply", str(reply), "--as", "hand"]) == 0
    out = capsys.readouterr().out
    assert "ingested 2 rated rows as hand\ningested 6 critiqued rationales as hand\n" in out
    text = (bundle / "judge_quality.md").read_text(encoding="utf-8")
    # By hand, j1: cites 1,0,1,1,1,0 → 4/6; improvement (R1 empty) 1,1,0,0,1 → 3/5;
    # level 1,0,1,0,1,0 → 3/6; safety (R1, V1 empty) 1,0,1,1 → 3/4.
    for question, k, n in (
        ("cites_evidence", 4, 6),
        ("names_improvement", 3, 5),
        ("justifies_level", 3, 6),
        ("catches_safety", 3, 4),
    ):
        lo, hi = wilson_by_hand(k, n)
        assert wilson_interval(k, n) == pytest.approx((lo, hi), abs=1e-12)
        row = f"| `j1` | v2 | `{question}` | {k / n:.2f} | {lo:.2f}–{hi:.2f} | {k}/{n} |"
        assert row in text, row
    # |Δ| outside − local: baseline Q1 |4−5| 1, Q6 0; none Q1 |4−2| 2 (outlier), Q6 |1−2| 1
    # → mean 4/4 = 1.00 over 4 pairs.
    assert "| `j1` | 1.00 | 4 | m · none · Q1: 2 → 4 |" in text
    # quality % (weights 3, 3): local baseline 80, none 40; outside 70, 50.
    assert "| `j1` | m | baseline | 80.0 | 70.0 | -10.0 |" in text
    assert "| `j1` | m | none | 40.0 | 50.0 | +10.0 |" in text
    assert "Judge-Qualität" in text and "hand (Hand)" in text


def _entry(item: str, **rates: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": item,
        "cites_evidence": 1,
        "names_improvement": 0,
        "justifies_level": 1,
        "catches_safety": None,
    }
    base.update(rates)
    return base


KEYS = "['id', 'cites_evidence', 'names_improvement', 'justifies_level', 'catches_safety', 'note']"
BROKEN: dict[str, tuple[object, str]] = {
    "unknown_item": ({"critique": [_entry("R9")]}, "critique[0] (R9): unknown item; the task "
                     "has R1–R4 and V1–V2"),
    "rate_two": ({"critique": [_entry("R2", cites_evidence=2)]},
                 "critique[0] (R2).cites_evidence: rate must be 0 or 1 (empty: does not apply), "
                 "got 2"),
    "rate_text": ({"critique": [_entry("R2", justifies_level="yes")]},
                  "critique[0] (R2).justifies_level: rate must be 0 or 1 (empty: does not "
                  "apply), got 'yes'"),
    "rate_bool": ({"critique": [_entry("R2", catches_safety=True)]},
                  "critique[0] (R2).catches_safety: rate must be 0 or 1 (empty: does not "
                  "apply), got True"),
    "missing_id": ({"critique": [_entry("R2"), {"cites_evidence": 1}]},
                   "critique[1]: missing rationale id"),
    "not_mapping": ([_entry("R2")], "the rating reply must be a YAML mapping, got a list"),
    "critique_mapping": ({"critique": {"R2": _entry("R2")}},
                         "critique: must be a list of rated items, got dict"),
    "entry_text": ({"critique": ["R2"]},
                   "critique[0]: must be a mapping with id and the four rates, got 'R2'"),
    "twice": ({"critique": [_entry("R2"), _entry("V1"), _entry("R2")]},
              "critique[2] (R2): rated twice, first at critique[0]"),
    "unknown_key": ({"critique": [{**_entry("R3"), "cites": 1}]},
                    f"critique[0] (R3).cites: unknown key, expected {KEYS}"),
    "missing_rate": ({"critique": [{"id": "R3", "cites_evidence": 1}]},
                     "critique[0] (R3): missing rate names_improvement"),
    "improvement_at_five": ({"critique": [_entry("R1", names_improvement=1)]},
                            "critique[0] (R1).names_improvement: does not apply at score 5, "
                            "leave it empty"),
    "empty": ({"critique": []}, "critique: no item rated"),
    "top_key": ({"critique": [_entry("R2")], "raters": "x"},
                "raters: unknown key, expected ['rater', 'task', 'critique']"),
    "note_number": ({"critique": [_entry("R2", note=5)]},
                    "critique[0] (R2).note: must be text, got 5"),
}  # fmt: skip


def test_broken_replies_are_one_line_and_lose_nothing(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = bundle.parent / "good.yaml"
    good.write_text(GOOD, encoding="utf-8")
    ingest_reply(bundle, good, "hand")
    assert main(["report", "--bundle", str(bundle), "--critique"]) == 0  # the files beside
    capsys.readouterr()
    kept = {
        p: p.read_bytes()
        for p in [*(bundle / "judgements" / "hand").iterdir(), *bundle.iterdir()]
        if p.is_file()
    }
    assert len(BROKEN) >= 12
    for name, (data, message) in BROKEN.items():
        path = bundle.parent / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        with pytest.raises(BundleError) as info:
            ingest_reply(bundle, path, "hand")
        assert str(info.value) == f"{path}: {message}", name
        args = ["ingest", "--bundle", str(bundle), "--reply", str(path), "--as", "hand"]
        assert main(args) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: {path}: {message}"], name
        for p, before in kept.items():
            assert p.read_bytes() == before, (name, p)


def test_a_reply_for_other_judgements_is_refused(bundle: Path) -> None:
    path = bundle.parent / "old.yaml"
    path.write_text(yaml.safe_dump({"task": "000000000000", "critique": [_entry("R2")]}))
    now = task_digest(critique_items(bundle, make_pack()))
    with pytest.raises(BundleError) as info:
        ingest_reply(bundle, path, "hand")
    assert str(info.value) == (
        f"{path}: task: the reply was written for other judgements (task 000000000000, the "
        f"bundle now {now}); write part B again with report --critique"
    )
    assert not (bundle / "judgements" / "hand").exists()
    assert json.loads(json.dumps(now)) == now
