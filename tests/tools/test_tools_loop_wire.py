"""The agent loop on the wire (a replay server on loopback, the real OpenAI engine): what each
turn's request carries — the offered tools, a forced ``tool_choice`` on the first turn only,
sampling fields that are null left out, the context files as an earlier ``read``, the model's
turn sent back with its reasoning under both ``reasoning`` and ``reasoning_content``, a made-up
id for a call that came without one, and the world's reply as a ``tool`` message."""

from __future__ import annotations

from typing import Any

from engine_helpers import ReplayServer, Reply, delta, run, settings, sse, usage

from touchstone_ray.engines import create_engine
from touchstone_ray.toolpack import tools_pack_from_data
from touchstone_ray.tools.loop import LoopOutcome, run_loop

CHAT = "/v1/chat/completions"
READ = {
    "name": "read",
    "description": "Eine Datei lesen",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
PACK: dict[str, Any] = {
    "kind": "tools",
    "id": "draht",
    "title": "Draht",
    "sampling": {"temperature": None, "seed": 7},
    "tools": [READ],
    "world": {"files": {"a.py": "A = 1\n"}},
    "items": [
        {
            "id": "lesen",
            "prompt": "Lies b.py.",
            "system": "Sei knapp.",
            "tools": ["read"],
            "tool_choice": "read",
            "context_files": ["a.py"],
            "max_turns": 3,
            "checks": [{"id": "ruft", "type": "calls", "expect": ["read"]}],
        }
    ],
}
CALL = {"index": 0, "type": "function", "function": {"name": "read", "arguments": ""}}


def test_each_turn_sends_what_the_loop_promises() -> None:
    pack = tools_pack_from_data(PACK, "draht")
    server = ReplayServer()
    server.start()
    try:
        server.set(
            CHAT,
            [
                Reply(
                    chunks=sse(
                        delta(reasoning_content="Erst lesen."),
                        delta(tool_calls=[CALL]),
                        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"path": '}}]),
                        delta(tool_calls=[{"index": 0, "function": {"arguments": '"b.py"}'}}]),
                        delta(finish="tool_calls"),
                        usage(40, 12),
                        "[DONE]",
                    )
                ),
                Reply(
                    chunks=sse(
                        delta("Gibt es nicht."), delta(finish="stop"), usage(60, 4), "[DONE]"
                    )
                ),
            ],
        )
        engine = create_engine("openai", settings(server.url + "/v1"))

        async def go() -> LoopOutcome:
            try:
                return await run_loop(engine.chat, pack, pack.items[0], "m", max_tokens=64)
            finally:
                await engine.aclose()

        outcome: LoopOutcome = run(go())
        first, second = (seen.body for seen in server.requests(CHAT))
    finally:
        server.stop()
    assert outcome.failure is None and len(outcome.turns) == 2
    assert "temperature" not in first and first["seed"] == 7 and first["max_tokens"] == 64
    assert first["tools"] == [{"type": "function", "function": READ}]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    assert second["tool_choice"] == "auto"
    context = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "ctx_1", "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.py"}'}}],
    }  # fmt: skip
    before = [
        {"role": "system", "content": "Sei knapp."},
        {"role": "user", "content": "Lies b.py."},
        context,
        {"role": "tool", "tool_call_id": "ctx_1", "name": "read", "content": "A = 1\n"},
    ]
    assert first["messages"] == before
    assert second["messages"] == [
        *before,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "b.py"}'},
                }
            ],
            "reasoning": "Erst lesen.",
            "reasoning_content": "Erst lesen.",
        },
        {
            "role": "tool",
            "tool_call_id": "call_1_1",
            "name": "read",
            "content": "error: no such file: b.py",
        },
    ]
    turn = outcome.turns[0]
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        (None, "read", {"path": "b.py"})
    ]
    assert turn.reasoning_text == "Erst lesen." and turn.finish_reason == "tool_calls"
    assert [r.tool_call_id for r in turn.world_replies] == ["call_1_1"]
    assert outcome.turns[1].content == "Gibt es nicht."
    assert len(outcome.harness_s) == 1 and 0 <= outcome.harness_s[0] < 0.5
