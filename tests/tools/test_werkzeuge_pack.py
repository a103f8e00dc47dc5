"""The shipped German tools pack ``packs/werkzeuge.yaml``: its items, tools and fixtures, and
every item's checks on the reference turns of a careful model (all pass) and of the typical
mistake the item is built to catch (exactly the named checks fail)."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import math
import shutil
import sys
import time
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
import yaml
from werkzeuge_reference import BAD, BAD_FAILS, BAD_NOT_MEASURED, GOOD

from touchstone_ray.checks import SandboxUnavailable, run_checks, verdict
from touchstone_ray.checks.sandbox import isolation
from touchstone_ray.fleet.prompts import estimate_prompt_tokens, fits
from touchstone_ray.records import ToolCall
from touchstone_ray.tool_records import CheckOutcome
from touchstone_ray.toolpack import (
    CHECK_TYPES,
    ToolItem,
    ToolsPack,
    dump_tools_pack,
    load_tools_pack,
    tools_pack_from_data,
)

REPO = Path(__file__).resolve().parents[2]
PACK_FILE = REPO / "touchstone_ray" / "packs" / "werkzeuge.yaml"
CODE_CHECKS = frozenset({"python_asserts", "node_asserts", "edited_python"})

ITEM_TOOLS: dict[str, tuple[str, ...]] = {
    "schema-bestellnummer": ("order_status", "add_to_cart"),
    "schema-menge-ganzzahl": ("add_to_cart", "order_status"),
    "schema-timer-ms": ("set_timer", "get_weather"),
    "schema-timer-stunden": ("set_timer",),
    "schema-json-im-string": ("http_post",),
    "schema-json-escapes": ("http_post",),
    "schema-makefile-tabs": ("write", "read", "ls"),
    "schema-termin": ("create_event",),
    "schema-fahrenheit": ("get_weather",),
    "ohne-werkzeug-wissen": ("get_weather", "set_timer"),
    "ohne-werkzeug-rueckfrage": ("set_timer",),
    "ohne-werkzeug-json": ("create_event",),
    "ohne-werkzeug-code-lesen": ("read", "run_tests"),
    "parallel-wetter": ("get_weather",),
    "parallel-timer": ("set_timer",),
    "parallel-dateien": ("read", "ls"),
    "code-iban": ("read", "write"),
    "code-dauer-datei": ("write", "read", "ls"),
    "code-csv-summe": ("read", "write"),
    "code-js-bereiche": ("read", "write"),
    "edit-port": ("edit", "read", "ls"),
    "edit-mehrdeutig": ("edit", "read", "ls"),
    "edit-lesen-dann-aendern": ("read", "edit", "ls"),
    "edit-tests-rot": ("run_tests", "read", "edit", "ls"),
    "edit-umbenennen": ("read", "edit", "ls"),
    "dateien-finden": ("ls", "find", "read"),
    "lang-handbuch-retoure": ("read", "find"),
    "lang-code-vs-handbuch": ("read", "find"),
    "lang-modul-edit": ("read", "edit", "find"),
}
"""Every item, in pack order, with the tools it offers."""

LONG_FILES = ("src/lager/bestand.py", "docs/handbuch.md", "docs/changelog.md")


@pytest.fixture(scope="module")
def pack() -> ToolsPack:
    return load_tools_pack(PACK_FILE)


def _fixtures_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "werkzeuge_fixtures", REPO / "scripts" / "werkzeuge_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _unmeasurable(item: ToolItem) -> set[str]:
    """Checks of ``item`` this machine cannot run (no sandbox, no node): they may come out not
    measured, never failed."""
    try:
        isolation()
        sandbox = True
    except SandboxUnavailable:
        sandbox = False
    node = shutil.which("node") is not None
    return {
        c.id
        for c in item.checks
        if (c.type in CODE_CHECKS and not sandbox) or (c.type == "node_asserts" and not node)
    }


# --- the pack as data ---------------------------------------------------------------------


def test_the_pack_loads_in_under_a_second_with_its_header(pack: ToolsPack) -> None:
    start = time.perf_counter()
    again = load_tools_pack(PACK_FILE)
    elapsed_s = time.perf_counter() - start
    assert elapsed_s < 1.0
    assert again == pack
    assert (pack.kind, pack.id, pack.language, pack.version) == ("tools", "werkzeuge", "de", 1)
    assert (pack.sampling.temperature, pack.sampling.seed) == (0.0, 42)
    assert PACK_FILE.resolve() == REPO / "packs" / "werkzeuge.yaml"


def test_items_their_order_and_the_tools_each_offers(pack: ToolsPack) -> None:
    assert {item.id: item.tools for item in pack.items} == ITEM_TOOLS
    assert [item.id for item in pack.items] == list(ITEM_TOOLS)
    assert pack.n_cells == 29
    assert all(item.title and item.system for item in pack.items)
    assert {item.id: item.max_turns for item in pack.items if item.max_turns != 5} == {
        "edit-mehrdeutig": 6,
        "edit-lesen-dann-aendern": 6,
        "edit-tests-rot": 6,
        "edit-umbenennen": 6,
    }


def test_kinds_of_items() -> None:
    kinds: dict[str, int] = {}
    for item_id in ITEM_TOOLS:
        kind = item_id.split("-")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds == {
        "schema": 9,
        "ohne": 4,
        "parallel": 3,
        "code": 4,
        "edit": 5,
        "dateien": 1,
        "lang": 3,
    }


def test_every_check_type_is_used_and_each_tool_is_offered(pack: ToolsPack) -> None:
    used = {check.type for item in pack.items for check in item.checks}
    assert used == set(CHECK_TYPES)
    counts = {t: sum(c.type == t for i in pack.items for c in i.checks) for t in CHECK_TYPES}
    assert counts["node_asserts"] == 1
    assert counts["python_asserts"] == 3
    assert counts["edited_python"] == 5
    offered = {name for item in pack.items for name in item.tools}
    assert offered == {tool.name for tool in pack.tools}


def test_each_tool_schema_is_a_valid_object_schema(pack: ToolsPack) -> None:
    for tool in pack.tools:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["type"] == "object", tool.name
        assert tool.parameters["additionalProperties"] is False, tool.name
        assert tool.description, tool.name
        for name, prop in tool.parameters["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name}"


def test_the_dumped_pack_reads_back_equal_with_asserts_inlined(pack: ToolsPack) -> None:
    again = tools_pack_from_data(yaml.safe_load(dump_tools_pack(pack)), "dump")
    assert again == pack
    assert again.checks_fingerprint() == pack.checks_fingerprint()
    rounds_up = again.item("lang-modul-edit").checks[2]
    assert rounds_up.type == "edited_python" and rounds_up.asserts_file is None
    assert (rounds_up.asserts or "").startswith("# Verdeckte Asserts für lang-modul-edit")


def test_asserts_files_ship_as_package_data(pack: ToolsPack) -> None:
    raw = yaml.safe_load(PACK_FILE.read_text(encoding="utf-8"))
    names = [
        check["asserts_file"]
        for item in raw["items"]
        for check in item["checks"]
        if "asserts_file" in check
    ]
    assert names == ["werkzeuge/csv_summe_asserts.txt", "werkzeuge/bestand_asserts.txt"]
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["touchstone_ray"]
    for name in names:
        assert (REPO / "packs" / name).is_file()
        assert any(fnmatch.fnmatch(f"packs/{name}", g) for g in globs), name
    assert any(fnmatch.fnmatch("packs/werkzeuge.yaml", g) for g in globs)


# --- fixtures -----------------------------------------------------------------------------


def test_the_long_fixtures_are_the_generated_ones(pack: ToolsPack) -> None:
    script = _fixtures_script()
    generated = script.long_files()
    assert tuple(generated) == LONG_FILES
    for path, text in generated.items():
        assert pack.world.files[path] == text, path
    assert script.main(["--check"]) == 0
    assert list(pack.world.files)[-3:] == list(LONG_FILES)


def test_the_planted_facts_stand_exactly_once(pack: ToolsPack) -> None:
    files = pack.world.files
    code, handbook, changes = (files[p] for p in LONG_FILES)
    assert code.count("SICHERHEITSFAKTOR = 1.25\n") == 1
    assert code.count("    return (menge // einheit) * einheit\n") == 1
    assert handbook.count("Sicherheitsfaktor von 1,5") == 1
    assert handbook.count("nur bis 10 Werktage nach Zustellung") == 1
    assert changes.count("von 1,5 auf 1,25 gesenkt") == 1
    assert changes.count("\n## 3.2.0 (") == 1
    assert changes.index("## 3.4.1 (") < changes.index("## 3.2.0 (") < changes.index("## 1.0.0 (")
    compile(code, "bestand.py", "exec")


def test_long_context_items_carry_about_30k_tokens(pack: ToolsPack) -> None:
    long_items = [item for item in pack.items if item.context_files]
    assert [item.id for item in long_items] == [
        "lang-handbuch-retoure",
        "lang-code-vs-handbuch",
        "lang-modul-edit",
    ]
    for item in long_items:
        assert item.context_files == LONG_FILES
        messages = [{"role": "system", "content": item.system or ""}]
        messages += [{"role": "tool", "content": pack.world.files[p]} for p in LONG_FILES]
        messages.append({"role": "user", "content": item.prompt})
        count = estimate_prompt_tokens(messages)
        assert 28_000 <= count.tokens <= 32_000, (item.id, count.tokens)
        assert not fits(count, item.max_tokens, 16_384)
        assert fits(count, item.max_tokens, 65_536)
    texts = [pack.world.files[p] for p in LONG_FILES]
    assert sum(map(len, texts)) == 86_844  # characters; 29,103 tokens by Gemma 3's tokenizer
    assert sum(math.ceil(len(t) / 3) for t in texts) == 28_948
    others = [item for item in pack.items if not item.context_files]
    assert all(len(item.prompt) < 1_000 for item in others)


def test_the_ambiguous_edit_really_is_ambiguous(pack: ToolsPack) -> None:
    item = pack.item("edit-mehrdeutig")
    text = pack.world.files["src/preise.py"]
    assert text.count("return round(netto * 1.19, 2)") == 2
    assert (
        text.count('    """Bruttopreis für Lebensmittel."""\n    return round(netto * 1.19, 2)')
        == 1
    )
    assert "zweimal" in item.title and "Kontext" in item.title


# --- the world answers a careful model's calls ----------------------------------------------


def _reply(pack: ToolsPack, made: ToolCall) -> tuple[str, str]:
    """``(source, text)`` the stand-in world gives ``made`` by the documented rules (SPEC §3b):
    the first canned result whose ``match`` the arguments contain, a fixture file for
    ``read``, the listing for ``ls``/``find``, else the default."""
    args: dict[str, Any] = made.arguments or {}
    for canned in pack.world.results:
        if canned.tool == made.name and all(args.get(k) == v for k, v in canned.match.items()):
            return ("canned" if canned.match else "catch-all"), canned.reply
    if made.name == "read":
        path = str(args["path"]).removeprefix("./")
        return ("file", pack.world.files[path]) if path in pack.world.files else ("missing", "")
    if made.name in ("ls", "find"):
        return "listing", ""
    return "default", pack.world.default


@pytest.mark.parametrize("item_id", list(ITEM_TOOLS))
def test_a_careful_models_calls_get_real_replies(pack: ToolsPack, item_id: str) -> None:
    for turn in GOOD[item_id]:
        for made in turn.tool_calls:
            source, text = _reply(pack, made)
            if made.name == "read":
                assert source == "file", made.arguments
            elif made.name in ("write", "edit"):
                assert (source, text) == ("default", "ok"), made.arguments
            elif made.name in ("ls", "find"):
                assert source == "listing"
            elif made.name in ("order_status", "add_to_cart", "get_weather"):
                assert source == "canned", made.arguments
            else:
                assert source == "catch-all", made.arguments
            if source in ("canned", "catch-all") and text.startswith("{"):
                reply = json.loads(text)
                assert "error" not in reply and reply.get("ok", True) is True, text


def test_the_careless_edit_gets_the_error_a_real_edit_tool_gives(pack: ToolsPack) -> None:
    edits = [m for turn in BAD["edit-mehrdeutig"] for m in turn.tool_calls if m.name == "edit"]
    source, text = _reply(pack, edits[0])
    assert source == "canned"
    assert text.startswith("Fehler: `old` kommt in src/preise.py 2-mal vor; nichts geändert.")


# --- the checks on the reference turns ------------------------------------------------------


def test_the_references_cover_every_item() -> None:
    assert list(GOOD) == list(ITEM_TOOLS)
    assert list(BAD) == list(ITEM_TOOLS)
    assert list(BAD_FAILS) == list(ITEM_TOOLS)


def _outcomes(pack: ToolsPack, item_id: str, good: bool) -> list[CheckOutcome]:
    item = pack.item(item_id)
    return run_checks(pack, item, (GOOD if good else BAD)[item_id])


@pytest.mark.parametrize("item_id", list(ITEM_TOOLS))
def test_every_check_passes_on_a_careful_models_turns(pack: ToolsPack, item_id: str) -> None:
    item = pack.item(item_id)
    outcomes = _outcomes(pack, item_id, good=True)
    assert [o.id for o in outcomes] == [c.id for c in item.checks]
    failed = {o.id: o.detail for o in outcomes if o.ok is False}
    assert failed == {}
    unmeasured = {o.id: o.detail for o in outcomes if o.ok is None}
    assert set(unmeasured) <= _unmeasurable(item), unmeasured
    assert verdict(outcomes) == (True, sorted(unmeasured, key=[o.id for o in outcomes].index))


@pytest.mark.parametrize("item_id", list(ITEM_TOOLS))
def test_the_typical_mistake_fails_exactly_the_named_checks(pack: ToolsPack, item_id: str) -> None:
    item = pack.item(item_id)
    outcomes = _outcomes(pack, item_id, good=False)
    skip = _unmeasurable(item)
    failed = {o.id for o in outcomes if o.ok is False}
    unmeasured = {o.id for o in outcomes if o.ok is None}
    assert failed == BAD_FAILS[item_id] - skip, {o.id: o.detail for o in outcomes}
    assert unmeasured - skip == BAD_NOT_MEASURED.get(item_id, set())
    assert verdict(outcomes)[0] is False


def test_the_careless_ambiguous_edit_fails_with_the_reason(pack: ToolsPack) -> None:
    outcomes = {o.id: o for o in _outcomes(pack, "edit-mehrdeutig", good=False)}
    assert outcomes["wendet-sich-an"].ok is False
    assert outcomes["wendet-sich-an"].detail == (
        "call 2 (edit, turn 2): old text found 2 times in src/preise.py"
    )
    if "nur-lebensmittel" not in _unmeasurable(pack.item("edit-mehrdeutig")):
        assert outcomes["nur-lebensmittel"].detail == (
            "no edit applies: call 2 (edit, turn 2): old text found 2 times in src/preise.py"
        )


def test_failed_hidden_asserts_say_what_was_expected(pack: ToolsPack) -> None:
    for item_id, detail in (
        (
            "code-js-bereiche",
            "exit 1: AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: "
            "'4-5' !== '4,5'",
        ),
        ("lang-modul-edit", "exit 1: AssertionError (assert runde(101, 25) == 125)"),
        ("code-dauer-datei", "exit 1: AssertionError: kein ValueError für '1m1h'"),
    ):
        item = pack.item(item_id)
        code = next(c for c in item.checks if c.type in CODE_CHECKS)
        if code.id in _unmeasurable(item):
            continue
        outcome = next(o for o in _outcomes(pack, item_id, good=False) if o.id == code.id)
        assert (outcome.ok, outcome.detail) == (False, detail)
