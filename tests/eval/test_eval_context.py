"""The prompt a cell sends, the context check and the cut-prompt test, without a server."""

from __future__ import annotations

import pytest

from touchstone_ray.config import ModelSpec
from touchstone_ray.engines import ChatRequest, EngineSettings
from touchstone_ray.engines.ollama import OllamaEngine
from touchstone_ray.errors import ConfigError
from touchstone_ray.eval.context import (
    ModelContext,
    context_for,
    model_limit,
    overflow_line,
    overflowing,
    with_prompt_need,
)
from touchstone_ray.eval.matrix import ModelPlan
from touchstone_ray.fleet import Cell
from touchstone_ray.fleet.prompts import (
    ANSWER_ROOM_TOKENS,
    PromptCount,
    cell_messages,
    context_need,
    estimate_prompt_tokens,
    fits,
    input_truncated,
    nonce_line,
)


def cell(pid: str, max_tokens: int | None = 100, variant: str = "baseline") -> Cell:
    return Cell(
        key=f"m|{variant}|{pid}|1",
        model="m",
        variant=variant,
        system_prompt="Sei kurz.",
        category="A",
        prompt_id=pid,
        prompt="Hallo",
        repeat=1,
        max_tokens=max_tokens,
    )


def test_nonce_is_deterministic_per_run_and_cell() -> None:
    a = nonce_line("2026-12-01_090000_eval_buero", "m|baseline|A1|1")
    assert a == nonce_line("2026-12-01_090000_eval_buero", "m|baseline|A1|1")
    assert a != nonce_line("2026-12-01_090000_eval_buero", "m|baseline|A1|2")
    assert a != nonce_line("2026-12-01_100000_eval_buero", "m|baseline|A1|1")
    assert len(a) == 14 and a.startswith("[") and a.endswith("]")


def test_nonce_goes_first_in_the_first_message() -> None:
    assert cell_messages("Sei kurz.", "Hallo", "[abc]") == [
        {"role": "system", "content": "[abc]\nSei kurz."},
        {"role": "user", "content": "Hallo"},
    ]
    assert cell_messages(None, "Hallo", "[abc]") == [{"role": "user", "content": "[abc]\nHallo"}]
    assert cell_messages(None, "Hallo") == [{"role": "user", "content": "Hallo"}]


def test_estimate_and_fit() -> None:
    messages = cell_messages("x" * 30, "y" * 31)
    count = estimate_prompt_tokens(messages)
    assert count == PromptCount(10 + 8 + 11 + 8, "estimated")
    assert fits(count, 100, 137) and not fits(count, 101, 137)
    assert fits(count, None, 37) and fits(count, 10_000, None)


@pytest.mark.parametrize(
    ("server", "count", "limit", "expected"),
    [
        (None, PromptCount(100, "server"), 4096, None),  # the server gave no count
        (100, PromptCount(100, "server"), 4096, False),
        (79, PromptCount(100, "server"), None, True),  # below 0.8 × its own tokenizer
        (80, PromptCount(100, "server"), None, False),
        (40, PromptCount(100, "estimated"), None, None),  # estimate only: no share test
        (40, PromptCount(100, "estimated"), 2048, False),
        (2047, PromptCount(3000, "estimated"), 2048, True),  # Ollama filled its num_ctx
        (2048, None, 2048, True),
        (2046, None, 2048, False),
        (500, None, None, None),
    ],
)
def test_input_truncated(
    server: int | None, count: PromptCount | None, limit: int | None, expected: bool | None
) -> None:
    assert input_truncated(server, count, limit) is expected


def test_context_for_takes_the_smaller_and_refuses_more_than_the_server() -> None:
    assert context_for("m", None, None) is None
    assert context_for("m", 2048, None) == 2048
    assert context_for("m", None, 4096) == 4096
    assert context_for("m", 2048, 4096) == 2048
    with pytest.raises(ConfigError) as info:
        context_for("gemma3-270m", 8192, 4096)
    assert str(info.value) == (
        "models: gemma3-270m: context_tokens 8192 is more than the server allows (4096 tokens "
        "per request); lower context_tokens or restart the server with a larger context"
    )


def test_overflow_names_model_prompt_and_numbers() -> None:
    cells = [cell("A1"), cell("B2", max_tokens=200), cell("C3", max_tokens=None)]
    counts = {"baseline|A1": (900, "server"), "baseline|B2": (900, "server")}
    counts["baseline|C3"] = (1500, "estimated")
    over = overflowing(cells, counts, 1024)
    assert [(c.prompt_id, n, src) for c, n, src in over] == [
        ("B2", 900, "server"),
        ("C3", 1500, "estimated"),
    ]
    assert overflowing(cells, counts, None) == []
    assert overflow_line("m", *over[0], 1024) == (
        "m: prompt B2 (variant baseline) does not fit the context: 900 prompt tokens (server) "
        "+ max_tokens 200 = 1100 > context 1024; raise context_tokens or pass --allow-cut"
    )


def test_ollama_sends_context_tokens_as_num_ctx_unless_extra_body_says() -> None:
    engine = OllamaEngine(EngineSettings(base_url="http://x"))
    req = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], context_tokens=2048)
    body, sent = engine.build_body(req)
    assert (body["options"]["num_ctx"], sent["num_ctx"]) == (2048, 2048)
    explicit = req.model_copy(update={"extra_body": {"options": {"num_ctx": 8192}}})
    assert engine.build_body(explicit)[0]["options"]["num_ctx"] == 8192


def test_context_need_is_the_largest_prompt_plus_its_budget() -> None:
    assert context_need([(300, 100), (500, 50), (200, 400)]) == 600
    assert context_need([(300, 100), (20, None)]) == 20 + ANSWER_ROOM_TOKENS
    assert context_need([]) is None


def _plan(**spec: object) -> ModelPlan:
    model = ModelSpec.model_validate({"id": "m", "engine": "ollama", "base_url": "http://x"} | spec)
    return ModelPlan(label="m", spec=model, host="local", variants=("baseline",))


OLLAMA = {"sends_context": True, "context_limit": None, "model_context_length": 40960}


@pytest.mark.parametrize(
    ("spec", "entry", "expected"),
    [
        # Ollama: configured, else the model's own length, else left for the prompts' need
        ({"context_tokens": 8192}, OLLAMA, ModelContext(8192, "configured", None, True)),
        (
            {"extra_body": {"options": {"num_ctx": 2048}}},
            OLLAMA,
            ModelContext(2048, "extra_body", None, True),
        ),
        ({}, OLLAMA, ModelContext(40960, "model", None, True)),
        ({}, OLLAMA | {"model_context_length": None}, ModelContext(None, None, None, True)),
        # an OpenAI-compatible server: its own limit, nothing sent
        (
            {},
            {"sends_context": False, "context_limit": 4096},
            ModelContext(4096, "server", 4096, False),
        ),
        (
            {"context_tokens": 2048, "extra_body": {"options": {"num_ctx": 9}}},
            {"sends_context": False, "context_limit": 4096},
            ModelContext(2048, "configured", 4096, False),
        ),
        ({}, {}, ModelContext(None, None, None, False)),  # the preflight did not say
    ],
)
def test_model_limit_sources(
    spec: dict[str, object], entry: dict[str, object], expected: ModelContext
) -> None:
    assert model_limit(_plan(**spec), entry) == expected


def test_a_per_request_server_without_a_context_gets_what_the_prompts_need() -> None:
    cells = [cell("A1", 100), cell("A2", 50), cell("A1", None, variant="none")]
    counts = {"baseline|A1": (30, "estimated"), "baseline|A2": (200, "estimated")}
    counts["none|A1"] = (20, "estimated")
    chosen = with_prompt_need(ModelContext(None, None, None, True), cells, counts)
    assert chosen == ModelContext(20 + ANSWER_ROOM_TOKENS, "prompts", None, True)
    assert chosen.sent and chosen.manifest_entry() == {
        "tokens": 4116,
        "source": "prompts",
        "sent": True,
    }
    # a context already chosen, or a server that takes none per request: unchanged
    given = ModelContext(8192, "model", None, True)
    assert with_prompt_need(given, cells, counts) is given
    other = ModelContext(None, None, None, False)
    assert with_prompt_need(other, cells, counts) is other and not other.sent
