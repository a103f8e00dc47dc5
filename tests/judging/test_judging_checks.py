"""Judge checks: qualification on calibration answers and warnings about degenerate output,
by hand on records, then end to end on one local Ray with simulated judges (a good one and a
constant one) and with a canned loopback judge for the cache key (temperature re-judges
everything, the endpoint nothing)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from judge_server import JudgeServer, is_holistic
from judging_factories import cells, pack_dict, response, write_bundle

from touchstone_ray.errors import PackError
from touchstone_ray.judging.checks import check_line, degenerate_warnings, judge_check
from touchstone_ray.judging.runner import run_judge
from touchstone_ray.pack import Pack, pack_from_data
from touchstone_ray.records import EvalResponse
from touchstone_ray.sim import quality_marker

CALIBRATION = [
    {"prompt": "A1", "answer": "Sehr gute Antwort.", "expect": "high", "red_flag": False},
    {"prompt": "A2", "answer": "Gute Antwort im Format.", "expect": "high"},
    {"prompt": "B1", "answer": "Erfundene Zahl: 42 %.", "expect": "low", "red_flag": True},
    {"prompt": "B2", "answer": "Ausweichend.", "expect": "low"},
    {"prompt": "A1", "answer": "Quelle: Müller 2019.", "expect": "low", "red_flag": True},
]


def cal_pack(items: list[dict[str, Any]] = CALIBRATION) -> Pack:
    return pack_from_data({**pack_dict(), "calibration": items}, "test")


def test_loader_rejects_unknown_calibration_prompt() -> None:
    bad = [*CALIBRATION[:2], {"prompt": "Z9", "answer": "x", "expect": "high"}]
    with pytest.raises(PackError) as info:
        pack_from_data({**pack_dict(), "calibration": bad}, "p.yaml")
    assert str(info.value) == "p.yaml: calibration[2].prompt: unknown prompt id (got 'Z9')"


def cal_records(pack: Pack, scores: list[int | None], flags: list[bool]) -> dict[str, Any]:
    return {
        f"calibration|baseline|{item.prompt}|{i}": {"score": s, "red_flag": f}
        for i, (item, s, f) in enumerate(zip(pack.calibration, scores, flags, strict=True))
    }


def test_qualified_by_hand() -> None:
    pack = cal_pack()
    check = judge_check(
        pack, cal_records(pack, [5, 4, 1, 3, 2], [False, False, True, False, True]), [], []
    )
    # in band: 5≥4, 4≥4, 1≤2, 3 not ≤2, 2≤2 → 4/5; recall 2/2; gap (5+4)/2 − (1+3+2)/3 = 2.5
    assert (check["qualified"], check["band_accuracy"], check["red_flag_recall"]) == (
        True,
        0.8,
        1.0,
    )
    assert check["score_gap"] == pytest.approx(2.5)
    assert (check["n_calibration"], check["warnings"]) == (5, [])


def test_unqualified_reasons_by_hand() -> None:
    pack = cal_pack()
    check = judge_check(
        pack, cal_records(pack, [1, 1, 1, None, 1], [False, False, False, False, True]), [], []
    )
    assert (check["qualified"], check["band_accuracy"], check["red_flag_recall"]) == (
        False,
        0.4,
        0.5,
    )
    assert check["score_gap"] == 0.0
    # the pack is German: its warnings too
    assert check["warnings"] == [
        "Band-Treffer 0.40 < 0.80 bei 5 Kalibrierungsantworten",
        "erwartete Red Flag verfehlt bei 1 von 2 Kalibrierungsantworten (B1)",
    ]
    english = pack_from_data({**pack_dict(language="en"), "calibration": CALIBRATION}, "t")
    check = judge_check(
        english, cal_records(english, [1, 1, 1, 1, 1], [False, False, True, False, False]), [], []
    )
    assert check["warnings"] == [
        "band accuracy 0.60 < 0.80 on 5 calibration items",
        "missed the expected red flag on 1 of 2 calibration items (A1)",
    ]
    assert check_line("j", check, counted=False, lang="en") == (
        "judge j: NOT qualified, not counted (band accuracy 0.60, red-flag recall 0.50, score "
        "gap 0.00, 5 calibration items); warnings: band accuracy 0.60 < 0.80 on 5 calibration "
        "items; missed the expected red flag on 1 of 2 calibration items (A1)"
    )


def test_one_calibration_item_is_named_in_the_singular() -> None:
    one = [{"prompt": "B1", "answer": "Erfunden.", "expect": "low", "red_flag": True}]
    for language, line in (
        ("en", "band accuracy 0.00 < 0.80 on 1 calibration item"),
        ("de", "Band-Treffer 0.00 < 0.80 bei 1 Kalibrierungsantwort"),
    ):
        pack = pack_from_data({**pack_dict(language=language), "calibration": one}, "t")
        check = judge_check(pack, cal_records(pack, [5], [True]), [], [])
        assert check["warnings"] == [line]
    assert check_line("j", check, counted=True, lang="de") == (
        "Judge j: NICHT qualifiziert, trotzdem gezählt (--allow-unqualified) (Band-Treffer 0.00, "
        "Red-Flag-Recall 1.00, Abstand k. A., 1 Kalibrierungsantwort); Warnungen: Band-Treffer "
        "0.00 < 0.80 bei 1 Kalibrierungsantwort"
    )


def test_no_calibration_is_qualified_with_a_warning() -> None:
    check = judge_check(cal_pack([]), {}, [], [])
    assert (check["qualified"], check["band_accuracy"], check["n_calibration"]) == (True, None, 0)
    assert check["warnings"] == [
        "keine Kalibrierungsantworten: der Judge wurde nicht an bekannten Antworten geprüft"
    ]


def verdict_rec(score: int, rationale: str, **extra: Any) -> dict[str, Any]:
    return {"status": "scored", "score": score, "rationale": rationale, "raw": "{}", **extra}


def test_degenerate_warnings_by_hand() -> None:
    verdicts = [verdict_rec(1, "1") for _ in range(9)] + [
        verdict_rec(2, "Eine lange, ganz eigene Begründung.", unknown_flags=["<Red Flag>", "9"])
    ]
    rule = {"status": "scored", "score": 1, "rationale": "empty answer", "raw": None, "n_calls": 0}
    reports = [
        {"dim_scores": {"Q1": 1, "Q6": 1}, "cited_prompts": {"Q1": [], "Q6": ["A1"]}},
        {"dim_scores": {"Q1": 1, "Q6": 1}, "cited_prompts": {"Q1": [], "Q6": []}},
    ]
    assert degenerate_warnings([*verdicts, rule], reports) == [
        "same score 1 on 9 of 10 (90 %) answers",
        "rationale under 20 characters on 9 of 10 (90 %)",
        "rationale '1' repeated verbatim on 9 of 10 (90 %) answers",
        "holistic rationale cites no prompt id on 3 of 4 (75 %) dimensions",
        "2 named flags are not the prompt's (kept in unknown_flags)",
    ]
    assert degenerate_warnings(verdicts[:5], []) == [  # under 10 answers: no share warnings
        "rationale under 20 characters on 5 of 5 (100 %)"
    ]


# --- end to end ---------------------------------------------------------------------------


def sim_responses(pack: Pack) -> list[EvalResponse]:
    """Two models × the pack's cells (10 answers each) with the simulator's quality marker."""
    return [
        response(
            p,
            model=m,
            variant=v,
            repeat=r,
            response_text=f"Antwort {m} {p} {r}\n\n{quality_marker(q)}",
        )
        for m, q in (("good", 0.9), ("weak", 0.3))
        for _, v, p, r in cells(pack, (m,))
    ]


def write_judges(path: Path, judges: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"judges": judges}))
    return path


SIM_GOOD = {"id": "good", "engine": "simulated", "model": "sim-judge", "concurrency": 4}
SIM_CONST = {**SIM_GOOD, "id": "const", "sim": {"judge_constant_score": 3}}


@pytest.mark.usefixtures("ray_local")
def test_simulated_good_and_constant_judges(tmp_path: Path) -> None:
    pack = cal_pack()
    bundle = write_bundle(tmp_path / "b", pack, sim_responses(pack), simulated=True)
    config = write_judges(tmp_path / "judge.yaml", [SIM_GOOD, SIM_CONST])
    out = io.StringIO()
    assert run_judge(bundle, config, out=out) == 0, out.getvalue()
    card = json.loads((bundle / "scorecard.json").read_text())
    good, const = card["judge_checks"]["good"], card["judge_checks"]["const"]
    assert (good["qualified"], good["band_accuracy"], good["red_flag_recall"]) == (True, 1.0, 1.0)
    assert good["warnings"] == [] and good["n_calibration"] == 5
    assert (const["qualified"], const["band_accuracy"], const["red_flag_recall"]) == (
        False,
        0.0,
        0.0,
    )
    assert const["score_gap"] == 0.0
    assert const["warnings"] == [
        "Band-Treffer 0.00 < 0.80 bei 5 Kalibrierungsantworten",
        "erwartete Red Flag verfehlt bei 2 von 2 Kalibrierungsantworten (B1, A1)",
        "gleiche Punktzahl 3 bei 20 von 20 (100 %) Antworten",
        "Begründung unter 20 Zeichen bei 20 von 20 (100 %)",
        "Begründung 'ok' wörtlich wiederholt bei 20 von 20 (100 %) Antworten",
        "ganzheitliche Begründung nennt keine Prompt-ID bei 8 von 8 (100 %) Dimensionen",
    ]
    assert (card["judges"], card["unqualified_judges"]) == (["good"], ["const"])
    assert "Judge const: NICHT qualifiziert, nicht gezählt" in out.getvalue()
    assert "judge fertig: 1 Judge, 20 Antworten, 4 Zeilen; Rang 1: " in out.getvalue()
    stored = (bundle / "judgements" / "const" / "calibration.jsonl").read_text().splitlines()
    assert len(stored) == 5

    out = io.StringIO()  # counted anyway; calibration and verdicts come from the cache
    assert run_judge(bundle, config, out=out, allow_unqualified=True) == 0, out.getvalue()
    assert "judge const: 5 calibration answers (5 stored); 20 answers: 20 stored" in out.getvalue()
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["judges"] == ["good", "const"]
    assert [r["n_scored"] for r in card["rows"]] == [10, 10, 10, 10]  # 5 answers × 2 judges

    only_const = write_judges(tmp_path / "const.yaml", [SIM_CONST])
    out = io.StringIO()
    assert run_judge(bundle, only_const, out=out) == 1
    assert "kein qualifizierter Judge: const bei der Kalibrierung durchgefallen" in out.getvalue()
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["judges"] == [] and card["unqualified_judges"] == ["const"]


PLAIN = '{"score": 4, "red_flag": false, "rationale": "solide und korrekt begründet"}'
HOLISTIC = json.dumps(
    {
        "Q1": {"score": 4, "rationale": "korrekt [A1]", "cited_prompts": ["A1"]},
        "Q6": {"score": 4, "rationale": "vorsichtig [B1]", "cited_prompts": ["B1"]},
    }
)


@pytest.fixture
def two_servers() -> Iterator[tuple[JudgeServer, JudgeServer]]:
    a = JudgeServer(lambda b: HOLISTIC if is_holistic(b) else PLAIN)
    b = JudgeServer(lambda b: HOLISTIC if is_holistic(b) else PLAIN)
    a.start()
    b.start()
    yield a, b
    a.stop()
    b.stop()


@pytest.mark.usefixtures("ray_local")
def test_cache_key_temperature_rejudges_all_base_url_none(
    tmp_path: Path, two_servers: tuple[JudgeServer, JudgeServer]
) -> None:
    a, b = two_servers
    pack = cal_pack([])
    answers = [
        response(p, variant=v, repeat=r, response_text=f"Antwort {v} {p} {r}")
        for _, v, p, r in cells(pack)
    ]
    bundle = write_bundle(tmp_path / "b", pack, answers)
    judge = {"id": "canned", "engine": "openai", "model": "canned", "timeout_s": 20}
    config = write_judges(tmp_path / "j.yaml", [{**judge, "base_url": a.base_url}])
    assert run_judge(bundle, config, out=io.StringIO()) == 0
    assert (len(a.answer_bodies()), len(a.holistic_bodies())) == (10, 2)

    moved = write_judges(tmp_path / "moved.yaml", [{**judge, "base_url": b.base_url}])
    out = io.StringIO()
    assert run_judge(bundle, moved, out=out) == 0
    assert "10 answers: 10 stored, 0 by rule, 0 to ask; 2 reports (2 stored)" in out.getvalue()
    assert (len(b.answer_bodies()), len(b.holistic_bodies())) == (0, 0)

    warmer = write_judges(
        tmp_path / "warm.yaml", [{**judge, "base_url": b.base_url, "temperature": 0.3}]
    )
    out = io.StringIO()
    assert run_judge(bundle, warmer, out=out) == 0
    assert "10 answers: 0 stored, 0 by rule, 10 to ask" in out.getvalue()
    assert (len(b.answer_bodies()), len(b.holistic_bodies())) == (10, 2)
    assert {body["temperature"] for body in b.answer_bodies()} == {0.3}

    # temperature null: another judge identity, and no temperature in the request body
    unset = write_judges(
        tmp_path / "unset.yaml", [{**judge, "base_url": b.base_url, "temperature": None}]
    )
    out = io.StringIO()
    assert run_judge(bundle, unset, out=out) == 0
    assert "10 answers: 0 stored, 0 by rule, 10 to ask" in out.getvalue()
    assert len(b.answer_bodies()) == 20
    assert ["temperature" in body for body in b.answer_bodies()[10:]] == [False] * 10


def test_repeats_below_one_is_a_usage_error(tmp_path: Path) -> None:
    from touchstone_ray.errors import UsageError

    with pytest.raises(UsageError, match=r"^--repeats: must be at least 1, got 0$"):
        run_judge(tmp_path / "nowhere", tmp_path / "judge.yaml", repeats=0)
