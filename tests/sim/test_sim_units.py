"""Pure parts of the simulated engine: config merging, tokens, keep_alive, delimiters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from touchstone_ray.sim import SimConfig, SimModelKnobs, fenced_answer
from touchstone_ray.sim._ollama import DEFAULT_KEEP_ALIVE_S, parse_keep_alive
from touchstone_ray.sim._text import find_marker, plan_completion, split_tokens


def test_overrides_are_partial() -> None:
    config = SimConfig(tps=50, quality=0.4, model_overrides={"fast": SimModelKnobs(tps=500)})
    fast, other = config.for_model("fast"), config.for_model("other")
    assert (fast.tps, fast.quality) == (500, 0.4)  # quality not written: inherited
    assert (other.tps, other.quality) == (50, 0.4)
    loaded = SimConfig.model_validate({"model_overrides": {"x": {"ttft_ms": 5}}})
    assert loaded.for_model("x").ttft_ms == 5 and loaded.for_model("x").tps == 100


@pytest.mark.parametrize(
    "bad",
    [{"tpz": 1}, {"fail_rate": 1.5}, {"tps": 0}, {"model_overrides": {"x": {"seed": 1}}}],
)
def test_config_rejects(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        SimConfig.model_validate(bad)


def test_every_field_documents_its_default() -> None:
    for name, field in SimConfig.model_fields.items():
        assert field.description and "default" in field.description, name


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        ("0", 0.0),
        ("0s", 0.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        (30, 30.0),
        (-1, None),
        ("-1m", None),
        (None, DEFAULT_KEEP_ALIVE_S),
        ("soon", DEFAULT_KEEP_ALIVE_S),
    ],
)
def test_keep_alive(value: object, seconds: float | None) -> None:
    assert parse_keep_alive(value) == seconds


@given(st.text(alphabet=st.sampled_from("ab ⟦\n\t"), max_size=40))
def test_split_tokens_roundtrip(text: str) -> None:
    assert "".join(split_tokens(text)) == text.rstrip(" \n\t")


@given(
    st.integers(1, 300),
    st.floats(0, 1),
    st.booleans(),
    st.one_of(st.none(), st.integers(1, 400)),
)
def test_plan_counts(n: int, share: float, think: bool, limit: int | None) -> None:
    plan = plan_completion(
        seed=0,
        model="m",
        messages=[{"role": "user", "content": "x"}],
        sampling=None,
        answer_tokens=n,
        reasoning_share=share,
        quality=0.5,
        think=think,
    )
    assert len(plan.reasoning) == (round(n * share) if think else 0)
    assert len(plan.reasoning) + len(plan.answer) == (n if think else n - round(n * share))
    reasoning, answer, cut = plan.take(limit)
    total = len(plan.reasoning) + len(plan.answer)
    assert len(reasoning) + len(answer) == min(total, limit or total)
    assert cut == (limit is not None and limit < total)
    if plan.answer:
        assert find_marker("".join(plan.answer)) == 0.5


def test_fenced_answer_needs_matching_tags() -> None:
    text = "<<<ANSWER-ab>>>\nx\n<<<END-zz>>>\ny\n<<<END-ab>>>\n<<<ANSWER-cd>>>\nz\n<<<END-cd>>>"
    assert fenced_answer(text) == "x\n<<<END-zz>>>\ny"
    assert fenced_answer("inline <<<ANSWER-ab>>> x <<<END-ab>>>") is None
    assert fenced_answer("<<<ANSWER-ab>>>\nnever closed") is None
