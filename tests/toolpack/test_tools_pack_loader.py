"""The tools pack loader (SPEC §3b): a valid pack, and one exact line per bad input."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack import dump_tools_pack, load_tools_pack, tools_pack_from_data

READ = {
    "name": "read",
    "description": "Read a file",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
}
EDIT = {
    "name": "edit",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"},
        },
        "required": ["path", "old", "new"],
    },
}
PACK: dict[str, Any] = {
    "kind": "tools",
    "id": "mini",
    "title": "Mini",
    "tools": [READ, EDIT],
    "world": {"files": {"a.py": "def f():\n    return 1\n"}},
    "items": [
        {
            "id": "t1",
            "prompt": "Read a.py",
            "tools": ["read"],
            "repeats": 2,
            "checks": [
                {"id": "calls", "type": "calls", "expect": ["read"]},
                {
                    "id": "path",
                    "type": "arg_equals",
                    "tool": "read",
                    "path": "$.path",
                    "value": "a.py",
                },
            ],
        },
        {
            "id": "t2",
            "prompt": "Make f return 2",
            "tools": ["read", "edit"],
            "context_files": ["a.py"],
            "checks": [
                {"id": "applies", "type": "edit_applies", "tool": "edit", "file": "a.py"},
                {
                    "id": "works",
                    "type": "edited_python",
                    "tool": "edit",
                    "file": "a.py",
                    "asserts_file": "t2_asserts.py",
                },
            ],
        },
    ],
}


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    (tmp_path / "t2_asserts.py").write_text("from a import f\nassert f() == 2\n")
    path = tmp_path / "pack.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_valid_pack_loads_with_its_asserts_inlined_and_round_trips(tmp_path: Path) -> None:
    pack = load_tools_pack(write(tmp_path, PACK))
    assert [it.id for it in pack.items] == ["t1", "t2"]
    assert pack.n_cells == 3
    assert [(it.id, r) for it, r in pack.cells()] == [("t1", 1), ("t1", 2), ("t2", 1)]
    works = pack.items[1].checks[1]
    assert works.type == "edited_python"
    assert works.asserts == "from a import f\nassert f() == 2\n"
    assert works.asserts_file is None
    again = tools_pack_from_data(yaml.safe_load(dump_tools_pack(pack)), "copy")
    assert again == pack
    assert again.checks_fingerprint() == pack.checks_fingerprint()


def test_the_checks_fingerprint_follows_the_checks_not_the_prompts(tmp_path: Path) -> None:
    base = load_tools_pack(write(tmp_path, PACK))
    reworded = copy.deepcopy(PACK)
    reworded["items"][0]["prompt"] = "Please read a.py"
    other = copy.deepcopy(PACK)
    other["items"][0]["checks"][1]["value"] = "b.py"
    assert tools_pack_from_data(reworded, "x", tmp_path).checks_fingerprint() == (
        base.checks_fingerprint()
    )
    assert tools_pack_from_data(reworded, "x", tmp_path).fingerprint() != base.fingerprint()
    assert tools_pack_from_data(other, "x", tmp_path).checks_fingerprint() != (
        base.checks_fingerprint()
    )


def bad(tmp_path: Path, change: Any) -> str:
    data = copy.deepcopy(PACK)
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(PackError) as err:
        load_tools_pack(path)
    return str(err.value).removeprefix(f"{path}: ")


def test_an_unknown_check_type_names_its_path(tmp_path: Path) -> None:
    line = bad(tmp_path, lambda d: d["items"][0]["checks"].append({"id": "x", "type": "vibes"}))
    assert line.startswith("items[0].checks[2]: Input tag 'vibes' found using 'type' does not ")
    assert line.endswith("(got {'id': 'x', 'type': 'vibes'})")


def test_a_check_naming_a_tool_the_item_does_not_offer(tmp_path: Path) -> None:
    line = bad(
        tmp_path,
        lambda d: d["items"][0]["checks"].append(
            {"id": "x", "type": "schema_valid", "tool": "edit"}
        ),
    )
    assert line == "items[0].checks[2].tool: tool not offered by item t1 (got 'edit')"


def test_a_calls_check_expecting_a_tool_not_offered(tmp_path: Path) -> None:
    line = bad(tmp_path, lambda d: d["items"][0]["checks"][0].update(expect=["read", "edit"]))
    assert line == "items[0].checks[0].expect[1]: tool not offered by item t1 (got 'edit')"


def test_a_json_path_the_schema_cannot_match(tmp_path: Path) -> None:
    line = bad(tmp_path, lambda d: d["items"][0]["checks"][1].update(path="$.file"))
    assert (
        line == "items[0].checks[1].path: cannot match the parameters of tool read (got '$.file')"
    )
    line = bad(tmp_path, lambda d: d["items"][0]["checks"][1].update(path="$.path[0]"))
    assert line == (
        "items[0].checks[1].path: cannot match the parameters of tool read (got '$.path[0]')"
    )


def test_a_json_path_that_is_not_one(tmp_path: Path) -> None:
    line = bad(tmp_path, lambda d: d["items"][0]["checks"][1].update(path="path"))
    assert line == "items[0].checks[1].arg_equals.path: String should match pattern " + (
        "'^\\$(\\.[A-Za-z_][A-Za-z0-9_-]*|\\[\\d+\\])+$' (got 'path')"
    )


def test_an_asserts_file_that_is_missing(tmp_path: Path) -> None:
    line = bad(tmp_path, lambda d: d["items"][1]["checks"][1].update(asserts_file="gone.py"))
    assert line == (
        f"items[1].checks[1].asserts_file: cannot read {tmp_path / 'gone.py'} "
        "(No such file or directory) (got 'gone.py')"
    )


def test_files_and_tools_the_world_does_not_have(tmp_path: Path) -> None:
    assert bad(tmp_path, lambda d: d["items"][1].update(context_files=["b.py"])) == (
        "items[1].context_files[0]: not a file of world.files (got 'b.py')"
    )
    assert bad(tmp_path, lambda d: d["items"][1]["checks"][0].update(file="b.py")) == (
        "items[1].checks[0].file: not a file of world.files (got 'b.py')"
    )
    assert bad(tmp_path, lambda d: d["items"][0].update(tools=["read", "write"])) == (
        "items[0].tools[1]: unknown tool (got 'write')"
    )
    assert bad(tmp_path, lambda d: d["items"][0].update(tool_choice="edit")) == (
        "items[0].tool_choice: expected auto, none, required or an offered tool's name (got 'edit')"
    )


def test_duplicates_and_unknown_keys(tmp_path: Path) -> None:
    assert bad(tmp_path, lambda d: d["items"][1].update(id="t1")) == (
        "items[1].id: duplicate item (first at items[0].id) (got 't1')"
    )
    assert bad(tmp_path, lambda d: d["items"][0]["checks"][1].update(id="calls")) == (
        "items[0].checks[1].id: duplicate check (first at items[0].checks[0].id) (got 'calls')"
    )
    assert bad(tmp_path, lambda d: d["items"][0].update(prompts="x")) == (
        "items[0].prompts: unknown key (got 'x')"
    )
    assert bad(tmp_path, lambda d: d.update(kind="quality")) == (
        "kind: Input should be 'tools' (got 'quality')"
    )
