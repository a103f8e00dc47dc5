"""An answer to a prompt the server cut (``input_truncated``) is never scored (SPEC §10): the
plan gives it ``unscored_input_truncated`` without a judge call, and the scorecard counts it
with the other unscored verdicts."""

from __future__ import annotations

from pathlib import Path

from judging_factories import make_pack, response

from touchstone_ray.bundle import JudgeFiles, Layout
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.worklist import plan_judge
from touchstone_ray.records import Verdict
from touchstone_ray.scoring.formulas import INPUT_CUT_RATIONALE, pre_judge_verdict
from touchstone_ray.scoring.scorecard import build_scorecard

SPEC = JudgeSpec(id="j", engine="openai", base_url="http://127.0.0.1:1/v1", model="judge-m")
SHA = "a" * 64


def test_a_cut_prompt_is_unscored_whatever_the_answer() -> None:
    pack = make_pack()
    cut = {"input_truncated": True, "prompt_tokens": 4096, "context_tokens": 4096}
    for fields in (
        {"response_text": "Eine gute Antwort."},
        {"response_text": ""},  # an empty answer would score 1 and red-flag B1
        {"response_text": "", "reasoning_text": "hm", "reasoning_only": True},
    ):
        r = response("B1", **cut, **fields)
        v = pre_judge_verdict(r, pack.prompt("B1"), judge="j")
        assert v is not None
        assert (v.status, v.score, v.red_flag, v.rationale) == (
            "unscored_input_truncated",
            None,
            False,
            INPUT_CUT_RATIONALE,
        )
        assert v.safety_critical is True and v.judge == "j"


def test_unknown_or_false_truncation_leaves_the_answer_to_the_judge() -> None:
    pack = make_pack()
    for flag in (None, False):
        r = response("A1", input_truncated=flag)
        assert pre_judge_verdict(r, pack.prompt("A1")) is None
    failed = response("A1", ok=False, response_text="", input_truncated=True)
    v = pre_judge_verdict(failed, pack.prompt("A1"))
    assert v is not None and v.status == "unscored_generation_failed"


def test_plan_writes_the_rule_verdict_and_asks_no_judge(tmp_path: Path) -> None:
    responses = [
        response("A1", response_text="eins"),
        response("A2", response_text="zwei", input_truncated=True, prompt_tokens=2048),
    ]
    plan = plan_judge(SPEC, JudgeFiles(Layout(tmp_path), "j"), make_pack(), SHA, responses)
    assert [j.prompt_id for j in plan.jobs] == ["A1"]
    (rule,) = plan.rule_records
    assert (rule["prompt_id"], rule["status"], rule["score"]) == (
        "A2",
        "unscored_input_truncated",
        None,
    )
    assert rule["n_calls"] == 0 and rule["judge_model"] == "judge-m"


def test_scorecard_counts_cut_prompts_as_unscored() -> None:
    pack = make_pack()
    rs = [response("A1"), response("A2", input_truncated=True)]
    verdicts = [
        Verdict(key=rs[0].key, model="m", variant="baseline", prompt_id="A1", repeat=1,
                category="A", judge="j", score=4, status="scored"),
        Verdict(key=rs[1].key, model="m", variant="baseline", prompt_id="A2", repeat=1,
                category="A", judge="j", status="unscored_input_truncated"),
    ]  # fmt: skip
    scorecard = build_scorecard(pack, rs, verdicts, [], judges=["j"], vote="any", simulated=False)
    card = scorecard.model_dump(mode="json")
    (row,) = card["rows"]
    assert (row["n_scored"], row["n_unscored"], row["n_judge_errors"]) == (1, 1, 0)
    assert row["mean_answer_score"] == 4.0
