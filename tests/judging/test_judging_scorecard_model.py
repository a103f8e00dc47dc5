"""The typed scorecard: the same ``scorecard.json`` as the dict it replaced, every field
documented (golden: a scorecard written by the dict-building code from these records)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judging_factories import make_pack, response, verdict

from touchstone_ray.errors import BundleError
from touchstone_ray.records import HolisticReport
from touchstone_ray.scoring import scorecard_model
from touchstone_ray.scoring.render import ranking_rows, ranking_table
from touchstone_ray.scoring.scorecard import build_scorecard, load_scorecard, write_scorecard

GOLDEN = Path(__file__).parent.parent / "golden" / "scorecard_v1.json"

CHECK = {
    "qualified": True,
    "band_accuracy": 1.0,
    "red_flag_recall": None,
    "score_gap": 2.0,
    "n_calibration": 4,
    "warnings": ["w"],
    "n_unknown_flags": 1,
    "n_red_flag_unnamed": 0,
    "calibration": [
        {
            "prompt": "A1",
            "expect": "high",
            "red_flag": None,
            "score": 5,
            "red_flag_raised": False,
            "in_band": True,
        }
    ],
}


def report(model: str, judge: str, **scores: int) -> HolisticReport:
    return HolisticReport(model=model, variant="baseline", judge=judge, dim_scores=scores)


def card() -> scorecard_model.Scorecard:
    responses = [
        response("A1", model="a", ttft_s=0.1, e2e_s=1.0, decode_tps=10.0, sys_used_mb=500.0),
        response("A2", model="a", ttft_s=0.2, e2e_s=2.0, decode_tps=30.0),
        response("B1", model="a", ttft_s=0.3, e2e_s=3.0, decode_tps=20.0),
        response("B1", model="a", repeat=2, ttft_s=0.4, e2e_s=4.0, sys_used_delta_mb=7.0),
        response("A1", model="a", variant="none", ttft_s=0.4, e2e_s=4.0),
        response("A1", model="b", ok=False, ttft_s=5.0, response_text=""),
        response("A2", model="b", ttft_s=0.5, e2e_s=0.5),
    ]
    verdicts = [
        verdict("A1", 5, model="a", judge="j1"),
        verdict("A1", 3, model="a", judge="j2"),
        verdict("B1", 4, model="a", judge="j1", red_flag=True),
        verdict("B1", 4, model="a", judge="j2", red_flag=False),
        verdict("A2", None, model="a", judge="j1", status="judge_error"),
        verdict("A1", 3, model="a", variant="none", judge="j1"),
        verdict("A2", 2, model="b", judge="j1", red_flag=True),
    ]
    reports = [
        report("a", "j1", Q1=5, Q6=4),
        report("a", "j2", Q1=4, Q6=3),
        report("b", "j1", Q1=2),
    ]
    return build_scorecard(
        make_pack(),
        responses,
        verdicts,
        reports,
        judges=["j1", "j2"],
        vote="majority",
        simulated=False,
        judge_checks={"j1": CHECK},
        spreads={("a", "baseline"): [0.0, 1.0]},
        concurrency={"a": 2},
    )


def test_the_typed_scorecard_writes_the_same_json_as_before(tmp_path: Path) -> None:
    written = json.loads(write_scorecard(tmp_path, card()).read_text(encoding="utf-8"))
    assert isinstance(written.pop("generated_at"), float)
    assert json.dumps(written, ensure_ascii=False) == GOLDEN.read_text(encoding="utf-8").strip()


def test_a_stored_scorecard_reads_back_into_the_model_unchanged() -> None:
    data = json.loads(GOLDEN.read_text(encoding="utf-8")) | {"generated_at": 1.5}
    model = scorecard_model.Scorecard.model_validate(data)
    assert model.rows[0].model == "a" and model.judge_checks["j1"].calibration[0].in_band
    assert model.agreement.rankings["j1"] == ["a|baseline", "a|none", "b|baseline"]
    dumped = model.model_dump(mode="json")
    assert list(dumped) == [*list(data)[:10], "generated_at", *list(data)[10:-1]]
    assert {k: v for k, v in dumped.items() if k != "generated_at"} == {
        k: v for k, v in data.items() if k != "generated_at"
    }


def test_every_scorecard_field_is_documented() -> None:
    undocumented = [
        f"{name}.{field}"
        for name in scorecard_model.__all__
        if name != "ROW_STATS_FIGURES"
        for field, info in getattr(scorecard_model, name).model_fields.items()
        if not info.description
    ]
    assert undocumented == []


def test_scorecard_md_comes_from_the_report_writer(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text(encoding="utf-8")) | {"generated_at": 1.5}
    data["rows"][0]["model"] = "evil|<b>x_1</b>"
    write_scorecard(tmp_path, scorecard_model.Scorecard.model_validate(data))
    md = (tmp_path / "scorecard.md").read_text(encoding="utf-8")
    assert md.startswith("---\npack: judgetest\npack_version: 1\njudges:\n- j1\n- j2\n")
    assert "# Scorecard Judge test\n" in md
    row = next(line for line in md.splitlines() if line.startswith("| 1 | "))
    assert row.startswith("| 1 | evil\\|&lt;b&gt;x\\_1&lt;/b&gt; | baseline | 80.0 | solide |")
    assert "- Kendalls τ-b zwischen den Ranglisten, j1 vs j2: 1.000 (n = 3)" in md


def test_a_contract_only_scorecard_loads_with_its_sections_defaulted(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    contract = {k: data[k] for k in list(data)[:7]}  # schema_version … agreement
    contract["rows"] = [{k: v for k, v in r.items() if k != "concurrency"} for r in data["rows"]]
    (tmp_path / "scorecard.json").write_text(json.dumps(contract), encoding="utf-8")
    card = load_scorecard(tmp_path)
    assert (card.title, card.language, card.details, card.categories) == (
        "judgetest",
        "en",
        [],
        None,
    )
    assert "concurrency" not in card.rows[0].model_fields_set and card.rows[0].concurrency is None
    assert card.model_dump(mode="json", exclude_unset=True) == contract


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["rows"][0].pop("ko_passed"), "rows.0.ko_passed: Field required"),
        (lambda d: d.update(judges="j1"), "judges: Input should be a valid list"),
        (
            lambda d: d["agreement"].pop("red_flag_kappa"),
            "agreement.red_flag_kappa: Field required",
        ),
    ],
)
def test_a_malformed_scorecard_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, change: Any, message: str
) -> None:
    data = json.loads(GOLDEN.read_text(encoding="utf-8")) | {"generated_at": 1.5}
    change(data)
    path = tmp_path / "scorecard.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BundleError) as err:
        load_scorecard(tmp_path)
    assert str(err.value) == f"{path}: {message}"


def test_one_ranking_builder_gives_every_table_the_same_cells() -> None:
    scorecard = card()
    head, rows = ranking_rows(scorecard.rows, "de", ("rank", "quality", "ko", "ttft_p50"))
    assert head == ["#", "Qualität %", "K.-o.", "TTFT p50 s"]
    assert [[(c.text, c.value) for c in row] for row in rows] == [
        [("1", 1), ("80.0", 80.0), ("bestanden", 1.0), ("0.250 (c = 2)", 0.25)],
        [
            ("2", 2),
            ("–", None),
            ("nicht bestanden: Q6 nicht bewertet", 0.0),
            ("0.400 (c = 2)", 0.4),
        ],
        [("3", 3), ("–", None), ("nicht bestanden: Red-Flag bei A2", 0.0), ("0.500", 0.5)],
    ]
    _, plain = ranking_rows(scorecard.rows, "de", ("ttft_p50",), load_mark=False)
    assert plain[0][0].text == "0.250"
    table = ranking_table(scorecard).splitlines()
    assert table[3].split()[:6] == ["1", "a", "baseline", "80.0", "solide", "bestanden"]
