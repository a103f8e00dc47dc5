"""The chat-template diagnosis (issue 28 item 2) on templates as servers send them, with the
token counts the real llama.cpp server gave for Gemma 3 270M (``/tokenize`` with
``parse_special``, measured 2026-12-05): the ChatML markers are 6 tokens each, Gemma's 1."""

from __future__ import annotations

from touchstone_ray.answers import TEMPLATE_MARKERS
from touchstone_ray.bundle import Manifest, WarmupProbe
from touchstone_ray.fleet.preflight import preflight_warnings, store_servers, template_warning
from touchstone_ray.fleet.template_check import FALLBACK_FIX, diagnose_template

# llama.cpp's ChatML fallback as /props shows it for a GGUF without a template
CHATML = (
    "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\\n' + "
    "message.content + '<|im_end|>\\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n"
    "  {{- '<|im_start|>assistant\\n' -}}\n{%- endif -%}"
)
GEMMA = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}"
    "<end_of_turn>\n{% endfor %}"
)
CHATML_FAMILY = "ChatML (Qwen, Yi, llama.cpp's fallback template)"
EOS_FAMILY = "SentencePiece end of sequence (Llama 2, Mistral)"


def gemma_tokens() -> dict[str, int]:
    """Every known marker's token count for Gemma 3 270M: multi-token except its own
    markers and ``</s>`` (a plain token of its vocabulary)."""
    counts = {m: 6 for markers in TEMPLATE_MARKERS.values() for m in markers}
    counts.update({"<start_of_turn>": 1, "<end_of_turn>": 1, "</s>": 1})
    return counts


def test_chatml_on_gemma_names_the_unknown_markers_and_the_gemma_template() -> None:
    check = diagnose_template("/props", CHATML, {"supports_tools": False}, gemma_tokens())
    assert check.families == [CHATML_FAMILY]
    assert check.unknown_markers == ["<|im_start|>", "<|im_end|>"]
    assert check.model_families == ["Gemma", EOS_FAMILY]
    assert check.fix == "--chat-template gemma"
    assert check.template_chars == len(CHATML) and check.caps == {"supports_tools": False}
    assert template_warning("gemma3-270m", check) == (
        f"gemma3-270m: chat template (/props) is {CHATML_FAMILY} but the served model does not "
        "know its markers <|im_start|>, <|im_end|> (6, 6 tokens): the answers will leak them; "
        "pass --chat-template gemma"
    )


def test_the_models_own_template_and_a_builtin_name_give_no_warning() -> None:
    for template in (GEMMA, "gemma"):  # /props shows the name after --chat-template gemma
        check = diagnose_template("/props", template, None, gemma_tokens())
        assert (check.families, check.unknown_markers, check.fix) == (["Gemma"], [], None)
        assert template_warning("m", check) is None


def test_a_model_whose_family_has_no_builtin_name_gets_the_jinja_fix() -> None:
    tokens = {m: 3 for markers in TEMPLATE_MARKERS.values() for m in markers}
    tokens["<|endoftext|>"] = 1  # a base model: only its end-of-text token is special
    check = diagnose_template("/props", CHATML, None, tokens)
    assert check.model_families == ["GPT-2 style end of text (many base models)"]
    assert check.fix == FALLBACK_FIX
    assert (template_warning("m", check) or "").endswith(
        f"(3, 3 tokens): the answers will leak them; pass {FALLBACK_FIX}"
    )


def test_without_a_tokenizer_only_the_families_are_named() -> None:
    check = diagnose_template("/api/show", "{{ .System }}<|im_start|>user", ["completion"], None)
    assert check.to_dict() == {
        "source": "/api/show",
        "template_sha256": check.template_sha256,
        "template_chars": 29,
        "caps": ["completion"],
        "families": [CHATML_FAMILY],
    }
    assert check.unknown_markers is None and template_warning("m", check) is None


def test_an_unknown_template_has_no_family_and_no_warning() -> None:
    check = diagnose_template("/props", "{{ messages }}", None, gemma_tokens())
    assert (check.families, check.unknown_markers, check.fix) == ([], [], None)


def test_a_hosts_preflight_warns_once_per_unknown_template_and_keeps_the_checks() -> None:
    bad = diagnose_template("/props", CHATML, None, gemma_tokens())
    good = diagnose_template("/props", GEMMA, None, gemma_tokens())
    result = {
        "leaky": {"reachable": True, "engine_kind": "llamacpp", "template": bad.to_dict()},
        "fine": {"reachable": True, "engine_kind": "llamacpp", "template": good.to_dict()},
        "gone": {"reachable": False, "error": "EngineRefused: x", "served": []},
    }
    assert preflight_warnings("gpu-a", result) == [f"gpu-a: {template_warning('leaky', bad)}"]
    manifest = Manifest()
    manifest.server("leaky").warmup = WarmupProbe(flags=["template_leak"])  # an earlier run's
    store_servers(manifest, result)
    servers = manifest.to_dict()["servers"]
    assert list(servers) == ["leaky", "fine"]  # nothing found about "gone"
    assert servers["leaky"] == {
        "warmup": {"flags": ["template_leak"]},
        "engine_kind": "llamacpp",
        "template": bad.to_dict(),
    }
    assert servers["fine"] == {"engine_kind": "llamacpp", "template": good.to_dict()}
