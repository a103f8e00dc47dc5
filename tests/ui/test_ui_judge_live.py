"""A judge's live page in Chromium: the answers done of planned, the calibration and its
verdict, the score histogram, the red flags so far and an ETA once verdicts arrive while the
page watches, growing through server-sent events as verdicts are appended the way the judge
writes them, until the stream ends; linked from the result and the live page of the run."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml
from ui_helpers import make_bundle, packs_folder, shot, ui_server

from touchstone_ray.judging.checks import CALIBRATION_MODEL

JUDGE = "j1"
SCORES = [5, 2, 2, 4, 4, 3, 1, 5, 5, 4, 3, 2]
"""The score of each of the fixture's 12 answers, in response order."""
RED = {1, 6}
"""Positions of the answers whose verdict raises a red flag."""


def judged_live_bundle(runs: Path) -> Path:
    """The report fixture's unjudged bundle, its pack given one calibration item (``A1``,
    expected high)."""
    root = make_bundle(runs, judged=False)
    pack = yaml.safe_load((root / "pack.yaml").read_text(encoding="utf-8"))
    pack["calibration"] = [{"prompt": "A1", "answer": "Freitag, Raum 2.14.", "expect": "high"}]
    text = yaml.safe_dump(pack, allow_unicode=True, sort_keys=False)
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    manifest = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    manifest["pack"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _responses(root: Path) -> list[dict[str, Any]]:
    out = []
    for model in ("m-fast", "m-slow"):
        lines = (root / "responses" / f"{model}.jsonl").read_text(encoding="utf-8").splitlines()
        out += [json.loads(line) for line in lines]
    return out


def _verdict(r: dict[str, Any], score: int, red: bool) -> dict[str, Any]:
    return {
        "key": r["key"],
        "model": r["model"],
        "variant": r["variant"],
        "prompt_id": r["prompt_id"],
        "repeat": r["repeat"],
        "category": r["category"],
        "judge": JUDGE,
        "score": score,
        "red_flag": red,
        "red_flags_hit": ["Nennt eine Zahl"] if red else [],
        "green_flags_hit": [],
        "unknown_flags": [],
        "rationale": "ok",
        "status": "scored",
        "raw": "{}",
        "safety_critical": r["prompt_id"] == "E1",
    }


def _append(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)


def _card(page: Any) -> dict[str, Any]:
    card = page.locator(f'.judge-card[data-judge="{JUDGE}"]')
    return {
        "progress": card.locator(".progress").inner_text(),
        "calibration": card.locator(".calibration").inner_text(),
        "histogram": [
            int(card.locator(f'.hist-row[data-score="{s}"] .n').inner_text()) for s in range(1, 6)
        ],
        "n_red": card.locator(".n-red").inner_text(),
        "red": card.locator(".red-flags li").all_inner_texts(),
        "eta": card.locator(".eta").inner_text(),
    }


def test_judge_live_page_grows_with_the_verdicts(tmp_path: Path, page: Any) -> None:
    runs = tmp_path / "runs"
    root = judged_live_bundle(runs)
    answers = _responses(root)
    assert len(answers) == len(SCORES)
    verdicts = [
        _verdict(r, s, i in RED) for i, (r, s) in enumerate(zip(answers, SCORES, strict=True))
    ]
    path = root / "judgements" / JUDGE / "verdicts.jsonl"
    _append(path, verdicts[:3])
    with ui_server(runs, packs_folder(tmp_path)) as server:
        page.set_default_timeout(30_000)
        page.goto(f"{server.url}/run/{root.name}")
        assert page.locator("#judges-live").get_attribute("href") == f"/judge-live/{root.name}"
        page.goto(f"{server.url}/live/{root.name}")
        page.locator("#judges-live").click()
        page.wait_for_url(f"**/judge-live/{root.name}")
        assert _card(page) == {
            "progress": "3/12 answers",
            "calibration": "calibration 0/1 · band accuracy — · red-flag recall — · pending",
            "histogram": [0, 2, 0, 0, 1],
            "n_red": "1",
            "red": [f"{answers[1]['model']} / {answers[1]['variant']} / E1"],
            "eta": "—",
        }
        assert page.locator("#judge-state").inner_text() == "judging"

        page.wait_for_timeout(1500)  # the stream has looked once: a rate needs a second look
        calibration = {
            **_verdict(answers[0], 5, False),
            "key": f"{CALIBRATION_MODEL}|baseline|A1|0",
            "model": CALIBRATION_MODEL,
            "repeat": 0,
        }
        _append(root / "judgements" / JUDGE / "calibration.jsonl", [calibration])
        _append(path, verdicts[3:7])
        page.wait_for_function(
            "() => document.querySelector('.judge-card .progress').textContent === '7/12 answers'"
        )
        card = _card(page)
        assert card["calibration"] == (
            "calibration 1/1 · band accuracy 100 % · red-flag recall — · qualified"
        )
        assert card["histogram"] == [1, 2, 1, 2, 1]
        assert card["n_red"] == "2"
        assert re.fullmatch(r"\d+ s|\d+ min \d\d s", card["eta"]), card["eta"]
        shot(page, "judge-live")

        _append(path, verdicts[7:])
        page.wait_for_function(
            "() => document.getElementById('judge-state').textContent === 'done'"
        )
        card = _card(page)
        assert (card["progress"], card["histogram"]) == ("12/12 answers", [1, 3, 2, 3, 3])
        assert card["eta"] == "—"
