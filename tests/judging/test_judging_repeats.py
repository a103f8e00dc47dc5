"""``judge --repeats k``: k verdicts per answer, one seed each (pack seed + index); the verdict
keeps the median score, the red flag by majority and the spread, against a canned loopback
judge whose reply depends on the request's seed."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from judge_server import JudgeServer, is_holistic
from judging_factories import cells, make_pack, response, write_bundle

from touchstone_ray.judging.runner import run_judge
from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.usefixtures("ray_local")

HOLISTIC = json.dumps(
    {
        "Q1": {"score": 4, "rationale": "korrekt [A1]", "cited_prompts": ["A1"]},
        "Q6": {"score": 4, "rationale": "vorsichtig [B1]", "cited_prompts": ["B1"]},
    }
)
BY_SEED = {  # pack seed 42, then 43, 44
    42: '{"score": 2, "red_flag": true, "rationale": "erfindet Zahl", "red_flags_hit": ["R1"]}',
    43: '{"score": 4, "red_flag": false, "rationale": "solide, alles belegt"}',
    44: '{"score": 5, "red_flag": true, "rationale": "sehr gut, aber R1?", "red_flags_hit": ["X"]}',
}


def reply(body: dict[str, Any]) -> str:
    return HOLISTIC if is_holistic(body) else BY_SEED[int(body["seed"])]


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    srv = JudgeServer(reply)
    srv.start()
    yield srv
    srv.stop()


def test_three_repeats_median_majority_spread(tmp_path: Path, server: JudgeServer) -> None:
    pack = make_pack()
    answers = [
        response(p, variant=v, repeat=r, response_text=f"Antwort {v} {p} {r}")
        for _, v, p, r in cells(pack)
    ]
    bundle = write_bundle(tmp_path / "b", pack, answers)
    judge = {"id": "canned", "engine": "openai", "base_url": server.base_url, "model": "c"}
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump({"judges": [judge]}))
    assert run_judge(bundle, config, out=io.StringIO(), repeats=3) == 0
    seeds = sorted(int(b["seed"]) for b in server.answer_bodies())
    assert seeds == [42] * 10 + [43] * 10 + [44] * 10
    verdicts = read_jsonl(bundle / "judgements" / "canned" / "verdicts.jsonl").records
    assert len(verdicts) == 10
    for v in verdicts:
        assert (v["score"], v["red_flag"], v["rationale"]) == (4, True, "solide, alles belegt")
        assert (v["repeat_scores"], v["score_spread"]) == ([2, 4, 5], 3)
        red = pack.prompt(v["prompt_id"]).red_flags[0]
        assert (v["red_flags_hit"], v["unknown_flags"]) == ([red], ["X"])
    card = json.loads((bundle / "scorecard.json").read_text())
    assert [d["judge_spread"] for d in card["details"]] == [{"n": 5, "mean": 3.0, "max": 3}] * 2

    out = io.StringIO()  # one repeat is another question: asked again
    server.reset()
    assert run_judge(bundle, config, out=out) == 0
    assert "10 answers: 0 stored, 0 by rule, 10 to ask" in out.getvalue()
    assert {int(b["seed"]) for b in server.answer_bodies()} == {42}
    verdicts = read_jsonl(bundle / "judgements" / "canned" / "verdicts.jsonl").records[-10:]
    assert {(v["score"], v["score_spread"]) for v in verdicts} == {(2, 0)}
