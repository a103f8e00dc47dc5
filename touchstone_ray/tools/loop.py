"""The agent loop of one tools cell (SPEC §3b, issue [tools] item 3).

Up to ``max_turns`` times: the model answers (one streamed chat request with the item's
tools), the stand-in world answers each of its calls (:func:`~.world.world_reply`), and the
conversation goes on with the model's turn and the replies appended. The loop ends when a turn
makes no call, or after ``max_turns`` answers; it never stops early because the checks
would pass (they run afterwards, on the driver).

The conversation is kept in the OpenAI shape whatever the server (each engine translates it):
the model's turn as ``{"role": "assistant", "content", "tool_calls": [{id, type: function,
function: {name, arguments: <JSON text>}}]}`` with the turn's reasoning under both
``reasoning`` and ``reasoning_content`` (servers read one or the other), each reply as
``{"role": "tool", "tool_call_id", "name", "content"}``. A call without an id gets
``call_<turn>_<n>`` so its reply can name it. ``context_files`` go in before the first answer as
earlier ``read`` results (an assistant turn calling ``read`` for each, and the files' text as
the replies). A forced ``tool_choice`` (a tool's name) applies to the first turn only; later
turns use ``auto``, so the model can answer after the call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from touchstone_ray.engines.base import ChatRequest, ChatResult
from touchstone_ray.tool_records import ToolTurn
from touchstone_ray.toolpack import ToolItem, ToolsPack
from touchstone_ray.tools.world import arguments_json, world_reply

__all__ = ["LoopOutcome", "context_messages", "first_messages", "run_loop", "tool_choice_body"]

Chat = Callable[[ChatRequest], Awaitable[ChatResult]]


@dataclass
class LoopOutcome:
    """What one cell's loop did: its turns, and the failed request that ended it early."""

    turns: list[ToolTurn] = field(default_factory=list)
    failure: ChatResult | None = None
    """The request that failed (a transport error: the cell has no model result)."""
    engine_version: str | None = None
    t_start: float | None = None
    """Epoch s when the first request was sent."""
    t_end: float | None = None
    """Epoch s when the last stream ended (or failed)."""
    harness_s: list[float] = field(default_factory=list)
    """Per later turn: the previous stream's end to this request's send (s, the engine's own
    epoch stamps ``t_end`` → ``t_start``): the harness's time between turns."""


def tool_choice_body(choice: str, turn: int) -> str | dict[str, Any]:
    """The request's ``tool_choice`` for ``turn`` (1 = first): ``auto`` / ``none`` /
    ``required`` as given; a tool's name forces that tool on the first turn
    (``{"type": "function", "function": {"name": …}}``) and is ``auto`` afterwards."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}} if turn == 1 else "auto"


def context_messages(pack: ToolsPack, item: ToolItem) -> list[dict[str, Any]]:
    """The item's ``context_files`` as an earlier ``read`` turn and its replies (``[]`` when
    it has none)."""
    if not item.context_files:
        return []
    calls = [
        {
            "id": f"ctx_{n}",
            "type": "function",
            "function": {"name": "read", "arguments": arguments_json({"path": path})},
        }
        for n, path in enumerate(item.context_files, start=1)
    ]
    replies = [
        {"role": "tool", "tool_call_id": f"ctx_{n}", "name": "read", "content": pack.world.files[p]}
        for n, p in enumerate(item.context_files, start=1)
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *replies]


def first_messages(pack: ToolsPack, item: ToolItem) -> list[dict[str, Any]]:
    """The conversation before the first answer: system (if any), the user prompt, then the
    context files as earlier ``read`` results."""
    messages: list[dict[str, Any]] = []
    if item.system is not None:
        messages.append({"role": "system", "content": item.system})
    messages.append({"role": "user", "content": item.prompt})
    return messages + context_messages(pack, item)


def _turn(result: ChatResult) -> ToolTurn:
    return ToolTurn(
        content=result.response_text,
        reasoning_text=result.reasoning_text,
        tool_calls_raw=list(result.tool_calls_raw),
        tool_calls=list(result.tool_calls),
        finish_reason=result.finish_reason,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        reasoning_tokens=result.reasoning_tokens,
        ttft_s=result.ttft_s,
        e2e_s=result.e2e_s,
        t_start=result.t_start,
    )


def _assistant(turn: ToolTurn, ids: list[str]) -> dict[str, Any]:
    content = turn.content if turn.content or not turn.tool_calls else None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
            }
            for call, call_id in zip(turn.tool_calls, ids, strict=True)
        ]
    if turn.reasoning_text:
        message["reasoning"] = message["reasoning_content"] = turn.reasoning_text
    return message


async def run_loop(
    chat: Chat,
    pack: ToolsPack,
    item: ToolItem,
    model: str,
    *,
    max_tokens: int | None = None,
    extra_body: dict[str, Any] | None = None,
) -> LoopOutcome:
    """Run ``item``'s loop against ``model`` through ``chat`` (an engine's ``chat``); never
    raises for a failed request (it ends the loop as :attr:`LoopOutcome.failure`).
    ``max_tokens`` caps each turn (tokens; the item's own cap wins when set)."""
    tools = [t.as_openai() for t in pack.offered(item)]
    messages = first_messages(pack, item)
    out = LoopOutcome()
    ended: float | None = None
    for n in range(1, item.max_turns + 1):
        req = ChatRequest(
            model=model,
            messages=messages,
            temperature=pack.sampling.temperature,
            seed=pack.sampling.seed,
            max_tokens=item.max_tokens or max_tokens,
            tools=tools or None,
            tool_choice=tool_choice_body(item.tool_choice, n) if tools else None,
            extra_body=dict(extra_body or {}),
        )
        result = await chat(req)
        if ended is not None and result.t_start is not None:
            out.harness_s.append(result.t_start - ended)
        ended = result.t_end
        out.engine_version = result.engine_version or out.engine_version
        if out.t_start is None:
            out.t_start = result.t_start
        out.t_end = result.t_end
        if not result.ok:
            out.failure = result
            return out
        turn = _turn(result)
        ids = [c.id or f"call_{n}_{i}" for i, c in enumerate(turn.tool_calls, start=1)]
        turn.world_replies = [
            world_reply(pack.world, call, call_id)
            for call, call_id in zip(turn.tool_calls, ids, strict=True)
        ]
        out.turns.append(turn)
        if not turn.tool_calls:
            break
        messages = [
            *messages,
            _assistant(turn, ids),
            *(
                {
                    "role": "tool",
                    "tool_call_id": r.tool_call_id,
                    "name": r.name,
                    "content": r.content,
                }
                for r in turn.world_replies
            ),
        ]
    return out
