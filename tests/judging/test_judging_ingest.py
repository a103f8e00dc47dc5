"""``ingest``: an outside rater's filled rating task stored as a judge (holistic reports only),
every broken reply a one-line error with exit 2 and nothing written, and its agreement with
the local judges computed by hand from a hand-made scorecard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judging_factories import make_pack, response, write_bundle

from touchstone_ray.cli import main
from touchstone_ray.errors import BundleError
from touchstone_ray.scoring.ingest import ingest_reply, outside_raters
from touchstone_ray.storage import read_jsonl

HERE = Path(__file__).resolve().parent
BAD = HERE / "bad_replies"

# Local judges' own views per row (the scorecard's ``details``); the pack: Q1 ×3, Q6 ×3,
# K.-o. Q6 ≤ 2, scope all.
VIEWS = {
    "baseline": {
        "j1": {"dim_scores": {"Q1": 4, "Q6": 3}, "quality_pct": 70.0, "ko_passed": True},
        "j2": {"dim_scores": {"Q1": 5, "Q6": 4}, "quality_pct": 90.0, "ko_passed": True},
    },
    "none": {
        "j1": {"dim_scores": {"Q1": 3, "Q6": 3}, "quality_pct": 60.0, "ko_passed": True},
        "j2": {"dim_scores": {"Q1": 2, "Q6": 1}, "quality_pct": 30.0, "ko_passed": False},
    },
}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = write_bundle(
        tmp_path / "b",
        make_pack(),
        [response("A1", variant="baseline"), response("A1", variant="none")],
    )
    kappa = {"method": "cohen_kappa", "value": None, "reason": "no red flags"}
    card = {  # the Contract fields and the local judges' views, nothing else
        "schema_version": 1,
        "pack_id": "judgetest",
        "pack_version": 1,
        "judges": ["j1", "j2"],
        "simulated": True,
        "rows": [],
        "agreement": {"red_flag_vote": "any", "n_judges": 2, "dimension_alpha": {},
                      "red_flag_kappa": kappa, "ranking_tau": {}, "rankings": {}},
        "details": [{"model": "m", "variant": v, "judges": views} for v, views in VIEWS.items()],
    }  # fmt: skip
    (root / "scorecard.json").write_text(json.dumps(card))
    return root


def test_good_reply_and_agreement_by_hand(bundle: Path) -> None:
    result = ingest_reply(bundle, HERE / "good_reply.yaml", "outside-ai")
    # The rater: baseline Q1 5, Q6 3, no red flag → quality (15 + 9) / 30 = 80 %, K.-o. passed;
    # none Q1 2, Q6 2, red flag B1 → quality 40 %, K.-o. failed.
    # j1: |Δ| Q1 (1 + 1) / 2 = 1.0, Q6 (0 + 1) / 2 = 0.5; K.-o. same on baseline only → 0.5;
    #     quality ((80 − 70) + (40 − 60)) / 2 = −5.0.
    # j2: |Δ| Q1 (0 + 0) / 2 = 0.0, Q6 (1 + 1) / 2 = 1.0; K.-o. same on both → 1.0;
    #     quality ((80 − 90) + (40 − 30)) / 2 = 0.0.
    assert result == {
        "rows": 2,
        "agreement": {
            "j1": {
                "n_rows": 2,
                "mean_abs_delta": {"Q1": 1.0, "Q6": 0.5},
                "ko_concordance": 0.5,
                "quality_pct_diff": -5.0,
            },
            "j2": {
                "n_rows": 2,
                "mean_abs_delta": {"Q1": 0.0, "Q6": 1.0},
                "ko_concordance": 1.0,
                "quality_pct_diff": 0.0,
            },
        },
    }
    folder = bundle / "judgements" / "outside-ai"
    assert not (folder / "verdicts.jsonl").exists()
    reports = read_jsonl(folder / "reports.jsonl").records
    assert [(r["variant"], r["dim_scores"], r["red_flagged"]) for r in reports] == [
        ("baseline", {"Q1": 5, "Q6": 3}, []),
        ("none", {"Q1": 2, "Q6": 2}, ["B1"]),
    ]
    assert reports[1]["cited_prompts"] == {"Q1": ["A2"], "Q6": ["B1"]}
    assert list(outside_raters(bundle)) == ["outside-ai"]


ROW = "m/baseline"
BROKEN = {
    "missing.yaml": "no such rating reply file",
    "empty.yaml": "the rating reply must be a YAML mapping, got an empty document",
    "syntax.yaml": (
        "line 3, column 1: YAML syntax error: expected ',' or '}', but got '<stream end>'"
    ),
    "list.yaml": "the rating reply must be a YAML mapping, got a list",
    "unknown_key.yaml": "raters: unknown key (got 'x')",
    "no_reports.yaml": "reports: List should have at least 1 item after validation, not 0 (got [])",
    "unknown_row.yaml": (
        "reports[0]: no such model/variant in the bundle (has m/baseline, m/none) "
        "(got 'ghost/baseline')"
    ),
    "twice.yaml": f"reports[2]: rated twice, first at reports[0] (got '{ROW}')",
    "unknown_dim.yaml": "reports[0].scores.Q9: unknown dimension, expected ['Q1', 'Q6'] (got 'Q9')",
    "missing_dim.yaml": "reports[0].scores: missing dimensions ['Q6'] (got ['Q1'])",
    "score_six.yaml": (
        "reports[0].scores.Q1.score: Input should be less than or equal to 5 (got 6)"
    ),
    "score_text.yaml": "reports[0].scores.Q1.score: Input should be a valid integer (got '4/5')",
    "cited_unknown.yaml": ("reports[0].scores.Q1.cited_prompts[1]: unknown prompt id (got 'Z7')"),
    "flagged_unknown.yaml": "reports[0].red_flagged[1]: unknown prompt id (got 'X1')",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_reply_is_one_line_and_writes_nothing(bundle: Path, name: str) -> None:
    path = BAD / name
    with pytest.raises(BundleError) as info:
        ingest_reply(bundle, path, "outside-ai")
    assert str(info.value) == f"{path}: {BROKEN[name]}"
    assert not (bundle / "judgements" / "outside-ai" / "reports.jsonl").exists()


def test_cli_exit_codes_and_names(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ingest", "--bundle", str(bundle), "--reply"]
    assert main([*args, str(BAD / "score_six.yaml"), "--as", "outside"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("Input should be less than or equal to 5 (got 6)")
    assert main([*args, str(HERE / "good_reply.yaml"), "--as", "bad name!"]) == 2
    assert "--as: 'bad name!' is not a valid judge id" in capsys.readouterr().err
    (bundle / "judgements" / "j1").mkdir(parents=True)
    (bundle / "judgements" / "j1" / "verdicts.jsonl").write_text("")
    assert main([*args, str(HERE / "good_reply.yaml"), "--as", "j1"]) == 2
    assert "--as: 'j1' is a local judge of this bundle" in capsys.readouterr().err
    assert main([*args, str(HERE / "good_reply.yaml"), "--as", "outside"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ingested 2 rated rows as outside\n")
    assert json.loads(out.split("\n", 1)[1])["j2"]["ko_concordance"] == 1.0
