"""The pack loader: every rule of SPEC §3, the shipped packs, seed 000/001 criteria."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from touchstone_ray.errors import PackError
from touchstone_ray.pack import KoRule, dump_pack, load_pack, pack_from_data

PACKS = Path(__file__).resolve().parent.parent / "packs"

WriteYaml = Callable[[Any, str], Path]


def _error(write_yaml: WriteYaml, data: Any) -> str:
    path = write_yaml(data, "pack.yaml")
    with pytest.raises(PackError) as info:
        load_pack(path)
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{path}: "
    assert message.startswith(prefix)
    return message[len(prefix) :]


def test_minimal_pack_loads(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack = load_pack(write_yaml(pack_data, "pack.yaml"))
    assert pack.summary() == "mini v1: 3 prompts, 5 cells/variant, max 30 points"
    assert [(c.id, p.id) for c, p in pack.all_prompts()] == [("A", "A1"), ("A", "A2"), ("E", "E1")]
    assert pack.language == "en"
    assert pack.sampling.temperature == 0.0 and pack.sampling.seed == 42
    assert pack.ko_rule.threshold == 2


def test_non_mapping_document(write_yaml: WriteYaml) -> None:
    assert _error(write_yaml, ["a", "b"]) == "the pack must be a YAML mapping, got a list"


def test_empty_document(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    with pytest.raises(
        PackError, match=r"empty.yaml: the pack must be a YAML mapping, got an empty"
    ):
        load_pack(path)


def test_unknown_top_level_key(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["colour"] = "blue"
    assert _error(write_yaml, pack_data) == "colour: unknown key (got 'blue')"


def test_unknown_nested_key(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["categories"][1]["prompts"][0]["safety"] = True
    assert (
        _error(write_yaml, pack_data) == "categories[1].prompts[0].safety: unknown key (got True)"
    )


def test_scale_must_be_one_to_five(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["scale"] = {0: "null", 1: "a", 2: "b", 3: "c", 4: "d"}
    assert _error(write_yaml, pack_data) == (
        "scale: scale keys must be exactly 1..5, got [0, 1, 2, 3, 4] "
        "(got {0: 'null', 1: 'a', 2: 'b', 3: 'c', 4: 'd'})"
    )


def test_scale_with_six_levels(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["scale"][6] = "super"
    assert _error(write_yaml, pack_data).startswith(
        "scale: scale keys must be exactly 1..5, got [1, 2, 3, 4, 5, 6]"
    )


@pytest.mark.parametrize("weight", [0, -1])
def test_weight_must_be_positive(
    write_yaml: WriteYaml, pack_data: dict[str, Any], weight: int
) -> None:
    pack_data["dimensions"][1]["weight"] = weight
    assert _error(write_yaml, pack_data) == (
        f"dimensions[1].weight: Input should be greater than 0 (got {weight})"
    )


def test_duplicate_dimension_id(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["dimensions"][1]["id"] = "Q1"
    pack_data["ko_rule"]["dimension"] = "Q1"
    assert _error(write_yaml, pack_data) == (
        "dimensions[1].id: duplicate dimension id (first at dimensions[0].id) (got 'Q1')"
    )


def test_duplicate_variant_id(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["prompt_variants"][1]["id"] = "baseline"
    assert _error(write_yaml, pack_data) == (
        "prompt_variants[1].id: duplicate variant id (first at prompt_variants[0].id) "
        "(got 'baseline')"
    )


def test_duplicate_prompt_id_across_categories(
    write_yaml: WriteYaml, pack_data: dict[str, Any]
) -> None:
    pack_data["categories"][1]["prompts"][0]["id"] = "A2"
    pack_data["ko_rule"]["red_flag_prompts"] = []
    assert _error(write_yaml, pack_data) == (
        "categories[1].prompts[0].id: duplicate prompt id (first at categories[0].prompts[1].id) "
        "(got 'A2')"
    )


def test_ko_dimension_unknown(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["ko_rule"]["dimension"] = "Q9"
    assert _error(write_yaml, pack_data) == (
        "ko_rule.dimension: unknown dimension, expected one of ['Q1', 'Q6'] (got 'Q9')"
    )


def test_red_flag_prompts_unknown(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["ko_rule"]["red_flag_prompts"] = ["E1", "Z7"]
    assert _error(write_yaml, pack_data) == (
        "ko_rule.red_flag_prompts[1]: unknown prompt id (got 'Z7')"
    )


@pytest.mark.parametrize("text", ["", "   \n "])
def test_empty_prompt_text(write_yaml: WriteYaml, pack_data: dict[str, Any], text: str) -> None:
    pack_data["categories"][0]["prompts"][1]["prompt"] = text
    assert _error(write_yaml, pack_data) == (
        f"categories[0].prompts[1].prompt: prompt text is empty (got {text!r})"
    )


def test_curated_requires_safety_critical_coverage(
    write_yaml: WriteYaml, pack_data: dict[str, Any]
) -> None:
    """Seed 001: under curated, a safety_critical prompt outside red_flag_prompts is rejected."""
    pack_data["ko_rule"] = {"dimension": "Q6", "red_flag_scope": "curated", "red_flag_prompts": []}
    assert _error(write_yaml, pack_data) == (
        "categories[1].prompts[0].safety_critical: safety_critical prompt E1 is missing from "
        "ko_rule.red_flag_prompts under red_flag_scope: curated (its knock-out would silently "
        "vanish) (got 'E1')"
    )


def test_curated_with_coverage_loads(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["ko_rule"]["red_flag_scope"] = "curated"
    assert load_pack(write_yaml(pack_data, "pack.yaml")).ko_rule.red_flag_scope == "curated"


def test_all_scope_does_not_require_coverage(
    write_yaml: WriteYaml, pack_data: dict[str, Any]
) -> None:
    pack_data["ko_rule"]["red_flag_prompts"] = []
    assert load_pack(write_yaml(pack_data, "pack.yaml")).ko_rule.red_flag_scope == "all"


def test_bad_pack_id(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["id"] = "../evil"
    assert _error(write_yaml, pack_data) == (
        "id: String should match pattern '^[a-z0-9][a-z0-9_-]{0,63}$' (got '../evil')"
    )


def test_wrong_type(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["categories"][0]["prompts"][0]["repeats"] = "twice"
    assert _error(write_yaml, pack_data) == (
        "categories[0].prompts[0].repeats: Input should be a valid integer, unable to parse "
        "string as an integer (got 'twice')"
    )


def test_missing_required_key(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    del pack_data["ko_rule"]
    assert _error(write_yaml, pack_data) == "ko_rule: required key is missing"


def test_no_variants(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["prompt_variants"] = []
    assert _error(write_yaml, pack_data) == (
        "prompt_variants: Tuple should have at least 1 item after validation, not 0 (got [])"
    )


def test_yaml_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: x\ntitle: [unclosed\n")
    with pytest.raises(PackError) as info:
        load_pack(path)
    assert str(info.value) == (
        f"{path}: line 3, column 1: YAML syntax error: expected ',' or ']', but got '<stream end>'"
    )


def test_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("title: Büro\n".encode("latin-1"))
    with pytest.raises(PackError) as info:
        load_pack(path)
    assert str(info.value) == f"{path}: not valid UTF-8 at byte 8"


def test_alias_bomb_rejected(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PackError) as info:
        load_pack(path)
    assert str(info.value) == (
        f"{path}: pack expands to more than 200000 YAML nodes (anchor/alias bomb?)"
    )


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PackError) as info:
        load_pack(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: no such pack file"


def test_red_flag_scope_defaults_to_all() -> None:
    """Seed 000 criterion 1: the default is `all`, an invalid value is a ValidationError."""
    assert KoRule(dimension="Q1").red_flag_scope == "all"
    with pytest.raises(ValidationError):
        KoRule.model_validate({"dimension": "Q1", "red_flag_scope": "some"})


def test_shipped_buero_pack_parses() -> None:
    """Seed 000 criterion 4 and SPEC §3 counts."""
    pack = load_pack(PACKS / "buero.yaml")
    assert pack.summary() == "buero v1: 25 prompts, 32 cells/variant, max 75 points"
    assert pack.language == "de"
    assert pack.ko_rule.red_flag_scope == "curated"
    assert pack.ko_rule.dimension == "Q1" and pack.ko_rule.threshold == 2
    safety = sorted(p.id for p in pack.prompts() if p.safety_critical)
    assert sorted(pack.ko_rule.red_flag_prompts) == safety == ["A4", "B3", "C4", "D1", "E1", "E2"]
    assert {p.id: p.repeats for p in pack.prompts() if p.repeats > 1} == {
        "A4": 2,
        "B3": 2,
        "C4": 2,
        "D1": 2,
        "E1": 2,
        "E2": 2,
        "E4": 2,
    }
    assert sorted(p.id for p in pack.prompts() if p.format_strict) == ["A3", "A5", "B4", "C5"]
    assert [(d.id, d.weight) for d in pack.dimensions] == [
        ("Q1", 3),
        ("Q2", 3),
        ("Q3", 2),
        ("Q4", 2),
        ("Q5", 2),
        ("Q6", 2),
        ("Q7", 1),
    ]
    assert [v.id for v in pack.prompt_variants] == ["baseline", "none"]
    assert pack.prompt_variants[1].system_prompt is None


def test_shipped_ndassist_pack_parses() -> None:
    pack = load_pack(PACKS / "ndassist.yaml")
    assert pack.summary() == "ndassist v1: 24 prompts, 26 cells/variant, max 80 points"
    assert pack.language == "de"
    assert pack.ko_rule.red_flag_scope == "all"
    assert "red_flag_scope" not in yaml.safe_load((PACKS / "ndassist.yaml").read_text())["ko_rule"]
    assert pack.ko_rule.dimension == "Q6" and list(pack.ko_rule.red_flag_prompts) == ["E1"]
    assert [p.id for p in pack.prompts() if p.safety_critical] == ["E1"]
    assert sorted(p.id for p in pack.prompts() if p.format_strict) == ["C4", "E4"]
    assert [(d.id, d.weight) for d in pack.dimensions] == [
        ("Q1", 3),
        ("Q2", 2),
        ("Q3", 2),
        ("Q4", 2),
        ("Q5", 3),
        ("Q6", 3),
        ("Q7", 1),
    ]


@pytest.mark.parametrize("name", ["buero.yaml", "ndassist.yaml"])
def test_shipped_packs_have_concrete_flags(name: str) -> None:
    pack = load_pack(PACKS / name)
    for prompt in pack.prompts():
        assert 3 <= len(prompt.green_flags) <= 5, prompt.id
        assert 3 <= len(prompt.red_flags) <= 5, prompt.id
        assert prompt.tests.strip(), prompt.id


# --- judge-free checks (SPEC §3 checks) ------------------------------------------------------

CHECKS: list[dict[str, Any]] = [
    {"id": "kurz", "type": "max_words", "value": 80},
    {"id": "saetze", "type": "max_sentences", "value": 4},
    {"id": "muster", "type": "regex", "value": r"(?m)^Betreff: "},
    {"id": "termin", "type": "contains", "value": "Freitag"},
    {"id": "no_names", "type": "not_contains", "value": "Müller", "knock_out": True},
    {"id": "json", "type": "json_schema", "value": {"type": "object", "required": ["a"]}},
    {"id": "deutsch", "type": "language", "value": "de"},
]


def test_a_prompt_with_checks_loads(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["categories"][0]["prompts"][1]["checks"] = CHECKS
    pack = load_pack(write_yaml(pack_data, "pack.yaml"))
    checks = pack.prompt("A2").checks
    assert [(c.id, c.type, c.value, c.knock_out) for c in checks] == [
        (c["id"], c["type"], c["value"], c.get("knock_out", False)) for c in CHECKS
    ]
    assert pack.prompt("A1").checks == ()
    assert pack_from_data(yaml.safe_load(dump_pack(pack)), "again") == pack


def _check_error(write_yaml: WriteYaml, pack_data: dict[str, Any], check: dict[str, Any]) -> str:
    pack_data["categories"][0]["prompts"][1]["checks"] = [CHECKS[0], check]
    return _error(write_yaml, pack_data)


AT = "categories[0].prompts[1].checks[1]"


@pytest.mark.parametrize(
    ("check", "line"),
    [
        (
            {"id": "r", "type": "regex", "value": "(["},
            f"{AT}.value: the regex does not compile: unterminated character set at position 1 "
            "(got '([')",
        ),
        (
            {"id": "r", "type": "regex", "value": ""},
            f"{AT}.value: a regex check needs a non-empty text (got '')",
        ),
        (
            {"id": "c", "type": "contains", "value": 5},
            f"{AT}.value: a contains check needs a non-empty text (got 5)",
        ),
        (
            {"id": "n", "type": "not_contains", "value": None},
            f"{AT}.value: a not_contains check needs a non-empty text (got None)",
        ),
        (
            {"id": "w", "type": "max_words", "value": 0},
            f"{AT}.value: a max_words check needs a positive integer (got 0)",
        ),
        (
            {"id": "w", "type": "max_words", "value": True},
            f"{AT}.value: a max_words check needs a positive integer (got True)",
        ),
        (
            {"id": "s", "type": "max_sentences", "value": "3"},
            f"{AT}.value: a max_sentences check needs a positive integer (got '3')",
        ),
        (
            {"id": "j", "type": "json_schema", "value": "object"},
            f"{AT}.value: a json_schema check needs a JSON Schema mapping (got 'object')",
        ),
        (
            {"id": "j", "type": "json_schema", "value": {"properties": {"a": {"type": "text"}}}},
            f"{AT}.value: not a valid JSON Schema at $.properties.a.type: 'text' is not valid "
            "under any of the given schemas (got {'properties': {'a': {'type': 'text'}}})",
        ),
        (
            {"id": "l", "type": "language", "value": "german"},
            f"{AT}.value: a language check needs one of de, en, fr, es, it, nl, pt, pl, ru, zh "
            "(got 'german')",
        ),
        (
            {"id": "t", "type": "word_count", "value": 3},
            f"{AT}.type: Input should be 'regex', 'contains', 'not_contains', 'json_schema', "
            "'max_words', 'max_sentences' or 'language' (got 'word_count')",
        ),
        (
            {"id": "E4/x", "type": "max_words", "value": 3},
            f"{AT}.id: String should match pattern '^[A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}$' "
            "(got 'E4/x')",
        ),
        ({"id": "v", "type": "max_words"}, f"{AT}.value: required key is missing"),
        (
            {"id": "v", "type": "max_words", "value": 3, "knockout": True},
            f"{AT}.knockout: unknown key (got True)",
        ),
        (
            {"id": "kurz", "type": "max_words", "value": 3},
            f"{AT}.id: duplicate check id (first at categories[0].prompts[1].checks[0].id) "
            "(got 'kurz')",
        ),
    ],
)
def test_a_bad_check_is_one_line_naming_its_path(
    write_yaml: WriteYaml, pack_data: dict[str, Any], check: dict[str, Any], line: str
) -> None:
    assert _check_error(write_yaml, pack_data, check) == line


def test_check_ids_are_per_prompt(write_yaml: WriteYaml, pack_data: dict[str, Any]) -> None:
    pack_data["categories"][0]["prompts"][0]["checks"] = [CHECKS[0]]
    pack_data["categories"][0]["prompts"][1]["checks"] = [CHECKS[0]]
    pack = load_pack(write_yaml(pack_data, "pack.yaml"))
    assert [p.checks[0].id for p in pack.prompts()[:2]] == ["kurz", "kurz"]


def test_curated_refuses_a_knock_out_check_that_could_never_fire(
    write_yaml: WriteYaml, pack_data: dict[str, Any]
) -> None:
    pack_data["ko_rule"]["red_flag_scope"] = "curated"
    pack_data["categories"][0]["prompts"][1]["checks"] = CHECKS
    assert _error(write_yaml, pack_data) == (
        "categories[0].prompts[1].checks[4].knock_out: knock_out check A2/no_names on a prompt "
        "missing from ko_rule.red_flag_prompts under red_flag_scope: curated (its knock-out "
        "would silently vanish) (got True)"
    )
    pack_data["ko_rule"]["red_flag_prompts"] = ["E1", "A2"]
    assert load_pack(write_yaml(pack_data, "pack.yaml")).prompt("A2").checks[4].knock_out
