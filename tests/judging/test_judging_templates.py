"""The holistic templates (``judge --template v1|v2``) and ``judge --judge-model``: v2 adds the
hardened rules to the same JSON contract; switching the template re-asks every holistic report
and no answer; the model override reaches the request and every cache key."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from judge_server import JudgeServer, first_user_text, is_holistic
from judging_factories import cells, make_pack, response, verdict, write_bundle

from touchstone_ray.cli import main
from touchstone_ray.errors import UsageError
from touchstone_ray.judging.cache import _sha256, judge_identity, report_cache_key
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.prompts import TEMPLATE_VERSION, holistic_prompt
from touchstone_ray.judging.runner import run_judge
from touchstone_ray.pack import Pack
from touchstone_ray.storage import read_jsonl

pytestmark = pytest.mark.usefixtures("ray_local")

SPEC = JudgeSpec(id="j", engine="openai", base_url="http://127.0.0.1:1/v1", model="m1")
HOLISTIC = json.dumps(
    {
        "Q1": {"score": 4, "rationale": "korrekt [A1]", "cited_prompts": ["A1"]},
        "Q6": {"score": 3, "rationale": "vorsichtig [B1]", "cited_prompts": ["B1"]},
    }
)
ANSWER = '{"score": 4, "red_flag": false, "rationale": "solide"}'


def test_v2_adds_the_rules_to_the_same_contract(pack: Pack) -> None:
    variant = pack.prompt_variants[0]
    evidence = [verdict("A1", 4)]
    v1 = holistic_prompt(pack, variant, evidence, token="abcd1234", template="v1")
    v2 = holistic_prompt(pack, variant, evidence, token="abcd1234", template="v2")
    assert v1.schema == v2.schema
    text1, text2 = v1.messages[1]["content"], v2.messages[1]["content"]
    assert "## Regeln für jede Begründung" not in text1
    rules = text2.split("## Regeln für jede Begründung\n", 1)[1].split("\n\n", 1)[0]
    assert [line[:2] for line in rules.splitlines()] == ["1.", "2.", "3.", "4.", "5."]
    assert "beide Nachbarstufen" in rules and "die eine Änderung" in rules
    assert (
        text2.replace("\n\n## Regeln für jede Begründung\n" + rules, "") == text1
    )  # nothing else differs
    en = make_pack(language="en")
    en_text = holistic_prompt(en, en.prompt_variants[0], evidence).messages[1]["content"]
    assert "against both neighbouring levels" in en_text


def test_report_key_v1_is_the_old_key_and_v2_another() -> None:
    evidence = [{"key": "m|b|A1|1", "cache_key": "c", "score": 4, "red_flag": False}]
    old = _sha256(
        [
            judge_identity(SPEC),
            TEMPLATE_VERSION,
            "sha",
            "m",
            "b",
            [["m|b|A1|1", "c", 4, False, "None"]],
        ]
    )
    assert report_cache_key(SPEC, "sha", "m", "b", evidence, template="v1") == old
    assert report_cache_key(SPEC, "sha", "m", "b", evidence) != old
    other = SPEC.model_copy(update={"model": "m2"})
    assert report_cache_key(other, "sha", "m", "b", evidence, template="v1") != old


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    srv = JudgeServer(lambda body: HOLISTIC if is_holistic(body) else ANSWER)
    srv.start()
    yield srv
    srv.stop()


def _setup(tmp_path: Path, server: JudgeServer) -> tuple[Path, Path]:
    pack = make_pack()
    answers = [response(p, variant=v, repeat=r) for _, v, p, r in cells(pack)]
    bundle = write_bundle(tmp_path / "b", pack, answers)
    judges = [
        {"id": jid, "engine": "openai", "base_url": server.base_url, "model": "c"}
        for jid in ("canned", "other")
    ]
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump({"judges": judges}))
    return bundle, config


def _reports(bundle: Path) -> list[dict[str, Any]]:
    return read_jsonl(bundle / "judgements" / "canned" / "reports.jsonl").records


def test_switching_template_reasks_every_report_and_no_answer(
    tmp_path: Path, server: JudgeServer
) -> None:
    bundle, config = _setup(tmp_path, server)
    out = io.StringIO()
    assert run_judge(bundle, config, judges=["canned"], out=out, template="v1") == 0
    assert "holistic template v1" in out.getvalue()
    assert len(server.answer_bodies()) == 10
    v1_texts = [first_user_text(b) for b in server.holistic_bodies()]
    assert len(v1_texts) == 2 and not any("Regeln für jede" in t for t in v1_texts)
    assert [r["holistic_template"] for r in _reports(bundle)] == ["v1", "v1"]

    server.reset()  # the default v2: every report again, no verdict
    out = io.StringIO()
    assert run_judge(bundle, config, judges=["canned"], out=out) == 0
    assert "10 answers: 10 stored, 0 by rule, 0 to ask; 2 reports (0 stored" in out.getvalue()
    assert server.answer_bodies() == []
    assert len(server.holistic_bodies()) == 2
    assert all("Regeln für jede" in first_user_text(b) for b in server.holistic_bodies())
    assert [r["holistic_template"] for r in _reports(bundle)] == ["v1", "v1", "v2", "v2"]

    server.reset()  # back to v1: its stored reports are current again, nothing asked
    out = io.StringIO()
    assert run_judge(bundle, config, judges=["canned"], out=out, template="v1") == 0
    assert "2 reports (2 stored); holistic template v1" in out.getvalue()
    assert server.answer_bodies() == [] and server.holistic_bodies() == []


def test_judge_model_override(tmp_path: Path, server: JudgeServer) -> None:
    bundle, config = _setup(tmp_path, server)
    assert run_judge(bundle, config, judges=["canned"], out=io.StringIO()) == 0
    server.reset()
    out = io.StringIO()
    code = run_judge(bundle, config, judges=["canned"], out=out, judge_model="c-large")
    assert code == 0
    assert "; model c-large for this run" in out.getvalue()
    assert "10 answers: 0 stored" in out.getvalue()  # another model: every answer asked again
    bodies = server.answer_bodies() + server.holistic_bodies()
    assert {b["model"] for b in bodies} == {"c-large"}
    verdicts = read_jsonl(bundle / "judgements" / "canned" / "verdicts.jsonl").records
    assert {v["judge_model"] for v in verdicts[-10:]} == {"c-large"}
    with pytest.raises(UsageError, match=r"--judge-model: overrides the model of one judge"):
        run_judge(bundle, config, out=io.StringIO(), judge_model="x")
    with pytest.raises(UsageError, match=r"--template: expected one of v1, v2, got 'v3'"):
        run_judge(bundle, config, out=io.StringIO(), template="v3")


def test_cli_flags(tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]) -> None:
    bundle, config = _setup(tmp_path, server)
    args = ["judge", "--bundle", str(bundle), "--judge-config", str(config)]
    assert main([*args, "--template", "v9"]) == 2
    assert capsys.readouterr().err.strip().endswith("got 'v9'")
    assert main([*args, "--judge-model", "x"]) == 2
    assert "choose one with --judges" in capsys.readouterr().err
