"""The server's own truth beside the measurement: cached prompt tokens and server timings."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import delta, ndjson, odone, omsg, sse

from touchstone_ray.engines._stream import StreamParser
from touchstone_ray.engines.normalize import StreamNormalizer, is_prompt_cached
from touchstone_ray.engines.ollama import OllamaStreamParser
from touchstone_ray.engines.openai import OpenAIStreamParser

T0 = 500.0
LLAMA_TIMINGS = {
    "cache_n": 106,
    "prompt_n": 194,
    "prompt_ms": 290.5,
    "prompt_per_token_ms": 1.497,
    "prompt_per_second": 667.8,
    "predicted_n": 3,
    "predicted_ms": 40.0,
    "predicted_per_token_ms": 13.3,
    "predicted_per_second": 50.0,
}


def feed(parser_cls: type[StreamParser], pieces: list[tuple[float, bytes]]) -> dict[str, Any]:
    """Feed the pieces 0.1 s apart from T0 and return the result fields."""
    norm = StreamNormalizer(T0, 40)
    parser = parser_cls(norm)
    t = T0
    for i, (_, data) in enumerate(pieces, start=1):
        t = T0 + 0.1 * i
        parser.feed(t, data)
    if not parser.done:
        parser.eof(t)
    return norm.result(parser.t_done or t)


def last_chunk(**fields: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [], **fields}


def test_llama_cpp_usage_cached_tokens_and_timings() -> None:
    usage = {
        "prompt_tokens": 300,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 106},
    }
    pieces = sse(
        delta("Gu"),
        delta("ten"),
        delta(" Tag", finish="length"),
        last_chunk(usage=usage, timings=LLAMA_TIMINGS),
        "[DONE]",
    )
    out = feed(OpenAIStreamParser, pieces)
    assert (out["cached_tokens"], out["prompt_cached"]) == (106, True)
    assert out["server_timings"] == {
        "prompt_n": 194,
        "prompt_ms": 290.5,
        "predicted_n": 3,
        "predicted_ms": 40.0,
        "cache_n": 106,
    }
    # first token at 0.1 s; only the 194 tokens the server processed count as prefill
    assert out["ttft_s"] == pytest.approx(0.1)
    assert out["prefill_tps"] == pytest.approx((300 - 106) / 0.1)
    assert out["decode_tps"] == pytest.approx((3 - 1) / (0.5 - 0.1))


def test_timings_cache_n_alone_gives_cached_tokens() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 1}
    timings = {**LLAMA_TIMINGS, "cache_n": 0}
    pieces = sse(delta("Ja", finish="stop"), last_chunk(usage=usage, timings=timings), "[DONE]")
    out = feed(OpenAIStreamParser, pieces)
    assert (out["cached_tokens"], out["prompt_cached"]) == (0, False)
    assert out["prefill_tps"] == pytest.approx(12 / 0.1)
    assert out["decode_tps"] is None  # one token: no interval to time


def test_a_server_that_says_nothing_gives_none_never_zero() -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 2}
    pieces = sse(delta("a"), delta("b", finish="stop"), last_chunk(usage=usage), "[DONE]")
    out = feed(OpenAIStreamParser, pieces)
    assert (out["cached_tokens"], out["prompt_cached"], out["server_timings"]) == (
        None,
        False,
        None,
    )
    assert out["prefill_tps"] == pytest.approx(20 / 0.1)


def test_ollama_durations_become_server_timings_in_ms() -> None:
    done = odone("stop", prompt=12, completion=3) | {
        "prompt_eval_duration": 250_000_000,
        "eval_duration": 61_500_000,
    }
    out = feed(OllamaStreamParser, ndjson(omsg("Ant"), omsg("wort"), done))
    assert out["server_timings"] == {
        "prompt_n": 12,
        "prompt_ms": 250.0,
        "predicted_n": 3,
        "predicted_ms": 61.5,
        "cache_n": None,
    }
    assert (out["cached_tokens"], out["prompt_cached"]) == (None, False)
    assert out["decode_tps"] == pytest.approx((3 - 1) / (0.3 - 0.1))


@pytest.mark.parametrize(
    ("cached", "prompt", "hit"),
    [
        (None, 300, False),
        (0, 300, False),
        (1, 31, False),
        (1, None, False),
        (2, 40, True),
        (2, 41, False),
        (15, 300, True),
        (14, 300, False),
        (106, 300, True),
        (16, None, True),
    ],
)
def test_is_prompt_cached(cached: int | None, prompt: int | None, hit: bool) -> None:
    assert is_prompt_cached(cached, prompt) is hit
