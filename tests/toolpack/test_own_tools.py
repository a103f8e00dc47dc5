"""Tools an item defines for itself (``own_tools``): resolution and the loader's rules."""

from __future__ import annotations

from typing import Any

import pytest

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack import ToolSpec, tools_pack_from_data

READ = {
    "name": "read",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
READ_LINES = {
    "name": "read",
    "description": "Read some lines.",
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
}


def _pack(item: dict[str, Any]) -> dict[str, Any]:
    base = {
        "id": "a",
        "prompt": "Read it.",
        "checks": [{"id": "c", "type": "calls", "expect": ["read"]}],
    }
    return {
        "kind": "tools",
        "id": "own",
        "title": "Own",
        "tools": [READ],
        "items": [{**base, **item}],
    }


def test_own_tool_wins_over_the_pack_tool_of_that_name() -> None:
    pack = tools_pack_from_data(_pack({"tools": ["read"], "own_tools": [READ_LINES]}), "own.yaml")
    item = pack.items[0]
    assert pack.tool("read", item) == ToolSpec.model_validate(READ_LINES)
    assert pack.tool("read") == ToolSpec.model_validate(READ)
    assert pack.offered(item) == [ToolSpec.model_validate(READ_LINES)]


def test_own_tool_alone_is_offered_and_checkable() -> None:
    grep = {"name": "grep", "parameters": {"type": "object", "properties": {"pattern": {}}}}
    data = _pack({"tools": ["read", "grep"], "own_tools": [grep]})
    data["items"][0]["checks"].append(
        {"id": "g", "type": "arg_regex", "tool": "grep", "path": "$.pattern", "pattern": "x"}
    )
    pack = tools_pack_from_data(data, "own.yaml")
    assert [t.name for t in pack.offered(pack.items[0])] == ["read", "grep"]


def test_own_tool_not_named_in_tools_is_refused() -> None:
    with pytest.raises(PackError) as info:
        tools_pack_from_data(
            _pack({"tools": ["read"], "own_tools": [{"name": "grep"}]}), "own.yaml"
        )
    assert (
        str(info.value) == "own.yaml: items[0].own_tools[0].name: not named in tools (got 'grep')"
    )


def test_own_tool_defined_twice_is_refused() -> None:
    with pytest.raises(PackError) as info:
        tools_pack_from_data(
            _pack({"tools": ["read"], "own_tools": [READ_LINES, READ_LINES]}), "own.yaml"
        )
    assert str(info.value) == (
        "own.yaml: items[0].own_tools[1].name: duplicate tool (first at "
        "items[0].own_tools[0].name) (got 'read')"
    )
