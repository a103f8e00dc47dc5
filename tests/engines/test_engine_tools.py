"""Tool calls through the engines: recorded byte streams of vLLM, OpenAI, llama.cpp and Ollama
replayed on loopback, the request bodies, and servers that will not take tools (vLLM's 400,
llama.cpp's 500 and ``/props`` caps, Ollama's 400 and ``/api/show`` capabilities)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import ReplayServer, Reply, assert_sent_at, run, settings

from touchstone_ray.engines import ChatRequest, ChatResult, Engine, create_engine
from touchstone_ray.records import ToolCall

RECORDINGS = Path(__file__).parent / "recordings"
CHAT = "/v1/chat/completions"
OLLAMA_CHAT = "/api/chat"
NDJSON = "application/x-ndjson"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Aktuelles Wetter einer Stadt",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Uhrzeit einer Zeitzone",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    },
}
ASK = [{"role": "user", "content": "Wie ist das Wetter in Berlin?"}]
REQ = ChatRequest(model="m", messages=ASK, tools=[WEATHER, TIME], max_tokens=256)


def recorded(name: str, delay_s: float = 0.01) -> Reply:
    """The recording ``name`` replayed event by event (SSE) or line by line (NDJSON),
    ``delay_s`` apart."""
    raw = (RECORDINGS / name).read_bytes()
    if name.endswith(".ndjson"):
        lines = [line + b"\n" for line in raw.split(b"\n") if line]
        return Reply(chunks=[(delay_s, line) for line in lines], content_type=NDJSON)
    events = [e + b"\n\n" for e in raw.split(b"\n\n") if e]
    return Reply(chunks=[(delay_s, e) for e in events])


def chat(kind: str, replay: ReplayServer, req: ChatRequest = REQ, **kw: Any) -> ChatResult:
    base = replay.url if kind == "ollama" else replay.url + "/v1"
    engine = create_engine(kind, settings(base, **kw))

    async def go() -> ChatResult:
        try:
            return await engine.chat(req)
        finally:
            await engine.aclose()

    result: ChatResult = run(go())
    return result


def ask(engine: Engine, name: str, *args: Any) -> Any:
    async def go() -> Any:
        try:
            return await getattr(engine, name)(*args)
        finally:
            await engine.aclose()

    return run(go())


# --- recorded streams -----------------------------------------------------------------------


def test_vllm_fragments_after_reasoning_assemble_into_one_call(replay: ReplayServer) -> None:
    replay.set(CHAT, recorded("vllm_tool_calls.sse"))
    r = chat("vllm", replay)
    assert r.ok and r.attempt == 1 and r.error is None
    assert r.tool_calls == [
        ToolCall(
            id="chatcmpl-tool-5b8e0c1d2f3a4b6c",
            name="get_weather",
            arguments={"city": "Berlin", "unit": "celsius"},
            arguments_valid_json=True,
        )
    ]
    assert r.tool_calls_raw == [
        {
            "index": 0,
            "id": "chatcmpl-tool-5b8e0c1d2f3a4b6c",
            "type": "function",
            "function": {
                "name": "get_weather",
                "arguments": '{"city": "Berlin", "unit": "celsius"}',
            },
        }
    ]
    assert (r.finish_reason, r.truncated) == ("tool_calls", False)
    assert (r.response_text, r.content_empty, r.reasoning_only) == ("", True, False)
    assert (r.reasoning_text, r.reasoning_source) == (
        "Der Nutzer fragt nach dem Wetter in Berlin.",
        "reasoning_content",
    )
    assert (r.prompt_tokens, r.completion_tokens, r.token_count_source) == (212, 31, "server")
    assert r.ttfa_s is None  # no answer text: the turn is calls only
    seen = replay.requests(CHAT)[0]
    assert_sent_at(seen, r, "ttft_s", 1, 0.02)  # the first reasoning chunk
    assert_sent_at(seen, r, "e2e_s", 11, 0.12)


def test_openai_parallel_calls_in_order_with_ids(replay: ReplayServer) -> None:
    replay.set(CHAT, recorded("openai_parallel_tool_calls.sse"))
    r = chat("openai", replay)
    assert r.ok and r.finish_reason == "tool_calls"
    assert [c.model_dump() for c in r.tool_calls] == [
        {
            "id": "call_Q2hVv7WjM4kB9xYzA1sD3fGh",
            "name": "get_weather",
            "arguments": {"city": "Berlin"},
            "arguments_valid_json": True,
        },
        {
            "id": "call_R8nT2pLx5cV0bN6mQ4wE7yUi",
            "name": "get_time",
            "arguments": {"timezone": "Europe/Berlin"},
            "arguments_valid_json": True,
        },
    ]
    assert [raw["function"]["arguments"] for raw in r.tool_calls_raw] == [
        '{"city": "Berlin"}',
        '{"timezone": "Europe/Berlin"}',
    ]
    assert [raw["index"] for raw in r.tool_calls_raw] == [0, 1]
    assert (r.prompt_tokens, r.completion_tokens, r.reasoning_tokens) == (96, 47, 0)
    # the role and the first call's head come in one chunk: it is the first token
    assert_sent_at(replay.requests(CHAT)[0], r, "ttft_s", 0, 0.01)


def test_llamacpp_call_after_a_role_only_chunk_times_the_first_fragment(
    replay: ReplayServer,
) -> None:
    replay.set(CHAT, recorded("llamacpp_tool_calls.sse"))
    r = chat("llamacpp", replay)
    assert r.ok
    assert r.tool_calls == [
        ToolCall(
            id="Zq5vW0xR8tN2mK4pL6jH9gF3dS1aB7cE", name="get_weather", arguments={"city": "Berlin"}
        )
    ]
    assert r.tool_calls_raw[0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city":"Berlin"}',
    }
    assert (r.finish_reason, r.completion_tokens, r.cached_tokens) == ("tool_calls", 18, 1)
    assert r.server_timings == {
        "prompt_n": 244,
        "prompt_ms": 410.2,
        "predicted_n": 18,
        "predicted_ms": 372.5,
        "cache_n": 1,
    }
    seen = replay.requests(CHAT)[0]
    assert_sent_at(seen, r, "ttft_s", 1, 0.02)  # the role-only chunk 0 does not count
    assert r.ttft_s is not None and r.e2e_s is not None and r.itl_p50_s is not None
    assert r.tpot_s == pytest.approx((r.e2e_s - r.ttft_s) / 17)
    assert replay.requests(CHAT)[0].body["tools"] == [WEATHER, TIME]


def test_a_call_cut_by_max_tokens_keeps_its_raw_arguments(replay: ReplayServer) -> None:
    replay.set(CHAT, recorded("vllm_tool_call_cut.sse"))
    r = chat("vllm", replay)
    assert r.ok and (r.finish_reason, r.truncated) == ("length", True)
    assert r.tool_calls == [
        ToolCall(
            id="chatcmpl-tool-0a1b2c3d4e5f6a7b",
            name="get_weather",
            arguments='{"city": "Ber',
            arguments_valid_json=False,
        )
    ]
    assert (r.prompt_tokens, r.completion_tokens) == (205, 8)


def test_ollama_whole_calls_with_object_arguments_and_no_ids(replay: ReplayServer) -> None:
    replay.set(OLLAMA_CHAT, recorded("ollama_tool_calls.ndjson"))
    r = chat("ollama", replay)
    assert r.ok and r.finish_reason == "stop"
    assert r.tool_calls == [
        ToolCall(id=None, name="get_weather", arguments={"city": "Berlin", "unit": "celsius"}),
        ToolCall(id=None, name="get_time", arguments={"timezone": "Europe/Berlin"}),
    ]
    assert r.tool_calls_raw == [
        {"function": {"name": "get_weather", "arguments": {"city": "Berlin", "unit": "celsius"}}},
        {"function": {"name": "get_time", "arguments": {"timezone": "Europe/Berlin"}}},
    ]
    assert (r.reasoning_text, r.reasoning_source, r.response_text) == (
        "Wetter abfragen.",
        "thinking",
        "",
    )
    assert (r.prompt_tokens, r.completion_tokens, r.reasoning_only) == (187, 42, False)
    seen = replay.requests(OLLAMA_CHAT)[0]
    assert_sent_at(seen, r, "ttft_s", 0, 0.01)
    body = seen.body
    assert body["tools"] == [WEATHER, TIME] and "tool_choice" not in body
    assert body["options"] == {"num_predict": 256}  # null sampling fields are not sent


def test_missing_ids_stay_none_and_bad_json_stays_raw(replay: ReplayServer) -> None:
    """A server without call ids, arguments that are no JSON, a JSON string holding JSON, and
    a call with no arguments text at all: all recorded, none crashes the cell."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"object": "chat.completion.chunk", "choices": [choice]}

    def call(index: int, name: str, arguments: str) -> dict[str, Any]:
        fragment = {"index": index, "function": {"name": name, "arguments": arguments}}
        return chunk({"tool_calls": [fragment]})

    events = [
        call(0, "get_weather", "{city: Berlin}"),
        call(1, "get_time", '"{\\"timezone\\": \\"UTC\\"}"'),
        call(2, "get_time", ""),
        chunk({}, "tool_calls"),
    ]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    replay.set(CHAT, Reply(chunks=[(0.0, body + b"data: [DONE]\n\n")]))
    r = chat("openai", replay)
    assert r.ok and r.finish_reason == "tool_calls"
    assert r.tool_calls == [
        ToolCall(
            id=None, name="get_weather", arguments="{city: Berlin}", arguments_valid_json=False
        ),
        ToolCall(
            id=None, name="get_time", arguments='{"timezone": "UTC"}', arguments_valid_json=True
        ),
        ToolCall(id=None, name="get_time", arguments=None, arguments_valid_json=False),
    ]
    assert [raw["id"] for raw in r.tool_calls_raw] == [None, None, None]
    assert r.token_count_source == "estimated"
    # 3 token chunks; characters: names 11 + 8 + 8, arguments 14 + 27 + 0 = 68 -> 17
    assert r.completion_tokens == 17


# --- what is sent -----------------------------------------------------------------------------

HISTORY: list[dict[str, Any]] = [
    *ASK,
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Erst das Wetter.",
        "reasoning": "Erst das Wetter.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Berlin"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{not json"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18 Grad, sonnig"},
    {"role": "tool", "tool_call_id": "call_2", "content": "14:05"},
]


def test_openai_body_carries_tools_choice_and_the_history_as_given(replay: ReplayServer) -> None:
    replay.set(CHAT, recorded("llamacpp_tool_calls.sse", delay_s=0))
    req = ChatRequest(
        model="m",
        messages=HISTORY,
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        temperature=None,
        seed=None,
        max_tokens=None,
    )
    r = chat("openai", replay, req)
    assert r.ok
    body = replay.requests(CHAT)[0].body
    assert body == {
        "model": "m",
        "messages": HISTORY,
        "tools": [WEATHER],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert r.request == {
        "tools": ["get_weather"],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    }


def test_ollama_body_translates_the_openai_history(replay: ReplayServer) -> None:
    replay.set(OLLAMA_CHAT, recorded("ollama_tool_calls.ndjson", delay_s=0))
    later = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_time", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "content": {"zeit": "14:06"}},
    ]
    req = ChatRequest(model="m", messages=[*HISTORY, *later], tools=[WEATHER], tool_choice="auto")
    r = chat("ollama", replay, req)
    assert r.ok
    body = replay.requests(OLLAMA_CHAT)[0].body
    assert body["messages"] == [
        *ASK,
        {
            "role": "assistant",
            "content": "",
            "thinking": "Erst das Wetter.",
            "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Berlin"}}},
                {"function": {"name": "get_time", "arguments": {}}},
            ],
        },
        {
            "role": "tool",
            "content": "18 Grad, sonnig",
            "tool_name": "get_weather",
            "tool_call_id": "call_1",
        },
        {"role": "tool", "content": "14:05", "tool_name": "get_time", "tool_call_id": "call_2"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_time", "arguments": {}}}],
        },
        {"role": "tool", "content": '{"zeit": "14:06"}', "tool_name": "get_time"},
    ]
    assert "tool_choice" not in body and body["tools"] == [WEATHER]
    assert r.request == {"tools": ["get_weather"]}
    assert HISTORY[1]["content"] is None  # the request's own messages are untouched


# --- servers that will not take tools -----------------------------------------------------------

VLLM_LINE = (
    "the server was started without tool parsing (vLLM): restart it with "
    "--enable-auto-tool-choice --tool-call-parser <parser for the model>"
)
VLLM_MESSAGE = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": VLLM_MESSAGE, "type": "BadRequestError", "param": None, "code": 400}},
        {
            "object": "error",
            "message": VLLM_MESSAGE,
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ],
    ids=["newer", "older"],
)
def test_vllm_400_without_tool_parsing_is_one_line(
    replay: ReplayServer, body: dict[str, Any]
) -> None:
    raw = json.dumps(body).encode()
    replay.set(CHAT, Reply(400, [(0, raw)], content_type="application/json"))
    r = chat("vllm", replay)
    assert not r.ok and r.error_kind == "config" and r.attempt == 1
    # one line of at most 300 characters: the advice first, then the server's own words
    assert r.error == f"{VLLM_LINE} (HTTP 400 Bad Request: {raw.decode()}"[:299] + "…"
    assert replay.count(CHAT) == 1  # never retried
    assert (r.tool_calls, r.tool_calls_raw) == ([], [])


def test_llamacpp_500_without_jinja_is_one_line_not_retried(replay: ReplayServer) -> None:
    raw = (
        b'{"error":{"code":500,"message":"tools param requires --jinja flag",'
        b'"type":"server_error"}}'
    )  # measured: llama-server --no-jinja
    replay.set(CHAT, Reply(500, [(0, raw)], content_type="application/json"))
    r = chat("llamacpp", replay)
    assert not r.ok and r.error_kind == "config"
    assert r.error == (
        "the server does not apply Jinja chat templates (llama.cpp): restart llama-server with "
        "--jinja and a template that renders tools (--chat-template-file FILE) "
        f"(HTTP 500 Internal Server Error: {raw.decode()})"
    )
    assert replay.count(CHAT) == 1


def test_ollama_400_for_a_model_without_tools_is_one_line(replay: ReplayServer) -> None:
    raw = b'{"error":"registry.ollama.ai/library/gemma3:270m does not support tools"}'
    replay.set(OLLAMA_CHAT, Reply(400, [(0, raw)], content_type="application/json"))
    r = chat("ollama", replay)
    assert not r.ok and r.error_kind == "config"
    assert r.error is not None and r.error.startswith(
        "the model's chat template cannot take tools (Ollama): use a model whose template does"
    )
    assert r.error.endswith(f"(HTTP 400 Bad Request: {raw.decode()})")


def props(caps: dict[str, bool] | None) -> Reply:
    data: dict[str, Any] = {
        "default_generation_settings": {"n_ctx": 2048},
        "build_info": "b0-unknown",
        "chat_template": "{%- for message in messages -%}…",
    }
    if caps is not None:
        data["chat_template_caps"] = caps
    return Reply(200, [(0, json.dumps(data).encode())], content_type="application/json")


MEASURED_CAPS = {
    "supports_object_arguments": False,
    "supports_parallel_tool_calls": False,
    "supports_preserve_reasoning": False,
    "supports_reasoning_effort": False,
    "supports_string_content": True,
    "supports_system_role": True,
    "supports_tool_calls": False,
    "supports_tools": False,
    "supports_typed_content": False,
}
"""``/props`` ``chat_template_caps`` of the real server with the Gemma GGUF (no tool template)."""


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        (
            MEASURED_CAPS,
            "{root}: the chat template cannot call tools (/props chat_template_caps: "
            "supports_tools false and supports_tool_calls false); restart llama-server with "
            "--jinja and a template that renders tools and tool calls (--chat-template-file FILE)",
        ),
        (
            {**MEASURED_CAPS, "supports_tools": True},
            "{root}: the chat template cannot call tools (/props chat_template_caps: "
            "supports_tool_calls false); restart llama-server with --jinja and a template that "
            "renders tools and tool calls (--chat-template-file FILE)",
        ),
        ({**MEASURED_CAPS, "supports_tools": True, "supports_tool_calls": True}, None),
        ({"supports_system_role": True}, None),  # an older build without the tool flags
        (None, None),  # a build before chat_template_caps
    ],
    ids=["measured", "no-calls", "fine", "old-caps", "no-caps"],
)
def test_llamacpp_tool_support_from_props(
    replay: ReplayServer, caps: dict[str, bool] | None, expected: str | None
) -> None:
    replay.set("/health", Reply(200, [(0, b'{"status":"ok"}')], content_type="application/json"))
    replay.set("/props", props(caps))
    engine = create_engine("llamacpp", settings(replay.url + "/v1"))
    line = ask(engine, "tool_support", "m")
    assert line == (expected.format(root=replay.url) if expected else None)
    if line is not None:
        assert "--jinja" in line and "--chat-template-file" in line and "\n" not in line


def test_ollama_tool_support_from_api_show(replay: ReplayServer) -> None:
    def show(capabilities: list[str] | None) -> Reply:
        data = {"template": "{{ .Prompt }}"} | (
            {"capabilities": capabilities} if capabilities is not None else {}
        )
        return Reply(200, [(0, json.dumps(data).encode())], content_type="application/json")

    replay.set(
        "/api/show",
        [show(["completion"]), show(["completion", "tools"]), show(None)],
    )
    answers = [
        ask(create_engine("ollama", settings(replay.url)), "tool_support", "g") for _ in "abc"
    ]
    assert answers == [
        f"{replay.url}: model g cannot take tools (/api/show capabilities: completion): use a "
        "model whose chat template renders tools, or give it such a TEMPLATE in a Modelfile",
        None,
        None,
    ]
    assert [s.body for s in replay.requests("/api/show")] == [{"model": "g"}] * 3


def test_other_engines_do_not_say(replay: ReplayServer) -> None:
    for kind in ("openai", "vllm", "lmstudio"):
        assert ask(create_engine(kind, settings(replay.url + "/v1")), "tool_support", "m") is None
    assert replay.seen == []  # nothing asked


def test_prompt_counts_take_the_tools(replay: ReplayServer) -> None:
    def reply(data: dict[str, Any]) -> Reply:
        return Reply(200, [(0, json.dumps(data).encode())], content_type="application/json")

    replay.set("/apply-template", reply({"prompt": "<|im_start|>system\nTools …"}))
    replay.set("/tokenize", [reply({"tokens": [1] * 574}), reply({"count": 133})])
    llama = create_engine("llamacpp", settings(replay.url + "/v1"))
    assert ask(llama, "count_prompt_tokens", "m", ASK, [WEATHER]) == 574
    assert replay.requests("/apply-template")[0].body == {"messages": ASK, "tools": [WEATHER]}
    vllm = create_engine("vllm", settings(replay.url + "/v1"))
    assert ask(vllm, "count_prompt_tokens", "m", HISTORY, [WEATHER, TIME]) == 133
    assert replay.requests("/tokenize")[1].body == {
        "model": "m",
        "messages": HISTORY,
        "tools": [WEATHER, TIME],
    }
    # without tools the bodies are as before
    ask(create_engine("llamacpp", settings(replay.url + "/v1")), "count_prompt_tokens", "m", ASK)
    assert replay.requests("/apply-template")[1].body == {"messages": ASK}
