"""``bfcl:<category>`` packs read from the installed bfcl-eval package (its real data files)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack import (
    Calls,
    ExpectedCall,
    NoCall,
    ToolSpec,
    dump_tools_pack,
    load_tools_pack,
)
from touchstone_ray.toolpack.bfcl import CATEGORIES, bfcl_data_dir, load_bfcl, openai_tool

COUNTS = {
    "simple_python": (400, "simple_python_0", "simple_python_399"),
    "multiple": (200, "multiple_0", "multiple_199"),
    "parallel": (200, "parallel_0", "parallel_199"),
    "parallel_multiple": (200, "parallel_multiple_0", "parallel_multiple_199"),
    "irrelevance": (240, "irrelevance_0", "irrelevance_239"),
    "live_simple": (258, "live_simple_0-0-0", "live_simple_257-137-1"),
    "live_multiple": (1053, "live_multiple_0-0-0", "live_multiple_1052-279-0"),
    "live_parallel": (16, "live_parallel_0-0-0", "live_parallel_15-11-0"),
    "live_parallel_multiple": (
        24,
        "live_parallel_multiple_0-0-0",
        "live_parallel_multiple_23-20-0",
    ),
}
"""Items, first and last id per category in bfcl-eval 2026.3.23."""

HINT = " Note that the provided function is in Python 3 syntax."


def test_every_category_is_counted() -> None:
    assert tuple(COUNTS) == CATEGORIES


@pytest.mark.parametrize("category", CATEGORIES)
def test_category_loads_in_bfcl_order(category: str) -> None:
    pack = load_tools_pack(f"bfcl:{category}")
    n, first, last = COUNTS[category]
    assert (pack.kind, pack.id, pack.title) == ("tools", f"bfcl-{category}", f"BFCL v4 {category}")
    assert len(pack.items) == n
    assert (pack.items[0].id, pack.items[-1].id) == (first, last)
    # BFCL's own order (its sort key: the number after the category), so --limit N takes
    # BFCL's first N.
    index = [int(item.id.removeprefix(f"{category}_").split("-")[0]) for item in pack.items]
    assert index == list(range(n))
    assert {(it.max_turns, it.tool_choice, it.repeats) for it in pack.items} == {(1, "auto", 1)}
    check_types = {c.type for it in pack.items for c in it.checks}
    assert check_types == ({"no_call"} if category == "irrelevance" else {"calls"})


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_tool_schema_is_valid_json_schema(category: str) -> None:
    pack = load_bfcl(category)
    tools = [*pack.tools, *(t for it in pack.items for t in it.own_tools)]
    for schema in {json.dumps(t.parameters, sort_keys=True) for t in tools}:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema))
    assert {t.parameters["type"] for t in tools} == {"object"}
    assert all(t.description.endswith(HINT) for t in tools)
    assert all(pack.offered(it) for it in pack.items)


def test_limit_takes_the_first_items_in_file_order() -> None:
    pack = load_bfcl("live_multiple")
    lines = (bfcl_data_dir() / "BFCL_v4_live_multiple.json").read_text().splitlines()
    assert [it.id for it in pack.items[:5]] == [json.loads(line)["id"] for line in lines[:5]]
    assert [it.id for it in pack.items[:3]] == [
        "live_multiple_0-0-0",
        "live_multiple_1-0-1",
        "live_multiple_2-1-0",
    ]


def test_simple_python_0_tools_and_check() -> None:
    pack = load_bfcl("simple_python")
    item = pack.items[0]
    assert item.prompt == (
        "Find the area of a triangle with a base of 10 units and height of 5 units."
    )
    assert item.system is None
    assert item.tools == ("calculate_triangle_area",)
    assert pack.offered(item) == [
        ToolSpec(
            name="calculate_triangle_area",
            description="Calculate the area of a triangle given its base and height." + HINT,
            parameters={
                "type": "object",
                "properties": {
                    "base": {"type": "integer", "description": "The base of the triangle."},
                    "height": {"type": "integer", "description": "The height of the triangle."},
                    "unit": {
                        "type": "string",
                        "description": "The unit of measure (defaults to 'units' if not specified)",
                    },
                },
                "required": ["base", "height"],
            },
        )
    ]
    assert item.checks == (
        Calls(
            id="calls",
            expect=[
                ExpectedCall(
                    name="calculate_triangle_area",
                    args={"base": [10], "height": [5], "unit": ["units", ""]},
                )
            ],
            compare="bfcl",
        ),
    )


def test_dotted_name_becomes_underscore_in_tool_and_expected_call() -> None:
    pack = load_bfcl("simple_python")
    item = pack.item("simple_python_1")
    assert item.tools == ("math_factorial",)
    check = item.checks[0]
    assert isinstance(check, Calls)
    assert check.expect == [ExpectedCall(name="math_factorial", args={"number": [5]})]


def test_float_tuple_dict_and_any_types_converted_as_bfcl_does() -> None:
    pack = load_bfcl("simple_python")
    x_value = pack.offered(pack.item("simple_python_14"))[0].parameters["properties"]["x_value"]
    assert x_value == {
        "type": "number",
        "format": "float",
        "description": "The x-value at which the derivative is calculated. Optional, default "
        "to 0.00. This is a float type value.",
    }
    coord1 = pack.offered(pack.item("simple_python_83"))[0].parameters["properties"]["coord1"]
    assert coord1 == {
        "type": "array",
        "description": "The first coordinate as (latitude, longitude).",
        "items": {"type": "number"},
    }
    conditions = pack.offered(pack.item("simple_python_89"))[0].parameters["properties"]
    assert conditions["conditions"]["type"] == "object"
    assert conditions["conditions"]["properties"]["school"]["type"] == "string"
    data = pack.offered(pack.item("simple_python_109"))[0].parameters["properties"]["data"]
    assert data == {"type": "string", "description": "The training data for the model."}


def test_openai_tool_leaves_its_input_alone() -> None:
    doc = {
        "name": "a.b",
        "description": "D.",
        "parameters": {"type": "dict", "properties": {"x": {"type": "float", "description": ""}}},
    }
    before = json.dumps(doc)
    assert openai_tool(doc) == {
        "name": "a_b",
        "description": "D." + HINT,
        "parameters": {
            "type": "object",
            "properties": {
                "x": {
                    "type": "number",
                    "format": "float",
                    "description": " This is a float type value.",
                }
            },
        },
    }
    assert json.dumps(doc) == before


def test_system_message_becomes_the_item_system() -> None:
    item = load_bfcl("live_simple").item("live_simple_58-27-0")
    assert item.prompt == "list movies in Mumbai?"
    assert item.system is not None
    assert item.system.startswith("\nYou are an AI chatbot who helps users in providing")
    assert sum(it.system is not None for it in load_bfcl("live_simple").items) == 11


def test_parallel_expects_every_call_in_any_order() -> None:
    item = load_bfcl("parallel").item("parallel_0")
    assert item.checks == (
        Calls(
            id="calls",
            expect=[
                ExpectedCall(
                    name="spotify_play", args={"artist": ["Taylor Swift"], "duration": [20]}
                ),
                ExpectedCall(name="spotify_play", args={"artist": ["Maroon 5"], "duration": [15]}),
            ],
            ordered=False,
            allow_extra=False,
            compare="bfcl",
        ),
    )


def test_irrelevance_expects_no_call() -> None:
    item = load_bfcl("irrelevance").items[0]
    assert item.id == "irrelevance_0"
    assert item.tools == ("determine_body_mass_index",)
    assert item.checks == (NoCall(id="no_call", compare="bfcl"),)


def test_a_name_with_several_definitions_is_defined_per_item() -> None:
    pack = load_bfcl("live_multiple")
    shared = {t.name for t in pack.tools}
    own = [(it, t) for it in pack.items for t in it.own_tools]
    # 457 BFCL names, two pairs of which meet once "." becomes "_" (todo.add and todo_add,
    # send.message and send_message): 455 tool names.
    assert len(pack.tools) == 455 and len(own) > 0
    for item, tool in own:
        assert tool.name in shared and tool.name in item.tools
        assert pack.tool(tool.name, item) == tool != pack.tool(tool.name)


def test_pack_round_trips_through_its_yaml_copy(tmp_path: Path) -> None:
    pack = load_bfcl("live_parallel_multiple")
    path = tmp_path / "pack.yaml"
    path.write_text(dump_tools_pack(pack))
    again = load_tools_pack(path)
    assert again == pack
    assert again.fingerprint() == pack.fingerprint()


def test_unknown_category_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(PackError) as info:
        load_tools_pack("bfcl:simple_cobol")
    assert str(info.value) == (
        "bfcl:simple_cobol: unknown BFCL category 'simple_cobol' (known: simple_python, "
        "multiple, parallel, parallel_multiple, irrelevance, live_simple, live_multiple, "
        "live_parallel, live_parallel_multiple)"
    )
    assert info.value.exit_code == 2


def test_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``None`` in sys.modules makes the import fail as for a package that is not installed.
    monkeypatch.setitem(sys.modules, "bfcl_eval", None)
    with pytest.raises(PackError) as info:
        load_tools_pack("bfcl:simple_python")
    assert str(info.value) == (
        "bfcl: the bfcl-eval package is not installed (install it with: "
        "pip install --no-deps bfcl-eval)"
    )
    assert "\n" not in str(info.value)
