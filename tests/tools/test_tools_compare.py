"""``tools-compare A B``: cells paired by item and repeat, discordant counts, the exact McNemar
p, per-side medians, and the one-line refusals (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tools_bundles import PACK_DATA, mini_pack, record, turn, write_tools_bundle

from touchstone_ray.cli import main
from touchstone_ray.errors import BundleError
from touchstone_ray.report.tools_compare import tools_compare
from touchstone_ray.scoring.tools_compare import (
    compare_tools_bundles,
    mcnemar_exact_p,
    pair_models,
)
from touchstone_ray.tool_records import ToolsRecord
from touchstone_ray.toolpack import ToolsPack

WEATHER: dict[str, Any] = {**PACK_DATA["items"][0], "repeats": 11}


def weather_pack(value: str = "Berlin") -> ToolsPack:
    """The mini pack with ``weather`` ×11 only; ``value`` the ``city`` check's expected value
    (another value: other checks)."""
    checks = [*WEATHER["checks"][:2], {**WEATHER["checks"][2], "value": value}]
    return mini_pack(items=[{**WEATHER, "checks": checks}])


def cells(
    model: str, passes: Sequence[bool | None], tokens: int, pack: ToolsPack
) -> list[ToolsRecord]:
    """One weather cell per repeat: ``True``/``False`` passes or fails ``city``; ``None`` is a
    transport error."""
    out = []
    for repeat, passed in enumerate(passes, start=1):
        if passed is None:
            out.append(record(model, "weather", repeat, ok=False, error_kind="timeout", pack=pack))
            continue
        checks = [("called", "calls", True), ("city", "arg_equals", passed)]
        turns = [turn("", [("get_weather", {"city": "x"})], "tool_calls", tokens)]
        out.append(
            record(model, "weather", repeat, checks, turns * (2 if passed else 1), pack=pack)
        )
    return out


T, F = True, False
A_PASSES = [T, T, T, F, F, F, F, F, T, T, None]
B_PASSES = [F, T, T, T, T, T, T, T, T, T, T]
"""Discordant: repeat 1 passed in A only (b = 1); repeats 4–8 in B only (c = 5); A's repeat
11 is a transport error (B's is unpaired)."""


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    pack = weather_pack()
    a = write_tools_bundle(tmp_path / "A", cells("m", A_PASSES, 10, pack), pack=pack)
    b = write_tools_bundle(tmp_path / "B", cells("m", B_PASSES, 20, pack), pack=pack)
    return a, b


def test_mcnemar_exact_p_for_known_counts() -> None:
    assert mcnemar_exact_p(1, 5) == 0.21875
    assert mcnemar_exact_p(0, 5) == 0.0625
    assert mcnemar_exact_p(3, 3) == 1.0
    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(10, 0) == 0.001953125


def test_models_pair_by_label_else_the_one_model_of_each() -> None:
    assert pair_models(["a", "b", "c"], ["c", "a"]) == [("a", "a"), ("c", "c")]
    assert pair_models(["x"], ["y"]) == [("x", "y")]
    assert pair_models(["x", "z"], ["y"]) == []


def test_paired_figures_are_exact(pair: tuple[Path, Path]) -> None:
    cmp = compare_tools_bundles(*pair)
    assert (cmp.a.bundle, cmp.b.bundle, cmp.language) == ("A", "B", "en")
    (p,) = cmp.pairs
    data = p.model_dump()
    discordant = data.pop("discordant")
    assert data == {
        "model_a": "m",
        "model_b": "m",
        "n_pairs": 10,
        "unpaired_a": 0,
        "unpaired_b": 1,
        "a_passed": 5,
        "b_passed": 9,
        "both_passed": 4,
        "both_failed": 0,
        "b": 1,
        "c": 5,
        "mcnemar_p": 0.21875,
        "turns_median_a": 1.5,  # 5 passed cells with 2 turns, 5 failed with 1
        "turns_median_b": 2.0,
        "completion_tokens_median_a": 15.0,
        "completion_tokens_median_b": 40.0,
        "reasoning_tokens_median_a": None,
        "reasoning_tokens_median_b": None,
    }
    assert [(d["item_id"], d["repeat"], d["a_passed"]) for d in discordant] == [
        ("weather", 1, True),
        ("weather", 4, False),
        ("weather", 5, False),
        ("weather", 6, False),
        ("weather", 7, False),
        ("weather", 8, False),
    ]


def test_one_model_each_pairs_across_labels(tmp_path: Path) -> None:
    pack = weather_pack()
    a = write_tools_bundle(tmp_path / "A", cells("qwen", [T, F], 5, pack), pack=pack)
    b = write_tools_bundle(tmp_path / "B", cells("llama", [F, F], 5, pack), pack=pack)
    (p,) = compare_tools_bundles(a, b).pairs
    assert (p.model_a, p.model_b, p.n_pairs, p.b, p.c, p.mcnemar_p) == (
        "qwen",
        "llama",
        2,
        1,
        0,
        1.0,
    )


def test_the_table_and_the_files(pair: tuple[Path, Path], tmp_path: Path) -> None:
    text, written = tools_compare(*pair, out=tmp_path / "out")
    assert text.splitlines() == [
        "A: A (mini-tools v3)",
        "B: B (mini-tools v3)",
        "",
        "Model A  Model B  pairs  A passed  B passed  A only (b)  B only (c)  McNemar p  "
        "unpaired A/B  turns A/B  completion tok A/B  reasoning tok A/B",
        "-------  -------  -----  --------  --------  ----------  ----------  ---------  "
        "------------  ---------  ------------------  -----------------",
        "m        m        10     5         9         1           5           0.2188     "
        "0 / 1         1.5 / 2.0  15.0 / 40.0         – / –",
    ]
    assert [p.name for p in written] == ["tools-compare.md", "tools-compare.json"]
    md = written[0].read_text(encoding="utf-8")
    assert "| m | m | 10 | 5 | 9 | 1 | 5 | 0.2188 | 0 / 1 | 1.5 / 2.0 | 15.0 / 40.0 | – / – |" in md
    assert "- `weather` #1: A ✓ · B ✗\n- `weather` #4: A ✗ · B ✓\n" in md
    data = json.loads(written[1].read_text(encoding="utf-8"))
    assert data["pairs"][0]["mcnemar_p"] == 0.21875
    assert data["a"]["checks_fingerprint"] == weather_pack().checks_fingerprint()


def test_the_cli_prints_the_table(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools-compare", str(pair[0]), str(pair[1])]) == 0
    assert capsys.readouterr().out.splitlines()[5].startswith("m        m        10")


def test_checks_that_differ_are_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pa, pb = weather_pack(), weather_pack("Hamburg")
    a = write_tools_bundle(tmp_path / "A", cells("m", [T], 5, pa), pack=pa)
    b = write_tools_bundle(tmp_path / "B", cells("m", [T], 5, pb), pack=pb)
    line = (
        f"tools-compare: the checks differ (A: checks_fingerprint {pa.checks_fingerprint()[:12]}, "
        f"B: {pb.checks_fingerprint()[:12]}); only bundles of the same checks pair"
    )
    with pytest.raises(BundleError) as err:
        compare_tools_bundles(a, b)
    assert str(err.value) == line
    assert main(["tools-compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {line}\n"
    assert captured.out == ""
    assert not (tmp_path / "out").exists()


def test_a_bundle_of_another_kind_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = weather_pack()
    a = write_tools_bundle(tmp_path / "A", cells("m", [T], 5, pack), pack=pack)
    eval_like = tmp_path / "E"
    eval_like.mkdir()
    (eval_like / "bundle.json").write_text(json.dumps({"pack": {"id": "x"}}), encoding="utf-8")
    assert main(["tools-compare", str(a), str(eval_like)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {eval_like}: not a tools bundle (bundle.json has kind: eval)\n"


def test_no_model_to_pair_is_refused(tmp_path: Path) -> None:
    pack = weather_pack()
    a = write_tools_bundle(
        tmp_path / "A", [*cells("x", [T], 5, pack), *cells("y", [T], 5, pack)], pack=pack
    )
    b = write_tools_bundle(tmp_path / "B", cells("z", [T], 5, pack), pack=pack)
    with pytest.raises(BundleError) as err:
        compare_tools_bundles(a, b)
    assert str(err.value) == "tools-compare: no model is in both bundles (A: x, y; B: z)"
