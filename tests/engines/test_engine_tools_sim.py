"""The simulator's tool-call turns through the real engines, both protocols: each failure shape
of ``tool_call_shape``, scripted parallel calls, a call cut by ``max_tokens``, a loop that ends
with a text answer, and TTFT at the first call token (checked against the sim's trace)."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import run, settings

from touchstone_ray.engines import ChatRequest, ChatResult, create_engine
from touchstone_ray.records import ToolCall

FAST = {"ttft_ms": 30, "tps": 500, "answer_tokens": 12}
TOL = 0.020
WEATHER = {
    "type": "function",
    "function": {
        "name": "wetter",
        "description": "Wetter einer Stadt",
        "parameters": {
            "type": "object",
            "properties": {"stadt": {"type": "string"}, "tage": {"type": "integer"}},
            "required": ["stadt"],
        },
    },
}
READ = {
    "type": "function",
    "function": {
        "name": "lesen",
        "parameters": {"type": "object", "properties": {"pfad": {"type": "string"}}},
    },
}
ASK = [{"role": "user", "content": "Wie wird das Wetter in Berlin?"}]
REQ = ChatRequest(model="m", messages=ASK, tools=[WEATHER, READ])
BUILT = {"stadt": "wert", "tage": 1}
"""The arguments the sim builds from WEATHER's schema (28 characters of JSON: 4 pieces)."""
APIS = ["openai", "ollama"]


def sim_chats(
    api: str, knobs: dict[str, Any], *reqs: ChatRequest
) -> tuple[list[ChatResult], list[dict[str, Any]]]:
    """``reqs`` in turn through one simulated engine; the results and the sim's traces."""
    engine = create_engine("simulated", settings("unused"), sim={"api": api, **FAST, **knobs})

    async def go() -> tuple[list[ChatResult], list[dict[str, Any]]]:
        try:
            results = [await engine.chat(req) for req in reqs]
            root = engine.base_url.removesuffix("/v1")
            _, data = await engine.request_json("GET", root + "/sim/trace?limit=50")
            return results, data["traces"]
        finally:
            await engine.aclose()

    out: tuple[list[ChatResult], list[dict[str, Any]]] = run(go())
    return out


def one(api: str, knobs: dict[str, Any], req: ChatRequest = REQ) -> ChatResult:
    (result,), _ = sim_chats(api, knobs, req)
    return result


def no_ids(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [c.model_dump(exclude={"id"}) for c in calls]


def ok_call(arguments: Any, valid: bool = True, name: str = "wetter") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "arguments_valid_json": valid}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("shape", "openai_args", "ollama_args", "tokens"),
    [
        ("ok", BUILT, BUILT, 5),
        ("wrong_types", {"stadt": 4, "tage": "1"}, {"stadt": 4, "tage": "1"}, 5),
        ("empty_args", {}, {}, 2),
        # OpenAI: a JSON string holding the object; Ollama: each value JSON-encoded
        ("json_in_json", '{"stadt": "wert", "tage": 1}', {"stadt": '"wert"', "tage": "1"}, 6),
    ],
)
def test_each_shape_through_the_engines(
    api: str, shape: str, openai_args: Any, ollama_args: Any, tokens: int
) -> None:
    r = one(api, {"tool_call_shape": shape})
    assert r.ok and r.error is None
    arguments = openai_args if api == "openai" else ollama_args
    assert no_ids(r.tool_calls) == [ok_call(arguments)]
    assert r.finish_reason == ("tool_calls" if api == "openai" else "stop")
    assert (r.response_text, r.content_empty, r.truncated) == ("", True, False)
    assert (r.completion_tokens, r.token_count_source) == (tokens, "server")
    if api == "openai":
        (call,) = r.tool_calls
        assert call.id is not None and call.id.startswith("call_") and len(call.id) == 21
    else:
        assert r.tool_calls[0].id is None


@pytest.mark.parametrize("api", APIS)
def test_an_extra_call_repeats_the_last_one(api: str) -> None:
    r = one(api, {"tool_call_shape": "extra_call"})
    assert no_ids(r.tool_calls) == [ok_call(BUILT), ok_call(BUILT)]
    assert r.completion_tokens == 10
    if api == "openai":
        assert len({c.id for c in r.tool_calls}) == 2


@pytest.mark.parametrize("api", APIS)
def test_no_call_answers_in_text(api: str) -> None:
    r = one(api, {"tool_call_shape": "no_call", "tool_answer": "Morgen wird es sonnig."})
    assert (r.tool_calls, r.tool_calls_raw, r.finish_reason) == ([], [], "stop")
    assert r.response_text == "Morgen wird es sonnig."
    assert r.completion_tokens == 4


@pytest.mark.parametrize("api", APIS)
def test_the_cut_shape_ends_length_with_half_the_arguments(api: str) -> None:
    r = one(api, {"tool_call_shape": "cut"})
    assert (r.finish_reason, r.truncated) == ("length", True)
    assert r.completion_tokens == 3  # the head and 2 of 4 pieces
    if api == "openai":
        assert no_ids(r.tool_calls) == [ok_call('{"stadt": "wert"', valid=False)]
    else:  # Ollama sends no partial call: its text comes back as content
        assert r.tool_calls == []
        assert r.response_text == '{"name": "wetter", "arguments": {"stadt": "wert"'


@pytest.mark.parametrize("api", APIS)
def test_max_tokens_cuts_the_second_of_two_parallel_calls(api: str) -> None:
    script = [
        {"name": "lesen", "arguments": {"pfad": "a.txt"}},
        {"arguments": {"stadt": "Hamburg"}},  # no name: the first offered tool
    ]
    full = one(api, {"tool_calls": script})
    assert no_ids(full.tool_calls) == [
        ok_call({"pfad": "a.txt"}, name="lesen"),
        ok_call({"stadt": "Hamburg"}),
    ]
    # '{"pfad": "a.txt"}' 17 chars: 1 + 3 tokens; '{"stadt": "Hamburg"}' 20 chars: 1 + 3 tokens
    assert full.completion_tokens == 8
    cut = one(api, {"tool_calls": script}, REQ.model_copy(update={"max_tokens": 6}))
    assert (cut.finish_reason, cut.completion_tokens) == ("length", 6)
    assert no_ids(cut.tool_calls)[0] == ok_call({"pfad": "a.txt"}, name="lesen")
    if api == "openai":
        assert no_ids(cut.tool_calls)[1] == ok_call('{"stadt"', valid=False)
    else:
        assert len(cut.tool_calls) == 1
        assert cut.response_text == '{"name": "wetter", "arguments": {"stadt"'


@pytest.mark.parametrize("api", APIS)
def test_a_tool_loop_ends_with_the_text_answer(api: str) -> None:
    knobs = {"tool_turns": 2, "tool_answer": "In Berlin scheint morgen die Sonne."}
    first_turn = REQ
    engine_knobs = {**knobs, "tool_calls": [{"name": "wetter", "arguments": {"stadt": "Berlin"}}]}
    (r1,), _ = sim_chats(api, engine_knobs, first_turn)
    history: list[dict[str, Any]] = [*ASK]

    def answer(result: ChatResult) -> None:
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": '{"stadt": "Berlin"}'},
            }
            for c in result.tool_calls
        ]
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        history.append({"role": "tool", "tool_call_id": calls[0]["id"], "content": "18 Grad"})

    answer(r1)
    second = REQ.model_copy(update={"messages": list(history)})
    answer(one(api, engine_knobs, second))
    third = REQ.model_copy(update={"messages": list(history)})
    results, traces = sim_chats(api, engine_knobs, first_turn, second, third)
    assert [len(r.tool_calls) for r in results] == [1, 1, 0]
    final = results[2]
    assert (final.response_text, final.finish_reason) == (knobs["tool_answer"], "stop")
    assert [t["finish_reason"] for t in traces] == ["tool_calls", "tool_calls", "stop"]
    # deterministic: the same request gets the same call (and id) again
    assert results[0].tool_calls == r1.tool_calls


@pytest.mark.parametrize("api", APIS)
def test_ttft_is_the_first_call_token_on_the_trace(api: str) -> None:
    (r,), (trace,) = sim_chats(api, {}, REQ)
    tool_chunks = [t for t, ch in trace["chunks"] if ch == "tool"]
    # OpenAI streams every piece; Ollama sends the whole call once its last token is due
    assert len(tool_chunks) == (5 if api == "openai" else 1)
    assert r.t_start is not None and r.ttft_s is not None and r.e2e_s is not None
    assert r.t_start + r.ttft_s == pytest.approx(tool_chunks[0], abs=TOL)
    assert r.ttft_s >= 0.030 - 0.002
    if api == "openai":
        assert r.tpot_s == pytest.approx((r.e2e_s - r.ttft_s) / 4)


@pytest.mark.parametrize("api", APIS)
def test_reasoning_comes_before_the_calls(api: str) -> None:
    knobs = {"reasoning_share": 0.5, "reasoning_channel": "reasoning_content"}
    r = one(api, knobs)
    assert r.reasoning_text and r.reasoning_source == (
        "reasoning_content" if api == "openai" else "thinking"
    )
    assert (r.reasoning_only, r.content_empty) == (False, True)
    assert no_ids(r.tool_calls) == [ok_call(BUILT)]
    assert r.completion_tokens == 6 + 5  # round(12 × 0.5) reasoning tokens, then the call


def test_requests_without_tools_are_unchanged() -> None:
    plain = ChatRequest(model="m", messages=ASK)
    with_knobs = one("openai", {"tool_call_shape": "cut", "tool_answer": "nie"}, plain)
    without = one("openai", {}, plain)
    assert with_knobs.response_text == without.response_text != ""
    assert (with_knobs.tool_calls, with_knobs.finish_reason) == ([], "stop")


@pytest.mark.parametrize("api", APIS)
def test_the_simulator_says_it_takes_tools(api: str) -> None:
    engine = create_engine("simulated", settings("unused"), sim={"api": api})

    async def go() -> str | None:
        try:
            return await engine.tool_support("m")
        finally:
            await engine.aclose()

    assert run(go()) is None
