"""`touchstone-ray validate`: the shipped quality and tools packs, ten broken quality packs and
broken tools packs that each exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from touchstone_ray.cli import main

PACKS = Path(__file__).resolve().parent.parent / "packs"

BROKEN = {
    "weight": ("    weight: 3", "    weight: 0", "dimensions[0].weight: Input should be greater"),
    "scope": ("  red_flag_scope: curated", "  red_flag_scope: maybe", "ko_rule.red_flag_scope:"),
    "ko_dim": ("  dimension: Q1", "  dimension: Q9", "ko_rule.dimension: unknown dimension"),
    "pack_id": ("id: buero", "id: Büro", "id: String should match pattern"),
    "extra": ("title: ", "colour: red\ntitle: ", "colour: unknown key"),
    "repeats": ("repeats: 2", "repeats: zwei", "repeats: Input should be a valid integer"),
    "curated": ("red_flag_prompts: [A4, B3, C4, D1, E1, E2]", "red_flag_prompts: [A4]",
                "safety_critical prompt B3 is missing"),
    "dangling": ("red_flag_prompts: [A4, B3, C4, D1, E1, E2]",
                 "red_flag_prompts: [A4, B3, C4, D1, E1, E2, Z9]",
                 "ko_rule.red_flag_prompts[6]: unknown prompt id (got 'Z9')"),
    "scale": ("  5: ", "  6: ", "scale: scale keys must be exactly 1..5"),
    "syntax": ("categories:", "categories: [", "YAML syntax error"),
}  # fmt: skip


@pytest.fixture
def buero_text() -> str:
    return (PACKS / "buero.yaml").read_text(encoding="utf-8")


def test_validate_shipped_packs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(PACKS / "ndassist.yaml"), str(PACKS / "buero.yaml")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ndassist v1: 24 prompts, 26 cells/variant, max 80 points",
        "buero v1: 25 prompts, 32 cells/variant, max 75 points",
    ]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_pack_exits_2_with_one_line(
    case: str, buero_text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new, expected = BROKEN[case]
    assert old in buero_text
    path = tmp_path / f"{case}.yaml"
    path.write_text(buero_text.replace(old, new, 1), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {path}: ")
    assert expected in lines[0]


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    proc = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "validate", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == f"error: {bad}: the pack must be a YAML mapping, got a list\n"


TOOLS_PACK = {
    "kind": "tools",
    "id": "mini",
    "title": "Mini",
    "version": 3,
    "tools": [
        {
            "name": "read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
        {"name": "ls", "parameters": {"type": "object", "properties": {}}},
    ],
    "items": [
        {
            "id": "lesen",
            "prompt": "Lies a.py.",
            "tools": ["read"],
            "repeats": 3,
            "checks": [
                {"id": "ruft", "type": "calls", "expect": ["read"]},
                {"id": "args", "type": "no_empty_args"},
            ],
        },
        {"id": "ohne", "prompt": "Zwei plus zwei?", "checks": [{"id": "kein", "type": "no_call"}]},
    ],
}


def test_validate_tools_packs_beside_a_quality_pack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mini = tmp_path / "mini.yaml"
    mini.write_text(yaml.safe_dump(TOOLS_PACK), encoding="utf-8")
    packs = [PACKS / "werkzeuge.yaml", PACKS / "buero.yaml", mini]
    assert main(["validate", *map(str, packs)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "werkzeuge v1: 29 items, 29 cells/model, 12 tools, 99 checks",
        "buero v1: 25 prompts, 32 cells/variant, max 75 points",
        "mini v3: 2 items, 4 cells/model, 2 tools, 3 checks",
    ]


def test_a_broken_tools_pack_exits_2_with_one_line_and_the_rest_still_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item = dict(TOOLS_PACK["items"][1], checks=[{"id": "x", "type": "vibes"}])
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(dict(TOOLS_PACK, items=[item])), encoding="utf-8")
    assert main(["validate", str(bad), str(PACKS / "werkzeuge.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "werkzeuge v1: 29 items, 29 cells/model, 12 tools, 99 checks\n"
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {bad}: items[0].checks[0]: Input tag 'vibes'")


def test_a_bfcl_category_is_a_tools_pack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "bfcl:simple_python"]) == 0
    assert capsys.readouterr().out == (
        "bfcl-simple_python v1: 400 items, 400 cells/model, 370 tools, 400 checks\n"
    )


def test_an_unknown_bfcl_category_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", "bfcl:nonsense"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert captured.err.startswith("error: bfcl:nonsense: unknown BFCL category 'nonsense'")
