"""What a judge still has to do (no Ray, no requests): cache keys decide reuse; rule-based
verdicts need no call; failed calls are asked again, unreadable replies are not; a report is
asked again when its evidence changed; the request extras of suppress_thinking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judging_factories import make_pack, response

from touchstone_ray.bundle import JudgeFiles, Layout, record_extras
from touchstone_ray.judging.cache import answer_cache_key, report_cache_key
from touchstone_ray.judging.client import judge_extra_body
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.driver import JudgeRun, progress_line
from touchstone_ray.judging.worklist import plan_judge
from touchstone_ray.records import EvalResponse

SPEC = JudgeSpec(id="j", engine="openai", base_url="http://127.0.0.1:1/v1", model="judge-m")
SHA = "a" * 64


def responses() -> list[EvalResponse]:
    return [
        response("A1", response_text="eins"),
        response("A2", response_text="zwei"),
        response("B1", response_text="", reasoning_text="hm", reasoning_only=True),
        response("B1", repeat=2, ok=False, response_text="", error_kind="connect"),
        response("B2", response_text=""),
    ]


def stored_verdict(r: EvalResponse, **fields: Any) -> dict[str, Any]:
    pack = make_pack()
    key = answer_cache_key(
        SPEC, pack, pack.prompt(r.prompt_id), pack.variant(r.variant), r.response_text
    )
    base = {
        "key": r.key,
        "model": r.model,
        "variant": r.variant,
        "prompt_id": r.prompt_id,
        "repeat": r.repeat,
        "category": r.category,
        "judge": "j",
        "score": 4,
        "status": "scored",
        "raw": "{}",
        **record_extras(
            cache_key=key, judge_model=SPEC.model, error=None, call_failed=False, n_calls=1
        ),
    }
    base.update(fields)
    return base


def test_cache_key_parts() -> None:
    pack = make_pack()
    a1, a2 = pack.prompt("A1"), pack.prompt("A2")
    baseline, none = pack.variant("baseline"), pack.variant("none")
    base = answer_cache_key(SPEC, pack, a1, baseline, "text")
    assert len(base) == 64
    flagged = a1.model_copy(update={"red_flags": ("rot A1", "neu")})
    rescaled = pack.model_copy(update={"scale": {**pack.scale, 3: "okay"}})
    for changed in (
        answer_cache_key(SPEC.model_copy(update={"model": "other"}), pack, a1, baseline, "text"),
        answer_cache_key(SPEC.model_copy(update={"temperature": 0.7}), pack, a1, baseline, "text"),
        answer_cache_key(SPEC.model_copy(update={"max_tokens": 64}), pack, a1, baseline, "text"),
        answer_cache_key(
            SPEC.model_copy(update={"extra_body": {"top_k": 1}}), pack, a1, baseline, "text"
        ),
        answer_cache_key(
            SPEC.model_copy(update={"suppress_thinking": False}), pack, a1, baseline, "text"
        ),
        answer_cache_key(SPEC, pack, a1, baseline, "text", repeats=3),
        answer_cache_key(SPEC, pack, flagged, baseline, "text"),
        answer_cache_key(SPEC, rescaled, a1, baseline, "text"),
        answer_cache_key(SPEC, pack, a1, baseline, "text!"),
        answer_cache_key(SPEC, pack, a2, baseline, "text"),
        answer_cache_key(SPEC, pack, a1, none, "text"),
    ):
        assert changed != base
    moved = SPEC.model_copy(
        update={"base_url": "http://10.0.0.9:8000/v1", "concurrency": 8, "timeout_s": 5.0}
    )
    assert answer_cache_key(moved, pack, a1, baseline, "text") == base
    v1 = [{"key": "k1", "cache_key": "c", "score": 4, "red_flag": False, "status": "scored"}]
    v2 = [{**v1[0], "score": 3}]
    assert report_cache_key(SPEC, SHA, "x", "baseline", v1) != report_cache_key(
        SPEC, SHA, "x", "baseline", v2
    )


def test_fresh_plan_rules_and_jobs(tmp_path: Path) -> None:
    plan = plan_judge(SPEC, JudgeFiles(Layout(tmp_path), "j"), make_pack(), SHA, responses())
    assert [j.prompt_id for j in plan.jobs] == ["A1", "A2"]
    statuses = {r["prompt_id"] + str(r["repeat"]): r["status"] for r in plan.rule_records}
    assert statuses == {
        "B11": "unscored_reasoning_only",
        "B12": "unscored_generation_failed",
        "B21": "scored",
    }
    assert all(r["n_calls"] == 0 and len(r["cache_key"]) == 64 for r in plan.rule_records)
    assert not plan.complete and not plan.report_jobs


def test_reuse_and_what_is_asked_again(tmp_path: Path) -> None:
    pack = make_pack()
    rs = responses()
    store = JudgeFiles(Layout(tmp_path), "j")
    store.write_verdict(stored_verdict(rs[0]))
    store.write_verdict(stored_verdict(rs[1], cache_key="stale"))
    plan = plan_judge(SPEC, store, pack, SHA, rs)
    assert [j.prompt_id for j in plan.jobs] == ["A2"] and plan.n_reused == 1

    # the failed call is asked again, the unreadable reply is kept
    store.write_verdict(stored_verdict(rs[1], status="judge_error", score=None, call_failed=True))
    assert [j.prompt_id for j in plan_judge(SPEC, store, pack, SHA, rs).jobs] == ["A2"]
    store.write_verdict(stored_verdict(rs[1], status="judge_error", score=None, error="x"))
    assert not plan_judge(SPEC, store, pack, SHA, rs).jobs

    # another judge model or another answer: asked again
    other = SPEC.model_copy(update={"model": "judge-n"})
    assert len(plan_judge(other, store, pack, SHA, rs).jobs) == 2
    rs[0] = rs[0].model_copy(update={"response_text": "eins, neu"})
    assert [j.prompt_id for j in plan_judge(SPEC, store, pack, SHA, rs).jobs] == ["A1"]
    store.close()


def test_a_later_failed_or_foreign_record_does_not_hide_a_current_one(tmp_path: Path) -> None:
    pack = make_pack()
    rs = responses()
    store = JudgeFiles(Layout(tmp_path), "j")
    good = [stored_verdict(rs[0], score=4), stored_verdict(rs[1], score=5)]
    for record in good:
        store.write_verdict(record)
    # a run with another configuration of judge "j": one verdict, then a failed call
    store.write_verdict(stored_verdict(rs[0], cache_key="other config", score=1))
    store.write_verdict(
        stored_verdict(rs[1], cache_key="other config", status="judge_error", call_failed=True)
    )
    plan = plan_judge(SPEC, store, pack, SHA, rs)
    assert not plan.jobs and plan.n_reused == 2
    assert [plan.verdicts[r.key]["score"] for r in rs[:2]] == [4, 5]
    assert plan.restored == [("verdicts", good[0]), ("verdicts", good[1])]

    for family, record in plan.restored:
        store.append(family, record)
    store.close()
    assert [store.verdicts()[r.key].score for r in rs[:2]] == [4, 5]
    lines = store.verdicts_path.read_bytes().splitlines()
    assert lines[-2:] == lines[:2]  # appended again byte for byte
    again = plan_judge(SPEC, store, pack, SHA, rs)
    assert again.n_reused == 2 and again.restored == []


def test_report_reused_until_its_evidence_changes(tmp_path: Path) -> None:
    pack = make_pack()
    rs = responses()
    store = JudgeFiles(Layout(tmp_path), "j")
    for r in rs[:2]:
        store.write_verdict(stored_verdict(r))
    plan = plan_judge(SPEC, store, pack, SHA, rs)
    for record in plan.rule_records:
        store.write_verdict(record)
    assert len(plan.report_jobs) == 1
    job = plan.report_jobs[0]
    store.write_report(
        {"model": "m", "variant": "baseline", "judge": "j", "cache_key": job.cache_key}
    )
    store.close()
    plan = plan_judge(SPEC, store, pack, SHA, rs)
    assert plan.complete and plan.n_reports_reused == 1

    store.write_verdict(stored_verdict(rs[0], score=2))  # same answer, new verdict
    store.close()
    plan = plan_judge(SPEC, store, pack, SHA, rs)
    assert len(plan.report_jobs) == 1 and not plan.complete


def test_suppress_thinking_extras() -> None:
    assert judge_extra_body(SPEC) == {"chat_template_kwargs": {"enable_thinking": False}}
    ollama = SPEC.model_copy(update={"engine": "ollama", "extra_body": {"options": {"num_ctx": 8}}})
    assert judge_extra_body(ollama) == {"options": {"num_ctx": 8}, "think": False}
    own = SPEC.model_copy(
        update={"extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}
    )
    assert judge_extra_body(own) == {"chat_template_kwargs": {"enable_thinking": True}}
    off = SPEC.model_copy(update={"suppress_thinking": False})
    assert judge_extra_body(off) == {}


def test_progress_line_counts_calibration_while_it_runs(tmp_path: Path) -> None:
    plan = plan_judge(SPEC, JudgeFiles(Layout(tmp_path), "j"), make_pack(), SHA, responses())
    run = JudgeRun(plan=plan, answers_total=2, answers_done=1, reports_done=0, n_errors=1)
    assert progress_line(run) == "judge j: 1/2 answers, 0 reports, 1 judge errors"
    run.calibration_total, run.calibration_done = 6, 3
    assert progress_line(run) == (
        "judge j: calibration 3/6, 1/2 answers, 0 reports, 1 judge errors"
    )
