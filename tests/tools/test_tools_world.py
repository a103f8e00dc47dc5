"""The stand-in world's replies (touchstone_ray.tools.world): canned results first, then
fixture reads and listings, then the default."""

from __future__ import annotations

from touchstone_ray.records import ToolCall
from touchstone_ray.toolpack import CannedResult, World
from touchstone_ray.tools.world import arguments_json, world_reply

WORLD = World(
    files={"src/app.py": "print('hi')\n", "src/util.py": "X = 1\n", "README.md": "# Demo\n"},
    results=(
        CannedResult(tool="get_weather", match={"city": "Berlin"}, reply='{"temp_c": 4}'),
        CannedResult(tool="read", match={"path": "secret.txt"}, reply="access denied"),
        CannedResult(tool="get_weather", reply='{"temp_c": 20}'),
    ),
    default="done",
)


def reply(name: str, args: object) -> tuple[str, str]:
    r = world_reply(WORLD, ToolCall(id="c1", name=name, arguments=args), "c1")
    assert r.tool_call_id == "c1" and r.name == name
    return r.source, r.content


def test_canned_results_match_their_arguments_first_match_wins() -> None:
    assert reply("get_weather", {"city": "Berlin", "unit": "c"}) == ("canned", '{"temp_c": 4}')
    assert reply("get_weather", {"city": "Paris"}) == ("canned", '{"temp_c": 20}')
    assert reply("read", {"path": "secret.txt"}) == ("canned", "access denied")


def test_read_returns_a_fixture_or_says_it_is_missing() -> None:
    assert reply("read", {"path": "src/app.py"}) == ("file", "print('hi')\n")
    assert reply("read_file", {"file": "./README.md"}) == ("file", "# Demo\n")
    assert reply("read", {"path": "nope.py"}) == ("file", "error: no such file: nope.py")


def test_listings_filter_by_folder_and_glob() -> None:
    assert reply("ls", {}) == ("listing", "README.md\nsrc/app.py\nsrc/util.py")
    assert reply("ls", {"path": "src"}) == ("listing", "src/app.py\nsrc/util.py")
    assert reply("find", {"pattern": "*.md"}) == ("listing", "README.md")
    assert reply("find", {"name": "util.py"}) == ("listing", "src/util.py")


def test_anything_else_gets_the_default_even_raw_arguments() -> None:
    assert reply("set_timer", {"minutes": 5}) == ("default", "done")
    assert reply("read", '{"path": broken') == ("default", "done")
    assert reply("get_weather", "not json") == ("canned", '{"temp_c": 20}')


def test_arguments_go_back_as_json_text() -> None:
    assert arguments_json({"a": "ä"}) == '{"a": "ä"}'
    assert arguments_json("raw {") == "raw {"
    assert arguments_json(None) == "{}"
