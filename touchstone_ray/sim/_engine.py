"""The protocol-independent request pipeline: admission, planning, paced streaming, faults.

A protocol module (:mod:`._ollama`, :mod:`._openai`) parses its request body into a
:class:`ChatRequest` and supplies an :class:`Encoder` for its wire format; :func:`run_chat` does
the rest. Pacing follows a fixed schedule against absolute event-loop times: token ``i``
(0-based, both channels) is written at ``t0 + ttft_ms/1000 + i/tps`` where ``t0`` is when the
request arrived, so sleeps never accumulate drift.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any

from aiohttp import web

from touchstone_ray.sim._config import SimModelKnobs
from touchstone_ray.sim._judge import verdict_json
from touchstone_ray.sim._state import Faults, SimState, Trace
from touchstone_ray.sim._text import (
    AnswerShape,
    last_user_text,
    plan_completion,
    prompt_token_count,
    request_key,
    rng_for,
    system_text,
)
from touchstone_ray.sim._tools import ToolPiece, plan_tool_calls, tool_pieces
from touchstone_ray.sim._wire import (
    STATE_KEY,
    STOPPING_KEY,
    ChatRequest,
    Encoder,
    Result,
    SentCall,
)


async def _hang(request: web.Request, stopping: asyncio.Event) -> None:
    """Send nothing until the client gives up or the server stops (then cut the connection)."""
    while not stopping.is_set():
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), 0.1)
    if request.transport is not None:
        request.transport.abort()


def _cut(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()


async def run_chat(request: web.Request, req: ChatRequest, enc: Encoder) -> web.StreamResponse:
    """Serve one chat request: 404/503/500 admission, then the planned completion."""
    state = request.app[STATE_KEY]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    key = request_key(req.model, req.messages)
    ordinal = state.begin(req.model, key)
    trace = state.new_trace(req.protocol, req.model, key, req.stream)
    try:
        return await _serve(request, req, enc, state, trace, key, ordinal, t0)
    except ConnectionResetError:  # the client went away mid-stream: nobody left to answer
        trace.outcome = "client_gone"
        return web.Response(status=499)
    finally:
        trace.t_end = time.time()
        state.end(req.model)


async def _serve(
    request: web.Request,
    req: ChatRequest,
    enc: Encoder,
    state: SimState,
    trace: Trace,
    key: str,
    ordinal: int,
    t0: float,
) -> web.StreamResponse:
    config = state.config
    if not config.serves(req.model):
        trace.status, trace.outcome = 404, "not_found"
        return enc.error(404, f'model "{req.model}" not found, try pulling it first')
    knobs = config.for_model(req.model)
    remaining = state.load_remaining_s(req.model, knobs)
    if remaining > 0:
        trace.status, trace.outcome = 503, "loading"
        busy = enc.error(503, "model is loading")
        busy.headers["Retry-After"] = str(max(1, round(remaining + 0.5)))
        return busy
    verdict = None
    if req.schema is not None:
        verdict = verdict_json(
            req.schema,
            seed=config.seed,
            model=req.model,
            messages=req.messages,
            constant_score=knobs.judge_constant_score,
            sampling=req.sampling,
        )
    calls = None
    override = verdict
    if verdict is None and req.tools:
        calls = plan_tool_calls(
            knobs, req.tools, seed=config.seed, model=req.model, messages=req.messages
        )
        if calls is None:
            override = knobs.tool_answer
    plan = plan_completion(
        seed=config.seed,
        model=req.model,
        messages=req.messages,
        sampling=req.sampling,
        answer_tokens=knobs.answer_tokens,
        reasoning_share=knobs.reasoning_share,
        quality=knobs.quality,
        think=req.think,
        answer_override=override,
        shape=_shape(knobs, req.messages),
        endless_reasoning=knobs.endless_reasoning,
    )
    pieces: list[ToolPiece] = []
    if calls is not None and not plan.endless:  # a turn that calls: reasoning, then the calls
        cut = knobs.tool_call_shape == "cut"
        reasoning, pieces, truncated = _take(plan.reasoning, tool_pieces(calls, cut=cut), req.limit)
        answer: list[str] = []
        truncated = truncated or cut
    else:
        reasoning, answer, truncated = plan.take(req.limit)
    n_sent = len(reasoning) + len(answer) + len(pieces)
    faults = state.decide_faults(knobs, req.model, key, ordinal, n_sent)
    if faults.fail:
        trace.status, trace.outcome = 500, "fail"
        return enc.error(500, "simulated server error")
    cold = state.take_cold(req.model)
    sent_calls = _sent_calls(pieces)
    finish = "length" if truncated else ("tool_calls" if sent_calls else "stop")
    result = Result(
        model=req.model,
        reasoning="".join(reasoning),
        answer="".join(answer),
        reasoning_tokens=len(reasoning),
        answer_tokens=len(answer) + len(pieces),
        prompt_tokens=_prompt_seen(req, knobs),
        finish_reason=finish,
        ttft_s=knobs.ttft_ms / 1000,
        eval_s=n_sent / knobs.tps,
        total_s=0.0,
        load_s=knobs.load_s if cold else 0.0,
        tool_calls=sent_calls,
    )
    trace.finish_reason = result.finish_reason
    stopping = request.app[STOPPING_KEY]
    resp: web.StreamResponse
    slot = state.slot(req.model, knobs.slots) if knobs.slots is not None else None
    async with slot if slot is not None else contextlib.nullcontext():
        state.generating[req.model] += 1
        try:
            if slot is not None:
                t0 = asyncio.get_running_loop().time()  # the wait for a slot is TTFT too
            pacer = _Pacer(t0, knobs, state, req.model)
            if req.stream:
                resp = await _stream(
                    request,
                    enc,
                    knobs,
                    trace,
                    faults,
                    pacer,
                    reasoning,
                    answer,
                    pieces,
                    len(plan.reasoning) + plan.endless,  # endless: never the last one
                    result,
                )
            else:
                resp = await _whole(
                    request, enc, knobs, trace, faults, t0, n_sent, result, stopping
                )
        finally:
            state.generating[req.model] -= 1
    state.touch(req.model, req.keep_alive_s, set_expiry=req.protocol == "ollama")
    return resp


def _take(
    reasoning: list[str], pieces: list[ToolPiece], limit: int | None
) -> tuple[list[str], list[ToolPiece], bool]:
    """Reasoning then call tokens within ``limit`` tokens, and whether the limit cut them."""
    if limit is None or limit >= len(reasoning) + len(pieces):
        return reasoning, pieces, False
    kept = reasoning[:limit]
    return kept, pieces[: limit - len(kept)], True


def _sent_calls(pieces: list[ToolPiece]) -> list[SentCall]:
    """Each call the ``pieces`` sent (at least its head), with the arguments text sent."""
    texts: dict[int, list[str]] = {}
    calls: dict[int, SentCall] = {}
    for piece in pieces:
        texts.setdefault(piece.index, []).append(piece.text)
        calls[piece.index] = SentCall(piece.call, "".join(texts[piece.index]), piece.last)
    return list(calls.values())


def _shape(knobs: SimModelKnobs, messages: list[Any]) -> AnswerShape:
    """The answer shape the knobs ask for (:class:`AnswerShape`)."""
    echo = ""
    if knobs.echo_prompt == "user":
        echo = last_user_text(messages)
    elif knobs.echo_prompt == "system":
        echo = system_text(messages)
    return AnswerShape(echo=echo, leak=knobs.leak_markers, loop_period=knobs.loop_period)


def _due(t0: float, knobs: SimModelKnobs, i: int) -> float:
    return t0 + knobs.ttft_ms / 1000 + i / knobs.tps


class _Pacer:
    """When each token of one request is due (event-loop time).

    Without ``batch_slowdown`` token ``i`` is due at ``t0 + ttft + i / tps`` (fixed schedule,
    no drift). With it, each gap is ``(1 + batch_slowdown × (n − 1)) / tps`` for the ``n``
    requests of the model generating when the gap starts, so a batch decodes slower."""

    def __init__(self, t0: float, knobs: SimModelKnobs, state: SimState, model: str) -> None:
        self.t0 = t0
        self.knobs = knobs
        self.state = state
        self.model = model
        self._next = t0 + knobs.ttft_ms / 1000

    def due(self, i: int) -> float:
        """Due time of token ``i`` (call with i = 0, 1, 2, … in order)."""
        if self.knobs.batch_slowdown == 0:
            return _due(self.t0, self.knobs, i)
        if i > 0:
            n = max(1, self.state.generating[self.model])
            self._next += (1 + self.knobs.batch_slowdown * (n - 1)) / self.knobs.tps
        return self._next


async def _sleep_until(deadline: float) -> None:
    delay = deadline - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


async def _stream(
    request: web.Request,
    enc: Encoder,
    knobs: SimModelKnobs,
    trace: Trace,
    faults: Faults,
    pacer: _Pacer,
    reasoning: list[str],
    answer: list[str],
    pieces: list[ToolPiece],
    n_reason_plan: int,
    result: Result,
) -> web.StreamResponse:
    resp = web.StreamResponse(status=200, headers={"Content-Type": enc.content_type})
    resp.headers["Cache-Control"] = "no-cache"
    await resp.prepare(request)
    trace.mark("headers")
    for data, channel in enc.head():
        await resp.write(data)
        trace.mark(channel)
    stopping = request.app[STOPPING_KEY]
    comments = _comment_draws(faults, knobs.comment_rate)
    tokens: list[tuple[str, bool, ToolPiece | None]] = [
        *((t, True, None) for t in reasoning),
        *((t, False, None) for t in answer),
        *(("", False, p) for p in pieces),
    ]
    for i in range(len(tokens) + 1):
        if faults.stream_fault is not None and i == min(faults.fault_at, len(tokens)):
            trace.outcome = faults.stream_fault
            if faults.stream_fault == "stall":
                await _hang(request, stopping)
                return resp
            if faults.stream_fault == "disconnect":
                _cut(request)
                return resp
            if faults.stream_fault == "error_event":
                await resp.write(enc.error_event())
                trace.mark("error")
                trace.finish_reason = None
                return resp
            await resp.write(enc.garbage())
            trace.mark("garbage")
        if i == len(tokens):
            break
        text, is_reasoning, piece = tokens[i]
        await _sleep_until(pacer.due(i))
        if comments is not None and comments.random() < knobs.comment_rate:
            line = enc.comment()
            if line is not None:
                await resp.write(line)
                trace.mark("comment")
        if piece is not None:
            data = enc.tool_piece(piece)
            if data:  # Ollama sends each call whole, with its last piece
                await resp.write(data)
                trace.mark("tool")
            continue
        first = is_reasoning and i == 0
        last = is_reasoning and i == n_reason_plan - 1
        await resp.write(enc.token(text, is_reasoning, first, last))
        trace.mark("reasoning" if is_reasoning else "content")
    result.total_s = asyncio.get_running_loop().time() - pacer.t0
    for data, channel in enc.tail(result):
        await resp.write(data)
        trace.mark(channel)
    await resp.write_eof()
    return resp


def _comment_draws(faults: Faults, rate: float) -> random.Random | None:
    return rng_for("comment", faults.comment_seed) if rate > 0 else None


async def _whole(
    request: web.Request,
    enc: Encoder,
    knobs: SimModelKnobs,
    trace: Trace,
    faults: Faults,
    t0: float,
    n_sent: int,
    result: Result,
    stopping: asyncio.Event,
) -> web.StreamResponse:
    """A non-streaming reply arrives when the whole generation would have finished."""
    await _sleep_until(_due(t0, knobs, max(0, n_sent - 1)))
    fault = faults.stream_fault
    if fault is not None:
        trace.outcome = fault
    if fault == "stall":
        await _hang(request, stopping)
        return web.Response(status=500)
    if fault == "disconnect":
        _cut(request)
        return web.Response(status=500)
    if fault == "error_event":
        return enc.error(500, "simulated error during generation")
    result.total_s = asyncio.get_running_loop().time() - t0
    body = enc.garbage() if fault == "garbage" else enc.whole(result)
    resp = web.Response(body=body, status=200, content_type="application/json")
    await resp.prepare(request)
    trace.mark("headers")
    await resp.write_eof()
    trace.mark("body")
    return resp


def _prompt_seen(req: ChatRequest, knobs: SimModelKnobs) -> int:
    """Prompt tokens the model saw: all of them, or on the Ollama protocol at most the
    request's context (``num_ctx``, else ``default_num_ctx``), as Ollama cuts the front of a
    longer prompt."""
    tokens = prompt_token_count(req.messages)
    context = req.num_ctx if req.num_ctx is not None else knobs.default_num_ctx
    if req.protocol == "ollama" and context is not None:
        return min(tokens, context)
    return tokens
