"""Tool-call assembly without a network: fragments by index (interleaved, without index,
repeated names, object arguments), Ollama's whole calls, the skip fast path, and TTFT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.engines._tools import ToolCallAssembler, tool_call
from touchstone_ray.engines.normalize import StreamNormalizer
from touchstone_ray.engines.ollama import OllamaStreamParser
from touchstone_ray.engines.openai import OpenAIStreamParser, carries_nothing
from touchstone_ray.records import ToolCall

RECORDINGS = Path(__file__).parent / "recordings"
T0 = 500.0


def frag(
    index: int | None = 0,
    arguments: Any = None,
    name: str | None = None,
    call_id: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"function": {}}
    if index is not None:
        out["index"] = index
    if call_id is not None:
        out["id"] = call_id
        out["type"] = "function"
    if name is not None:
        out["function"]["name"] = name
    if arguments is not None:
        out["function"]["arguments"] = arguments
    return out


def test_interleaved_parallel_fragments_assemble_by_index() -> None:
    tools = ToolCallAssembler()
    assert tools.add_fragments([frag(0, "", "lesen", "a"), frag(1, "", "ls", "b")])
    assert tools.add_fragments([frag(1, '{"pfad"')])
    assert tools.add_fragments([frag(0, '{"datei": "x.py"}'), frag(1, ': "src"}')])
    calls, raw = tools.calls()
    assert calls == [
        ToolCall(id="a", name="lesen", arguments={"datei": "x.py"}),
        ToolCall(id="b", name="ls", arguments={"pfad": "src"}),
    ]
    assert raw == [
        {
            "index": 0,
            "id": "a",
            "type": "function",
            "function": {"name": "lesen", "arguments": '{"datei": "x.py"}'},
        },
        {
            "index": 1,
            "id": "b",
            "type": "function",
            "function": {"name": "ls", "arguments": '{"pfad": "src"}'},
        },
    ]


def test_a_repeated_name_or_id_is_not_appended() -> None:
    tools = ToolCallAssembler()
    tools.add_fragments([frag(0, '{"a":', "lesen", "x")])
    tools.add_fragments([frag(0, " 1}", "lesen", "x")])  # some servers repeat both
    assert tools.calls()[0] == [ToolCall(id="x", name="lesen", arguments={"a": 1})]


def test_fragments_without_index_continue_the_last_call_until_a_new_name() -> None:
    tools = ToolCallAssembler()
    tools.add_fragments([frag(None, '{"a"', "eins")])
    tools.add_fragments([frag(None, ": 1}")])
    tools.add_fragments([frag(None, "{}", "zwei")])
    calls, raw = tools.calls()
    assert calls == [
        ToolCall(name="eins", arguments={"a": 1}),
        ToolCall(name="zwei", arguments={}),
    ]
    assert [r["index"] for r in raw] == [None, None]


def test_arguments_sent_as_an_object_are_taken_as_such() -> None:
    tools = ToolCallAssembler()
    tools.add_fragments([frag(0, {"a": [1, 2]}, "f")])
    assert tools.calls()[0] == [ToolCall(name="f", arguments={"a": [1, 2]})]
    assert tools.chars == len("f") + len('{"a": [1, 2]}')


@pytest.mark.parametrize(
    ("text", "arguments", "valid"),
    [
        ('{"n": 1}', {"n": 1}, True),
        ('"{\\"n\\": 1}"', '{"n": 1}', True),  # JSON in JSON: a string, valid JSON
        ('{"n": 1', '{"n": 1', False),  # cut
        ("n=1", "n=1", False),
        ("", None, False),
        ("  ", None, False),
        (None, None, False),
        ("[1]", [1], True),
    ],
)
def test_argument_text_parsing(text: str | None, arguments: Any, valid: bool) -> None:
    assert tool_call(None, "f", text) == ToolCall(
        name="f", arguments=arguments, arguments_valid_json=valid
    )


def test_malformed_entries_are_skipped_and_carry_nothing() -> None:
    tools = ToolCallAssembler()
    assert not tools.add_fragments("nope")
    assert not tools.add_fragments([5, None])
    assert not tools.add_fragments([frag(0, "")])  # an empty piece is no token
    assert not tools.add_whole([{"name": "no function object"}, 3])
    assert tools.calls() == ([], [])  # fragments that carried nothing are no call


def test_ollama_string_arguments_are_parsed_like_openai() -> None:
    tools = ToolCallAssembler()
    sent = {"id": "call_7", "function": {"name": "f", "arguments": '{"a": 1}'}}
    assert tools.add_whole([sent, {"function": {"name": "g"}}])
    assert tools.calls() == (
        [
            ToolCall(id="call_7", name="f", arguments={"a": 1}),
            ToolCall(name="g", arguments=None, arguments_valid_json=False),
        ],
        [sent, {"function": {"name": "g"}}],
    )


@pytest.mark.parametrize(
    ("payload", "skipped"),
    [
        (b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
         b'{"arguments":"x"}}]}}]}', False),
        (b'{"choices":[{"index":0,"delta":{"tool_calls": [ {"index":0}]}}]}', False),
        (b'{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}', True),
        (b'{"choices":[{"index":0,"delta":{"tool_calls": [ ]}}]}', True),
        (b'{"choices":[{"index":0,"delta":{"tool_calls":null}}]}', True),
    ],
)  # fmt: skip
def test_the_skip_fast_path_never_skips_a_tool_fragment(payload: bytes, skipped: bool) -> None:
    assert carries_nothing(payload) is skipped


def test_recorded_llamacpp_bytes_skip_only_the_role_chunk() -> None:
    raw = (RECORDINGS / "llamacpp_tool_calls.sse").read_bytes()
    events = [e + b"\n\n" for e in raw.split(b"\n\n") if e]
    norm = StreamNormalizer(T0)
    parser = OpenAIStreamParser(norm)
    for i, event in enumerate(events):
        parser.feed(T0 + 0.1 * (i + 1), event)
    parser.eof(T0 + 1.0)
    assert parser.skipped == 1 and parser.done
    fields = norm.result(T0 + 1.0)
    # tokens: the five fragment chunks (chunk 0 is role-only, chunk 6 the finish)
    assert norm.token_times == pytest.approx([T0 + 0.1 * i for i in range(2, 7)])
    assert fields["ttft_s"] == pytest.approx(0.2)
    assert fields["itl_p50_s"] == pytest.approx(0.1)
    assert fields["tool_calls"] == [
        ToolCall(
            id="Zq5vW0xR8tN2mK4pL6jH9gF3dS1aB7cE", name="get_weather", arguments={"city": "Berlin"}
        )
    ]
    assert (fields["finish_reason"], fields["content_empty"], fields["reasoning_only"]) == (
        "tool_calls",
        True,
        False,
    )


def test_a_chunk_with_text_and_a_call_is_one_token() -> None:
    norm = StreamNormalizer(T0)
    parser = OpenAIStreamParser(norm)
    chunk = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Ich sehe nach.",'
        b'"tool_calls":[{"index":0,"id":"c","type":"function","function":'
        b'{"name":"lesen","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}\n\n'
    )
    parser.feed(T0 + 0.3, chunk + b"data: [DONE]\n\n")
    parser.eof(T0 + 0.4)
    fields = norm.result(T0 + 0.4)
    assert norm.token_times == [T0 + 0.3]
    assert (fields["response_text"], fields["ttft_s"], fields["ttfa_s"]) == (
        "Ich sehe nach.",
        pytest.approx(0.3),
        pytest.approx(0.3),
    )
    assert fields["tool_calls"] == [ToolCall(id="c", name="lesen", arguments={})]


def test_recorded_ollama_lines_time_the_call_line() -> None:
    raw = (RECORDINGS / "ollama_tool_calls.ndjson").read_bytes()
    norm = StreamNormalizer(T0)
    parser = OllamaStreamParser(norm)
    for i, line in enumerate(raw.splitlines(keepends=True)):
        parser.feed(T0 + 0.1 * (i + 1), line)
    parser.eof(T0 + 0.5)
    assert norm.token_times == pytest.approx([T0 + 0.1, T0 + 0.2, T0 + 0.3])
    fields = norm.result(T0 + 0.5)
    assert [c.name for c in fields["tool_calls"]] == ["get_weather", "get_time"]
    assert fields["finish_reason"] == "stop"
