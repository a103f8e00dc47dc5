"""Perf building blocks without Ray: flag parsing, prompt fitting, output forcing, the
capacity search, the per-point figures and the complete-point rule."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from touchstone_ray.errors import UsageError
from touchstone_ray.fleet.prompts import estimate_prompt_tokens
from touchstone_ray.perf.bundle import complete_points
from touchstone_ray.perf.capacity import capacity_line, capacity_points, search_capacity
from touchstone_ray.perf.corpus import passage, words
from touchstone_ray.perf.plan import Point, parse_slo, parse_tokens
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.perf.summary import point_summary
from touchstone_ray.perf.workload import (
    INSTRUCTION,
    cold_body,
    fit_prompt,
    forced_output,
    prompt_messages,
)


def test_corpus_is_german_and_english_prose_and_wraps() -> None:
    stream = words()
    assert len(stream) > 3000
    assert "Gärtnerei," in stream and "harbour" in stream
    assert passage(3, len(stream) - 1) == " ".join([stream[-1], stream[0], stream[1]])


def test_corpus_has_4000_words_a_language_and_no_repeated_passage() -> None:
    """≥ 4,000 words of each language, and no run of 12 words anywhere twice (nothing was
    padded by copying); a prompt longer than the corpus repeats it from its first word."""
    from importlib import resources

    from touchstone_ray.perf.corpus import LANGUAGES

    per_lang = {
        lang: resources.files("touchstone_ray.perf")
        .joinpath(f"corpus/{lang}.txt")
        .read_text(encoding="utf-8")
        .split()
        for lang in LANGUAGES
    }
    assert {k: len(v) >= 4000 for k, v in per_lang.items()} == {"de": True, "en": True}
    stream = words()
    assert list(stream) == per_lang["de"] + per_lang["en"]
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(stream) - 11):
        gram = stream[i : i + 12]
        assert gram not in seen, (" ".join(gram), seen[gram], i)
        seen[gram] = i
    whole = passage(len(stream))
    assert passage(len(stream) + 5) == whole + " " + passage(5)
    assert passage(10, len(stream) + 7) == passage(10, 7)


def test_parse_tokens_and_errors() -> None:
    assert parse_tokens("256, 1k,16K", "--contexts") == [256, 1024, 16384]
    with pytest.raises(UsageError) as info:
        parse_tokens("256,2m", "--contexts")
    assert str(info.value) == "--contexts: '2m' is not a positive count (e.g. 256, 1k, 16k)"
    with pytest.raises(UsageError) as info:
        parse_tokens("0", "--concurrency")
    assert str(info.value) == "--concurrency: '0' is not a positive count (e.g. 256, 1k, 16k)"


def test_parse_slo_and_errors() -> None:
    assert parse_slo("ttft=0.5,tpot=0.05") == {"ttft": 0.5, "tpot": 0.05}
    assert parse_slo(None) == {}
    cases = {
        "e2e=3": "--slo: unknown target 'e2e'; use ttft=SECONDS,tpot=SECONDS",
        "ttft=fast": "--slo: ttft='fast' is not a number of seconds",
        "tpot=0": "--slo: tpot must be > 0 s, not 0.0",
    }
    for text, message in cases.items():
        with pytest.raises(UsageError) as info:
            parse_slo(text)
        assert str(info.value) == message


def test_fit_prompt_with_a_counter_finds_the_largest_fitting_length() -> None:
    """A counter that counts whitespace-separated pieces (+5 template tokens)."""
    asked: list[int] = []

    async def count(messages: list[dict[str, str]]) -> int | None:
        n = len(messages[0]["content"].split()) + 5
        asked.append(n)
        return n

    fitted = asyncio.run(fit_prompt(count, 300, "[abc]"))
    # content = nonce (1 piece) + the instruction's words + passage words; 5 template tokens
    assert fitted.tokens == 300 and fitted.source == "server"
    assert fitted.n_words == 300 - 5 - 1 - len(INSTRUCTION.split())
    assert len(asked) <= 24
    messages = prompt_messages("[abc]", fitted.n_words)
    assert messages[0]["content"].startswith("[abc]\nContinue this text")


def test_fit_prompt_falls_back_to_the_estimate() -> None:
    async def count(messages: list[dict[str, str]]) -> int | None:
        return None

    fitted = asyncio.run(fit_prompt(count, 500, "[n]"))
    assert fitted.source == "estimated"
    assert fitted.tokens == estimate_prompt_tokens(prompt_messages("[n]", fitted.n_words)).tokens
    assert fitted.tokens <= 500
    assert estimate_prompt_tokens(prompt_messages("[n]", fitted.n_words + 1)).tokens > 500


def test_forced_output_per_engine() -> None:
    assert forced_output("llamacpp", 16) == ({"ignore_eos": True}, True)
    assert forced_output("vllm", 16) == ({"ignore_eos": True, "min_tokens": 16}, True)
    assert forced_output("ollama", 16) == ({}, False)
    assert forced_output("lmstudio", 16) == ({}, False)
    assert cold_body("llamacpp") == {"cache_prompt": False}
    assert cold_body("vllm") == {}


@pytest.mark.parametrize("knee", [0, 1, 2, 3, 5, 6, 7, 8, 13, 64, 100])
def test_search_capacity_doubles_then_bisects(knee: int) -> None:
    found, tried = search_capacity(lambda c: 1.0 if c <= knee else 0.5)
    assert found == knee
    if knee == 0:
        assert list(tried) == [1]
    else:
        # doubling tries 1, 2, 4, … up to the first bad one; bisection adds < log2(bad) more
        bad = next(c for c in tried if c > knee)
        assert bad & (bad - 1) == 0
        assert len(tried) <= 2 * bad.bit_length()


def test_search_capacity_stops_at_the_maximum() -> None:
    assert search_capacity(lambda c: 1.0, max_concurrency=12)[0] == 12


def test_search_capacity_a_point_without_counted_requests_fails() -> None:
    found, tried = search_capacity(lambda c: None if c == 4 else 1.0)
    assert (found, tried) == (3, {1: 1.0, 2: 1.0, 4: None, 3: 1.0})
    assert capacity_points("m", "h", 64, {4: None})[0]["meets_slo"] is False


def test_capacity_line() -> None:
    line = capacity_line("qwen3:8b", "gpu-a", 6, {"ttft": 0.5, "tpot": 0.05})
    assert line == "qwen3:8b on gpu-a: 6 users at once with TTFT < 0.5 s and ≥ 20 tok/s for 90 %"
    assert capacity_line("m", "h", 1, {"ttft": 2.0}) == (
        "m on h: 1 user at once with TTFT < 2 s for 90 %"
    )
    assert capacity_line("m", "h", 0, {"ttft": 2.0}) == (
        "m on h: not even 1 user at once with TTFT < 2 s for 90 %"
    )


def rec(run: int, **kw: Any) -> PerfResponse:
    base: dict[str, Any] = {
        "key": f"m|h|256|2|{run}",
        "pack_id": "perf",
        "pack_version": 0,
        "model": "m",
        "engine": "llamacpp",
        "host": "h",
        "variant": "perf",
        "category": "perf",
        "prompt_id": "256|2",
        "repeat": run,
        "ok": True,
        "context": "256",
        "context_target_tokens": 256,
        "concurrency": 2,
        "run": run,
        "token_count_source": "server",
        "prompt_tokens": 256,
        "completion_tokens": 11,
    }
    base.update(kw)
    return PerfResponse.model_validate(base)


def test_point_summary_figures() -> None:
    records = [
        rec(
            1,
            ttft_s=0.2,
            tpot_s=0.01,
            e2e_s=0.3,
            sent_at=100.0,
            t_end=100.3,
            scheduled_at=99.999,
            send_lateness_s=0.001,
            decode_tps=100.0,
            prefill_tps=1280.0,
        ),
        rec(
            2,
            ttft_s=0.4,
            tpot_s=0.03,
            e2e_s=0.7,
            sent_at=100.0,
            t_end=100.7,
            scheduled_at=99.998,
            send_lateness_s=0.002,
            decode_tps=33.0,
            prefill_tps=640.0,
        ),
        rec(
            3,
            ttft_s=0.1,
            tpot_s=0.01,
            e2e_s=0.2,
            sent_at=100.3,
            t_end=101.0,
            prompt_cached=True,
            cached_tokens=255,
            send_lateness_s=0.003,
            decode_tps=100.0,
        ),
        rec(
            4,
            ok=False,
            error="x",
            error_kind="timeout",
            sent_at=100.7,
            t_end=101.0,
            completion_tokens=None,
        ),
    ]
    s = point_summary(records, {"ttft": 0.3, "tpot": 0.02})
    assert s["n"] == 4 and s["n_ok"] == 3
    assert s["n_excluded"] == {"failed": 1, "prompt_cached": 1}
    assert s["ttft_s"]["p50"] == pytest.approx(0.3)  # records 1 and 2 only
    assert s["ttft_s"]["p99"] == pytest.approx(0.2 + 0.99 * 0.2)
    assert s["tpot_s"]["p50"] == pytest.approx(0.01)  # the cached one counts for decode
    assert s["ttft_cv_pct"] == pytest.approx(0.1 / 0.3 * 100)
    assert s["decode_tps_median"] == pytest.approx(100.0)
    assert s["prefill_tps_median"] == pytest.approx(960.0)
    assert s["wall_s"] == pytest.approx(1.0)
    assert s["total_tps"] == pytest.approx(33.0)
    # records 1 and 3 meet both targets (3 is cached but a real answer); 2 and 4 do not
    assert s["slo_share"] == pytest.approx(0.5)
    assert s["goodput_rps"] == pytest.approx(2.0)
    assert s["send_lateness_s"]["max"] == pytest.approx(0.003)
    assert s["n_cached"] == 1


def test_slo_share_leaves_out_contended_and_throttled_requests() -> None:
    slo = {"ttft": 1.0}
    fast, slow = {"ttft_s": 0.5, "tpot_s": 0.01}, {"ttft_s": 1.5, "tpot_s": 0.01}
    records = [
        rec(1, **fast),
        rec(2, **fast),
        rec(3, **slow, host_contended=True),  # someone else's load: left out
        rec(4, **slow, throttled=True),  # left out
        rec(5, **slow),  # a miss
        rec(6, ok=False, error="x", error_kind="timeout"),  # a failure counts as a miss
    ]
    assert point_summary(records, slo)["slo_share"] == pytest.approx(2 / 4)
    busy = [rec(1, **fast, host_contended=True), rec(2, **slow, throttled=True)]
    assert point_summary(busy, slo)["slo_share"] is None


def test_complete_points_counts_planned_runs() -> None:
    p = Point("m", "h", 256, 2, 3)
    records = [rec(1), rec(2), rec(3), rec(1, key="m|h|256|4|1")]
    assert complete_points(records, {p.prefix: 3, "m|h|256|4": 4}) == {"m|h|256|2"}
