"""The simulator's answer-shape knobs (leaked markers, prompt echo, repetition loop, endless
reasoning): off by default, and each gives the shape its detector flags, over real HTTP on both
protocols."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from touchstone_ray.answers import answer_flags
from touchstone_ray.sim import SimConfig, SimModelKnobs, SimServer
from touchstone_ray.sim._text import AnswerShape, find_marker, plan_completion

SYSTEM = "Du bist ein professioneller Büro-Assistent. Antworte knapp und freundlich."
USER = "Mach aus diesen Stichpunkten eine kurze Mail an mein Team: Meeting fällt aus."
MSGS = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
LEAK = "<|im_end|>\n<|im_start|>user"


def plan(**kw: Any) -> Any:
    args: dict[str, Any] = {
        "seed": 0,
        "model": "m",
        "messages": MSGS,
        "sampling": None,
        "answer_tokens": 60,
        "reasoning_share": 0.0,
        "quality": 0.7,
        "think": True,
    }
    return plan_completion(**(args | kw))


def test_the_knobs_are_off_by_default_and_change_nothing() -> None:
    knobs = SimModelKnobs()
    assert (knobs.echo_prompt, knobs.leak_markers, knobs.loop_period) == (None, "", None)
    assert knobs.endless_reasoning is False
    assert plan() == plan(shape=AnswerShape()) == plan(shape=None, endless_reasoning=False)


def test_an_echo_begins_the_answer_then_the_leak_then_filler() -> None:
    answer = "".join(plan(shape=AnswerShape(echo=USER, leak=LEAK)).answer)
    assert answer.startswith(f"{USER}\n\n<|im_end|>\n<|im_start|>user\n\n")
    assert find_marker(answer) == 0.7  # the quality marker still ends it
    assert len(plan(shape=AnswerShape(echo=USER, leak=LEAK)).answer) == 60


def test_a_loop_repeats_the_first_tokens_to_the_end() -> None:
    tokens = plan(shape=AnswerShape(loop_period=6)).answer
    words = "".join(tokens[:-1]).split()
    assert len(tokens) == 60 and words[6:12] == words[:6] and words[48:54] == words[:6]


def test_endless_reasoning_is_all_reasoning_and_counts_as_cut() -> None:
    p = plan(endless_reasoning=True)
    assert (len(p.reasoning), p.answer, p.endless) == (60, [], True)
    assert p.take(None)[2] is True and p.take(100)[2] is True
    reasoning, answer, cut = p.take(20)
    assert (len(reasoning), answer, cut) == (20, [], True)
    # a request without thinking gets a normal answer
    assert plan(endless_reasoning=True, think=False).endless is False


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = SimConfig(
        ttft_ms=1,
        tps=5000,
        answer_tokens=60,
        model_overrides={
            "leak": SimModelKnobs(leak_markers=LEAK),
            "echo-user": SimModelKnobs(echo_prompt="user"),
            "echo-system": SimModelKnobs(echo_prompt="system", leak_markers=LEAK),
            "loop": SimModelKnobs(loop_period=7),
            "think": SimModelKnobs(endless_reasoning=True),
            "think-tag": SimModelKnobs(endless_reasoning=True, reasoning_channel="think_tag"),
        },
    )
    with SimServer(config) as sim:
        assert sim.url is not None
        yield sim.url


def openai(url: str, model: str, stream: bool) -> tuple[str, str, str | None]:
    """(content, reasoning, finish_reason) of one OpenAI chat call."""
    body = {"model": model, "messages": MSGS, "stream": stream, "max_tokens": 500}
    if not stream:
        r = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10).json()
        msg, finish = r["choices"][0]["message"], r["choices"][0]["finish_reason"]
        return msg["content"] or "", msg.get("reasoning_content") or "", finish
    content, reasoning, finish = "", "", None
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=10) as r:
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            choice = json.loads(line[6:])["choices"][0]
            content += choice["delta"].get("content") or ""
            reasoning += choice["delta"].get("reasoning_content") or ""
            finish = choice.get("finish_reason") or finish
    return content, reasoning, finish


def ollama(url: str, model: str) -> tuple[str, str, str | None]:
    body = {"model": model, "messages": MSGS, "stream": False, "options": {"num_predict": 500}}
    r = httpx.post(f"{url}/api/chat", json=body, timeout=10).json()
    return r["message"]["content"], r["message"].get("thinking") or "", r.get("done_reason")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("m", []),
        ("leak", ["template_leak"]),
        ("echo-user", ["prompt_echo"]),
        ("echo-system", ["template_leak", "prompt_echo"]),
        ("loop", ["repetition_loop"]),
        ("think", ["cut_at_limit", "cut_in_reasoning", "reasoning_only"]),
    ],
)
@pytest.mark.parametrize("protocol", ["openai-stream", "openai", "ollama"])
def test_each_shape_gets_its_flags_on_each_protocol(
    url: str, model: str, expected: list[str], protocol: str
) -> None:
    if protocol == "ollama":
        content, reasoning, finish = ollama(url, model)
    else:
        content, reasoning, finish = openai(url, model, stream=protocol == "openai-stream")
    assert answer_flags(content, reasoning, finish, USER, SYSTEM, "de") == expected


def test_endless_reasoning_in_a_think_tag_never_closes(url: str) -> None:
    content, reasoning, finish = openai(url, "think-tag", stream=False)
    assert finish == "length" and reasoning == ""
    assert content.startswith("<think>") and "</think>" not in content
    streamed, _, finish = openai(url, "think-tag", stream=True)
    assert finish == "length" and streamed.startswith("<think>") and "</think>" not in streamed
