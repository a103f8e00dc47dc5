"""The minimal per-chunk path: chunks that carry nothing are not parsed, every token chunk is
stamped at the socket read that brought it (recorded llama.cpp bytes, parser and loopback)."""

from __future__ import annotations

import asyncio

import pytest
from engine_helpers import ReplayServer, Reply

from touchstone_ray.engines import ChatRequest, EngineSettings
from touchstone_ray.engines._http import ReadStamps
from touchstone_ray.engines.normalize import StreamNormalizer
from touchstone_ray.engines.openai import OpenAIEngine, OpenAIStreamParser, carries_nothing

T0 = 1000.0
CHAT = "/v1/chat/completions"

_HEAD = b'"created":1764600000,"id":"chatcmpl-Ab3","model":"gemma3-270m",'
_TAIL = b'"system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}'
ROLE = (
    b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant",'
    b'"content":null}}],' + _HEAD + _TAIL + b"\n\n"
)
"""llama.cpp's first chunk: the role only, content null."""


def content(text: bytes) -> bytes:
    return (
        b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"'
        + text
        + b'"}}],'
        + _HEAD
        + _TAIL
        + b"\n\n"
    )


FINISH = (
    b'data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],' + _HEAD + _TAIL + b"\n\n"
)
USAGE = (
    b'data: {"choices":[],' + _HEAD + b'"usage":{"completion_tokens":3,"prompt_tokens":25,'
    b'"total_tokens":28,"prompt_tokens_details":{"cached_tokens":1}},"timings":{"cache_n":1,'
    b'"prompt_n":24,"prompt_ms":31.5,"prompt_per_token_ms":1.3,"prompt_per_second":761.9,'
    b'"predicted_n":3,"predicted_ms":40.2,"predicted_per_token_ms":13.4,'
    b'"predicted_per_second":74.6},' + _TAIL + b"\n\n"
)
"""The usage-only last chunk (``choices: []``) with llama.cpp's ``timings``."""

KEEPALIVE = b": keep-alive\n\n"
DONE = b"data: [DONE]\n\n"


def test_skip_parse_keeps_exact_token_stamps_and_counts() -> None:
    norm = StreamNormalizer(T0)
    parser = OpenAIStreamParser(norm)
    chunks = [
        (T0 + 0.010, KEEPALIVE),
        (T0 + 0.020, ROLE),
        (T0 + 0.031, content(b"Hal")),
        (T0 + 0.045, KEEPALIVE + content(b"lo")),
        (T0 + 0.058, content(b" Welt\\n")),
        (T0 + 0.060, FINISH),
        (T0 + 0.061, USAGE + DONE),
    ]
    for t, data in chunks:
        parser.feed(t, data)
    assert parser.done and parser.t_done == T0 + 0.061
    assert parser.skipped == 1  # the role chunk; the finish and usage chunks were parsed
    out = norm.result(parser.t_done)
    assert norm.token_times == [T0 + 0.031, T0 + 0.045, T0 + 0.058]
    assert out["ttft_s"] == pytest.approx(0.031)
    assert out["response_text"] == "Hallo Welt\n"
    assert (out["finish_reason"], out["truncated"]) == ("length", True)
    assert (out["prompt_tokens"], out["completion_tokens"]) == (25, 3)
    assert out["token_count_source"] == "server"
    assert out["cached_tokens"] == 1 and out["prompt_cached"] is False
    assert out["server_timings"] == {
        "prompt_n": 24,
        "prompt_ms": 31.5,
        "predicted_n": 3,
        "predicted_ms": 40.2,
        "cache_n": 1,
    }


@pytest.mark.parametrize(
    ("payload", "skipped"),
    [
        (b'{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}', True),
        (b'{"choices": [{"index": 0, "delta": {}, "finish_reason": null}], "usage": null}', True),
        (b'{"choices": [{"index": 0, "delta": {"content": "a"}}]}', False),
        (b'{"choices":[{"index":0,"delta":{"content":""}}]}', False),  # parsed: no token either
        (b'{"choices":[{"index":0,"delta":{"reasoning_content":"x"}}]}', False),
        (b'{"choices":[{"index":0,"delta":{"reasoning": "x"}}]}', False),
        (b'{"choices":[{"index":0,"delta":{},"finish_reason": "stop"}]}', False),
        (b'{"choices":[],"usage":{"prompt_tokens":3}}', False),
        (b'{"choices":[],"timings":{"prompt_n":3}}', False),
        (b'{"error":{"message":"boom"}}', False),
        (b'{"object": "error", "message": "boom"}', False),
        (b'{"choices": [<<garbage>>', False),  # not one object: the parser says what is wrong
    ],
)
def test_what_is_skipped(payload: bytes, skipped: bool) -> None:
    assert carries_nothing(payload) is skipped


def test_read_stamps_split_maps_pieces_to_their_reads() -> None:
    stamps = ReadStamps(payload=None)  # type: ignore[arg-type]
    stamps.ends, stamps.times = [10, 25, 40], [1.0, 2.0, 3.0]
    whole = bytes(range(40))
    first = whole[:10]
    assert stamps.split(0, first, 9.0)[0][1] is first  # one read: the chunk itself, no copy
    assert stamps.split(0, first, 9.0) == [(1.0, first)]
    assert stamps.split(0, whole, 9.0) == [
        (1.0, whole[:10]),
        (2.0, whole[10:25]),
        (3.0, whole[25:]),
    ]
    assert stamps.split(5, whole[5:25], 9.0) == [(1.0, whole[5:10]), (2.0, whole[10:25])]
    assert stamps.split(30, whole[30:40], 9.0) == [(3.0, whole[30:40])]
    assert stamps.split(35, b"x" * 10, 9.0) == [(3.0, b"xxxxx"), (9.0, b"xxxxx")]
    assert stamps.split(40, b"yz", 9.0) == [(9.0, b"yz")]


def test_token_stamps_are_the_reads_on_loopback(replay: ReplayServer) -> None:
    """Against a real loopback server writing the recorded chunks 30 ms apart, every token
    stamp lies within a few ms of the server's write of that chunk (the server takes its
    time after the write returns, so the client's read may come a moment before it)."""
    pieces = [ROLE, content(b"Hal"), content(b"lo"), content(b" Welt"), FINISH, USAGE, DONE]
    replay.set(CHAT, Reply(chunks=[(0.03, p) for p in pieces]))
    engine = OpenAIEngine(EngineSettings(base_url=replay.url + "/v1", max_attempts=1))
    norms: list[StreamNormalizer] = []
    orig = engine.new_normalizer

    def keep(t0: float, req: ChatRequest) -> StreamNormalizer:
        norms.append(orig(t0, req))
        return norms[-1]

    engine.new_normalizer = keep  # type: ignore[method-assign]

    async def go() -> object:
        try:
            req = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])
            return await engine.chat(req)
        finally:
            await engine.aclose()

    result = asyncio.run(go())
    assert result.ok, result.error  # type: ignore[attr-defined]
    seen = replay.seen[-1]
    sends = seen.send_times[1:4]  # the three content chunks
    stamps = norms[0].token_times
    assert len(stamps) == 3
    for sent, got in zip(sends, stamps, strict=True):
        assert sent - 0.002 <= got < sent + 0.02
