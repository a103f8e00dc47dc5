"""The simulator's tool calls: the planning functions, and the exact wire form on both
protocols over real HTTP on loopback (streamed fragments, whole calls, non-streamed replies,
the turn after the tool results)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from touchstone_ray.sim import SimConfig, SimModelKnobs, SimServer, SimToolCall
from touchstone_ray.sim._tools import (
    PlannedCall,
    example_arguments,
    offered_tools,
    plan_tool_calls,
    tool_pieces,
    tool_rounds,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "pfad": {"type": "string"},
        "zeilen": {"type": "integer"},
        "faktor": {"type": "number"},
        "roh": {"type": "boolean"},
        "liste": {"type": "array"},
        "optionen": {"type": "object"},
        "nichts": {"type": "null"},
        "modus": {"type": "string", "enum": ["kurz", "lang"]},
        "frei": {},
    },
}
READ = {"type": "function", "function": {"name": "lesen", "parameters": SCHEMA}}
LS = {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}
USER = {"role": "user", "content": "Lies die Datei."}
CALLED = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}


def plan(knobs: SimModelKnobs, messages: list[Any] | None = None) -> list[PlannedCall] | None:
    return plan_tool_calls(knobs, [READ, LS], seed=0, model="m", messages=messages or [USER])


def test_offered_tools_and_rounds() -> None:
    bare = {"name": "frei", "parameters": "kein Schema"}
    assert offered_tools([READ, bare, {"type": "function"}, "x"]) == [
        {"name": "lesen", "parameters": SCHEMA},
        {"name": "frei", "parameters": {}},
    ]
    assert offered_tools(None) == []
    assert tool_rounds([USER]) == 0
    assert tool_rounds([USER, CALLED, RESULT, CALLED, RESULT]) == 2
    assert tool_rounds([USER, CALLED, RESULT, USER]) == 0  # a new question starts again


def test_example_arguments_one_value_per_property_in_order() -> None:
    assert list(example_arguments(SCHEMA).items()) == [
        ("pfad", "wert"),
        ("zeilen", 1),
        ("faktor", 1.5),
        ("roh", True),
        ("liste", []),
        ("optionen", {}),
        ("nichts", None),
        ("modus", "kurz"),
        ("frei", "wert"),
    ]
    assert example_arguments({}) == {}


ARGS = {"pfad": "a.txt", "zeilen": 10, "roh": False, "liste": [1]}


@pytest.mark.parametrize(
    ("shape", "arguments", "text"),
    [
        ("ok", ARGS, '{"pfad": "a.txt", "zeilen": 10, "roh": false, "liste": [1]}'),
        (
            "wrong_types",
            {"pfad": 5, "zeilen": "10", "roh": "false", "liste": "[1]"},
            '{"pfad": 5, "zeilen": "10", "roh": "false", "liste": "[1]"}',
        ),
        ("empty_args", {}, "{}"),
        (
            "json_in_json",
            {"pfad": '"a.txt"', "zeilen": "10", "roh": "false", "liste": "[1]"},
            json.dumps('{"pfad": "a.txt", "zeilen": 10, "roh": false, "liste": [1]}'),
        ),
    ],
)
def test_shapes_bend_the_scripted_call(shape: str, arguments: Any, text: str) -> None:
    knobs = SimModelKnobs(
        tool_calls=[SimToolCall(name="lesen", arguments=ARGS)], tool_call_shape=shape
    )
    (call,) = plan(knobs) or []
    assert (call.name, call.arguments, call.text) == ("lesen", arguments, text)
    assert json.loads(call.text) == (arguments if shape != "json_in_json" else json.loads(text))


def test_default_script_extra_call_and_ids() -> None:
    (call,) = plan(SimModelKnobs()) or []
    assert (call.name, call.arguments) == ("lesen", example_arguments(SCHEMA))
    first, extra = plan(SimModelKnobs(tool_call_shape="extra_call")) or []
    assert (extra.name, extra.arguments, extra.text) == (first.name, first.arguments, first.text)
    assert first.id == call.id != extra.id
    assert first.id.startswith("call_") and len(first.id) == 21
    # another seed or another conversation: other ids
    other = plan_tool_calls(SimModelKnobs(), [READ], seed=1, model="m", messages=[USER])
    assert other is not None and other[0].id != call.id


def test_when_a_turn_calls_nothing() -> None:
    assert plan(SimModelKnobs(tool_call_shape="no_call")) is None
    assert plan(SimModelKnobs(tool_calls=[])) is None
    assert plan(SimModelKnobs(tool_turns=0)) is None
    assert plan(SimModelKnobs(), [USER, CALLED, RESULT]) is None  # tool_turns 1 reached
    assert plan(SimModelKnobs(tool_turns=2), [USER, CALLED, RESULT]) is not None
    assert plan_tool_calls(SimModelKnobs(), [], seed=0, model="m", messages=[USER]) is None


def test_pieces_and_a_cut_call() -> None:
    a = PlannedCall("call_a", "ls", {}, "{}")
    b = PlannedCall("call_b", "lesen", {"pfad": "a"}, '{"pfad": "a"}')  # 13 chars: 2 pieces
    pieces = tool_pieces([a, b], cut=False)
    assert [(p.index, p.text, p.head, p.last) for p in pieces] == [
        (0, "", True, False),
        (0, "{}", False, True),
        (1, "", True, False),
        (1, '{"pfad":', False, False),
        (1, ' "a"}', False, True),
    ]
    cut = tool_pieces([a, b], cut=True)
    assert [(p.index, p.text, p.last) for p in cut] == [
        (0, "", False),
        (0, "{}", True),
        (1, "", False),
        (1, '{"pfad":', False),
    ]
    # a call of one piece cut: its head alone
    assert [(p.text, p.last) for p in tool_pieces([a], cut=True)] == [("", False)]


def test_knobs_are_validated() -> None:
    with pytest.raises(ValidationError):
        SimConfig.model_validate({"tool_call_shape": "chaos"})
    with pytest.raises(ValidationError):
        SimConfig.model_validate({"tool_calls": [{"name": "x", "args": {}}]})
    with pytest.raises(ValidationError):
        SimConfig.model_validate({"tool_turns": -1})
    knobs = SimConfig.model_validate(
        {"model_overrides": {"t": {"tool_calls": [{"name": "ls"}], "tool_answer": "fertig"}}}
    ).for_model("t")
    assert (knobs.tool_calls, knobs.tool_answer) == ([SimToolCall(name="ls")], "fertig")


# --- over HTTP ------------------------------------------------------------------------------

SCRIPT = [SimToolCall(name="ls", arguments={"pfad": "src"}), SimToolCall(arguments={"pfad": "a"})]
"""Two parallel calls: ``ls`` and the first offered tool, ``lesen``."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = SimConfig(
        ttft_ms=2,
        tps=5000,
        answer_tokens=6,
        tool_calls=SCRIPT,
        tool_answer="Die Datei ist leer.",
    )
    with SimServer(config) as sim:
        assert sim.url is not None
        yield sim.url


def sse_events(url: str, **body: Any) -> list[Any]:
    payload = {"model": "m", "messages": [USER], "tools": [READ, LS], "stream": True, **body}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=payload, timeout=10) as r:
        assert r.status_code == 200
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    return [json.loads(x[6:]) if x != "data: [DONE]" else "[DONE]" for x in lines]


def test_openai_stream_fragments_exactly(url: str) -> None:
    events = sse_events(url, stream_options={"include_usage": True})
    assert events[-1] == "[DONE]"
    choices = [e["choices"][0] for e in events[:-2]]
    deltas = [c["delta"] for c in choices]
    ids = [d["tool_calls"][0]["id"] for d in deltas if "id" in d.get("tool_calls", [{}])[0]]
    assert len(ids) == 2 and all(i.startswith("call_") for i in ids)
    assert deltas == [
        {"role": "assistant"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": ids[0],
                    "type": "function",
                    "function": {"name": "ls", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"pfad":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ' "src"}'}}]},
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": ids[1],
                    "type": "function",
                    "function": {"name": "lesen", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 1, "function": {"arguments": '{"pfad":'}}]},
        {"tool_calls": [{"index": 1, "function": {"arguments": ' "a"}'}}]},
        {},
    ]
    assert [c["finish_reason"] for c in choices] == [None] * 7 + ["tool_calls"]
    usage = events[-2]["usage"]
    assert (usage["completion_tokens"], usage["prompt_tokens"]) == (6, 3)


def test_openai_non_stream_carries_the_calls(url: str) -> None:
    payload = {"model": "m", "messages": [USER], "tools": [READ, LS]}
    body = httpx.post(f"{url}/v1/chat/completions", json=payload, timeout=10).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] is None
    assert [(c["type"], c["function"]) for c in message["tool_calls"]] == [
        ("function", {"name": "ls", "arguments": '{"pfad": "src"}'}),
        ("function", {"name": "lesen", "arguments": '{"pfad": "a"}'}),
    ]
    streamed = sse_events(url)
    first_ids = [
        d["tool_calls"][0]["id"]
        for e in streamed
        if isinstance(e, dict)
        for d in [e["choices"][0]["delta"]]
        if "id" in d.get("tool_calls", [{}])[0]
    ]
    assert [c["id"] for c in message["tool_calls"]] == first_ids  # deterministic ids


def test_the_turn_after_the_results_is_the_text_answer(url: str) -> None:
    messages = [USER, CALLED, RESULT]
    events = sse_events(url, messages=messages, stream_options={"include_usage": True})
    deltas = [e["choices"][0]["delta"] for e in events[:-2]]
    text = "".join(d.get("content", "") for d in deltas)
    assert text == "Die Datei ist leer."
    assert not any("tool_calls" in d for d in deltas)
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    assert events[-2]["usage"]["completion_tokens"] == 4


def ollama_lines(url: str, **body: Any) -> list[dict[str, Any]]:
    payload = {"model": "m", "messages": [USER], "tools": [READ, LS], **body}
    with httpx.stream("POST", f"{url}/api/chat", json=payload, timeout=10) as r:
        assert r.status_code == 200
        return [json.loads(line) for line in r.iter_lines() if line]


def test_ollama_sends_each_call_whole(url: str) -> None:
    *calls, final = ollama_lines(url)
    assert [c["message"] for c in calls] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "ls", "arguments": {"pfad": "src"}}}],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "lesen", "arguments": {"pfad": "a"}}}],
        },
    ]
    assert all(c["done"] is False for c in calls)
    assert (final["done"], final["done_reason"], final["eval_count"]) == (True, "stop", 6)


def test_ollama_a_cut_call_comes_back_as_content(url: str) -> None:
    *lines, final = ollama_lines(url, options={"num_predict": 5})
    assert [line["message"].get("tool_calls") for line in lines] == [
        [{"function": {"name": "ls", "arguments": {"pfad": "src"}}}],
        None,
    ]
    assert lines[1]["message"]["content"] == '{"name": "lesen", "arguments": {"pfad":'
    assert (final["done_reason"], final["eval_count"]) == ("length", 5)


def test_ollama_non_stream_and_the_answer_after_results(url: str) -> None:
    (whole,) = ollama_lines(url, stream=False)
    assert whole["message"]["tool_calls"] == [
        {"function": {"name": "ls", "arguments": {"pfad": "src"}}},
        {"function": {"name": "lesen", "arguments": {"pfad": "a"}}},
    ]
    assert (whole["done_reason"], whole["message"]["content"]) == ("stop", "")
    ollama_history = [
        USER,
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "ls"}}]},
        {"role": "tool", "content": "a.txt", "tool_name": "ls"},
    ]
    *tokens, final = ollama_lines(url, messages=ollama_history)
    assert "".join(t["message"]["content"] for t in tokens) == "Die Datei ist leer."
    assert final["done_reason"] == "stop"
