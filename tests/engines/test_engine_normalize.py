"""The stream normalizer and protocol parsers on byte chunks, without a network."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from engine_helpers import REQ, delta, ndjson, odone, omsg, sse, usage
from hypothesis import given, settings
from hypothesis import strategies as st

from touchstone_ray.engines import ChatRequest, EngineSettings, create_engine
from touchstone_ray.engines._stream import StreamParser
from touchstone_ray.engines.normalize import StreamNormalizer, split_think
from touchstone_ray.engines.ollama import OllamaEngine, OllamaStreamParser
from touchstone_ray.engines.openai import OpenAIEngine, OpenAIStreamParser
from touchstone_ray.errors import ConfigError, StreamProtocolError

T0 = 1000.0


def feed(
    parser_cls: type[StreamParser], chunks: list[tuple[float, bytes]], prompt_chars: int = 0
) -> dict[str, Any]:
    """Feed ``(t, bytes)`` chunks (absolute perf times) and return the result fields."""
    norm = StreamNormalizer(T0, prompt_chars)
    parser = parser_cls(norm)
    t = T0
    for t, data in chunks:
        parser.feed(t, data)
        if parser.done:
            break
    else:
        parser.eof(t)
    return norm.result(parser.t_done or t)


def at(times: list[float], pieces: list[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
    """Put absolute times on the byte pieces of :func:`sse`/:func:`ndjson`."""
    return [(t, data) for t, (_, data) in zip(times, pieces, strict=True)]


@pytest.mark.parametrize(
    ("text", "reasoning", "answer", "offset", "found"),
    [
        ("plain answer", "", "plain answer", 0, False),
        ("  <think>a b</think>\n\nAnswer", "a b", "Answer", 22, True),
        ("<think>x</think>", "x", "", None, True),
        ("hidden thoughts</think>Answer", "hidden thoughts", "Answer", 23, True),
        ("<think>never closed", "never closed", "", None, True),
        ("Answer mentions <think> later", "", "Answer mentions <think> later", 0, False),
    ],
)
def test_split_think(
    text: str, reasoning: str, answer: str, offset: int | None, found: bool
) -> None:
    assert split_think(text) == (reasoning, answer, offset, found)


def test_timing_formulas_exactly() -> None:
    pieces = sse(
        delta(role="assistant"),
        delta(reasoning_content="Hmm"),
        delta(""),
        delta("Hal"),
        delta("lo", finish="stop"),
        usage(prompt=20, completion=5, reasoning=2),
        "[DONE]",
    )
    times = [T0 + s for s in (0.1, 0.5, 0.55, 0.7, 0.8, 0.9, 1.0)]
    out = feed(OpenAIStreamParser, at(times, pieces))
    assert out["ttft_s"] == pytest.approx(0.5)
    assert out["ttfa_s"] == pytest.approx(0.7)
    assert out["e2e_s"] == pytest.approx(1.0)
    assert out["itl_p50_s"] == pytest.approx(0.15)  # gaps 0.2, 0.1
    assert out["itl_p95_s"] == pytest.approx(0.1 + 0.95 * 0.1)
    assert out["tpot_s"] == pytest.approx((1.0 - 0.5) / 4)
    assert out["decode_tps"] == pytest.approx((5 - 1) / 0.5)  # SPEC §9: n − 1 intervals
    assert out["prefill_tps"] == pytest.approx(20 / 0.5)
    assert (out["prompt_tokens"], out["completion_tokens"], out["reasoning_tokens"]) == (20, 5, 2)
    assert out["token_count_source"] == "server"
    assert (out["response_text"], out["reasoning_text"]) == ("Hallo", "Hmm")
    assert out["reasoning_source"] == "reasoning_content"
    assert out["finish_reason"] == "stop"
    assert out["reasoning_s"] == pytest.approx(0.7 - 0.5)  # first reasoning → first answer
    assert out["reasoning_tps"] == pytest.approx(2 / 0.2)  # the server's 2 reasoning tokens


def test_comments_roles_nulls_and_empty_strings_never_count() -> None:
    chunks = [
        (T0 + 0.1, b": keep-alive\n\n"),
        (
            T0 + 0.2,
            b"data: " + json.dumps(delta(role="assistant", content=None)).encode() + b"\n\n",
        ),
        (T0 + 0.3, b"data: " + json.dumps(delta("", reasoning_content=None)).encode() + b"\n\n"),
        (T0 + 0.4, b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": null}]}\n\n'),
        (T0 + 0.6, b"event: message\ndata: " + json.dumps(delta("A")).encode() + b"\n\n"),
        (T0 + 0.7, b"data: " + json.dumps(delta(finish="stop")).encode() + b"\n\ndata: [DONE]\n\n"),
    ]
    out = feed(OpenAIStreamParser, chunks)
    assert out["ttft_s"] == pytest.approx(0.6)
    assert out["ttfa_s"] == pytest.approx(0.6)
    assert out["itl_p50_s"] is None
    assert out["tpot_s"] is None  # one token (estimated)
    assert (out["completion_tokens"], out["token_count_source"]) == (1, "estimated")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 400), max_size=12))
def test_any_byte_split_gives_the_same_answer(cuts: list[int]) -> None:
    body = b"".join(
        d
        for _, d in sse(
            delta(role="assistant"),
            delta("<thi"),
            delta("nk>Überlegung</thi"),
            delta("nk>\n\nAntwort ✓"),
            delta(finish="stop"),
            usage(3, 4),
            "[DONE]",
        )
    ).replace(b"\n\n", b"\r\n\r\n", 2)
    points = sorted({c % len(body) for c in cuts} | {0, len(body)})
    chunks = [(T0 + i * 0.01, body[a:b]) for i, (a, b) in enumerate(itertools.pairwise(points))]
    out = feed(OpenAIStreamParser, [c for c in chunks if c[1]])
    assert out["response_text"] == "Antwort ✓"
    assert out["reasoning_text"] == "Überlegung"
    assert out["reasoning_source"] == "think_tag"
    assert (out["finish_reason"], out["completion_tokens"]) == ("stop", 4)


def test_think_tag_split_across_chunks_times_the_answer() -> None:
    pieces = sse(
        delta("<think>a"),
        delta(" b</thi"),
        delta("nk>"),
        delta("\n\n"),
        delta("Ja"),
        delta(finish="stop"),
        "[DONE]",
    )
    out = feed(OpenAIStreamParser, at([T0 + 0.1 * (i + 1) for i in range(7)], pieces))
    assert (out["reasoning_text"], out["response_text"]) == ("a b", "Ja")
    assert out["ttft_s"] == pytest.approx(0.1)
    assert out["ttfa_s"] == pytest.approx(0.5)  # not the "\n\n" after </think>
    assert out["reasoning_s"] == pytest.approx(0.5 - 0.1)  # from "<think>a" to "Ja"
    # no usage: "a b" is estimated as ceil(3 / 4) = 1 reasoning token (token_count_source)
    assert (out["reasoning_tokens"], out["token_count_source"]) == (1, "estimated")
    assert out["reasoning_tps"] == pytest.approx(1 / 0.4)


def test_lone_closing_tag_makes_everything_before_reasoning() -> None:
    pieces = sse(delta("denke"), delta(" nach</think>Antwort"), delta(finish="stop"), "[DONE]")
    out = feed(OpenAIStreamParser, at([T0 + 0.1, T0 + 0.2, T0 + 0.3, T0 + 0.4], pieces))
    assert (out["reasoning_text"], out["response_text"]) == ("denke nach", "Antwort")
    assert out["ttfa_s"] == pytest.approx(0.2)
    assert out["content_empty"] is False


def test_unclosed_think_up_to_length_stop_is_reasoning_only() -> None:
    pieces = sse(delta("<think>lange"), delta(" Überlegung", finish="length"), "[DONE]")
    out = feed(OpenAIStreamParser, at([T0 + 0.1, T0 + 0.2, T0 + 0.3], pieces))
    assert out["response_text"] == ""
    assert out["reasoning_text"] == "lange Überlegung"
    assert (out["reasoning_only"], out["content_empty"], out["truncated"]) == (True, True, True)
    assert out["ttfa_s"] is None
    assert out["reasoning_source"] == "think_tag"
    assert (out["reasoning_s"], out["reasoning_tps"]) == (None, None)  # no answer came


def test_estimates_without_usage() -> None:
    pieces = sse(delta("abcdefghij"), delta("k", finish="stop"), "[DONE]")
    out = feed(OpenAIStreamParser, at([T0 + 0.1, T0 + 0.2, T0 + 0.3], pieces), prompt_chars=10)
    # completion: max(2 chunks, ceil(11 / 4) = 3); prompt: ceil(10 / 4) = 3
    assert (out["completion_tokens"], out["prompt_tokens"]) == (3, 3)
    assert out["token_count_source"] == "estimated"
    assert out["reasoning_tokens"] is None
    assert (out["reasoning_s"], out["reasoning_tps"]) == (None, None)  # no reasoning


def test_error_object_and_garbage_are_protocol_errors() -> None:
    err = sse(delta("a"), {"error": {"message": "CUDA out of memory", "code": 500}})
    with pytest.raises(StreamProtocolError, match="CUDA out of memory"):
        feed(OpenAIStreamParser, at([T0 + 0.1, T0 + 0.2], err))
    with pytest.raises(StreamProtocolError, match="malformed chunk"):
        feed(OpenAIStreamParser, [(T0 + 0.1, b'data: {"choices": [<<garbage>>\n\n')])
    with pytest.raises(StreamProtocolError, match="malformed SSE line"):
        feed(OpenAIStreamParser, [(T0 + 0.1, b"\x00\xffjunk\n\n")])
    with pytest.raises(StreamProtocolError, match="model not found"):
        feed(OllamaStreamParser, [(T0 + 0.1, b'{"error": "model not found"}\n')])
    with pytest.raises(StreamProtocolError, match="malformed chunk"):
        feed(OllamaStreamParser, [(T0 + 0.1, b"not json\n")])


def test_incomplete_streams_are_retryable_protocol_errors() -> None:
    with pytest.raises(StreamProtocolError, match="before a finish_reason") as info:
        feed(OpenAIStreamParser, at([T0 + 0.1], sse(delta("a"))))
    assert info.value.retryable
    with pytest.raises(StreamProtocolError, match="done:true"):
        feed(OllamaStreamParser, at([T0 + 0.1], ndjson(omsg("a"))))
    # a finish_reason without [DONE] is a complete stream
    out = feed(OpenAIStreamParser, at([T0 + 0.1], sse(delta("a", finish="stop"))))
    assert out["finish_reason"] == "stop"


def test_ollama_lines_counts_and_load_duration() -> None:
    pieces = ndjson(omsg("", thinking="Plan"), omsg("Ant"), omsg("wort"), odone("length", 12, 3))
    out = feed(OllamaStreamParser, at([T0 + 0.2, T0 + 0.3, T0 + 0.4, T0 + 0.5], pieces))
    assert (out["reasoning_text"], out["response_text"]) == ("Plan", "Antwort")
    assert out["reasoning_source"] == "thinking"
    assert (out["finish_reason"], out["truncated"]) == ("length", True)
    assert (out["prompt_tokens"], out["completion_tokens"]) == (12, 3)
    assert out["load_duration_s"] == pytest.approx(1.5)
    assert out["e2e_s"] == pytest.approx(0.5)
    assert out["tpot_s"] == pytest.approx(0.3 / 2)


def test_openai_body_and_sent_params() -> None:
    engine = OpenAIEngine(EngineSettings(base_url="http://x/v1", api_key="sk-secret"))
    req = ChatRequest(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        temperature=0.2,
        seed=None,
        max_tokens=50,
        extra_body={
            "top_p": 0.9,
            "stream_options": {"continuous_usage_stats": True},
            "stream": False,
        },
        json_schema={"type": "object"},
    )
    body, sent = engine.build_body(req)
    assert body["stream"] is True
    assert body["stream_options"] == {"continuous_usage_stats": True, "include_usage": True}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": {"type": "object"}, "strict": True},
    }
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (0.2, 50, 0.9)
    assert "seed" not in body
    assert sent == {"temperature": 0.2, "max_tokens": 50, "extra_body": req.extra_body}
    assert "sk-secret" not in repr(engine.settings) + json.dumps(engine.settings.model_dump())


def test_ollama_body_merges_options() -> None:
    engine = OllamaEngine(EngineSettings(base_url="http://x"))
    req = REQ.model_copy(
        update={
            "extra_body": {"think": False, "options": {"num_ctx": 8192, "top_k": 20}},
            "keep_alive": "30m",
            "json_schema": {"type": "object"},
        }
    )
    body, sent = engine.build_body(req)
    assert body["options"] == {
        "temperature": 0.0,
        "seed": 42,
        "num_predict": 64,
        "num_ctx": 8192,
        "top_k": 20,
    }
    assert (body["think"], body["keep_alive"], body["stream"]) == (False, "30m", True)
    assert body["format"] == {"type": "object"}
    assert sent == {
        "temperature": 0.0,
        "seed": 42,
        "num_predict": 64,
        "keep_alive": "30m",
        "extra_body": {"think": False, "options": {"num_ctx": 8192, "top_k": 20}},
    }


def test_unknown_engine_kind_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="llamacpp, lmstudio, ollama, openai, simulated, vllm"):
        create_engine("vllm-direct", EngineSettings(base_url="http://x"))
