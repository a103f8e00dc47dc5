"""``template_leak``: chat-template control text in an answer's content.

A server whose chat template does not match its model (llama.cpp's ChatML fallback for a GGUF
without a template, a wrong ``--chat-template``) lets the model write the template's control
markers as plain text: ``…<|im_end|>\\n<|im_start|>user``. A correctly templated server turns
them into special tokens and stops, so any one of them in the content is the sign.
"""

from __future__ import annotations

import re

TEMPLATE_MARKERS: dict[str, tuple[str, ...]] = {
    "ChatML (Qwen, Yi, llama.cpp's fallback template)": ("<|im_start|>", "<|im_end|>"),
    "Gemma": ("<start_of_turn>", "<end_of_turn>"),
    "Llama 3": ("<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>"),
    "Llama 4": ("<|eot|>", "<|header_start|>", "<|header_end|>"),
    "Mistral / Llama 2": ("[INST]", "[/INST]", "<<SYS>>", "<</SYS>>"),
    "SentencePiece end of sequence (Llama 2, Mistral)": ("</s>",),
    "GPT-2 style end of text (many base models)": ("<|endoftext|>",),
    "Phi-3": ("<|end|>", "<|user|>", "<|assistant|>", "<|system|>"),
    "DeepSeek": ("<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"),
    "Granite": ("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"),
    "Command R": ("<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
}
"""Control markers of the common chat templates, by family: the data :func:`template_leak`
looks for (exact, case-sensitive substrings)."""

LLAMACPP_TEMPLATES: dict[str, str] = {
    "ChatML (Qwen, Yi, llama.cpp's fallback template)": "chatml",
    "Gemma": "gemma",
    "Llama 3": "llama3",
    "Llama 4": "llama4",
    "Mistral / Llama 2": "llama2",
    "Phi-3": "phi3",
    "DeepSeek": "deepseek3",
    "Granite": "granite",
    "Command R": "command-r",
}
"""Family of :data:`TEMPLATE_MARKERS` → the name of llama.cpp's built-in template for it
(``llama-server --chat-template NAME``; the names of llama.cpp ``src/llama-chat.cpp``). The
end-of-sequence families are no chat template of their own and have none."""

HTML_LIKE_MARKERS: dict[str, str] = {"</s>": "<s>"}
"""Markers that are also HTML closing tags, with their opening tag: such a marker counts only
where its opening tag does not come before it (``<s>durchgestrichen</s>`` is markup)."""

TEMPLATE_LEAK_MIN_HITS = 1
"""Markers (occurrences of any) that make a leak: one is enough, no answer writes them."""

_MARKERS: tuple[str, ...] = tuple(m for family in TEMPLATE_MARKERS.values() for m in family)
_MARKER_RE = re.compile("|".join(re.escape(m) for m in _MARKERS))
_FIRST_CHARS = frozenset(m[0] for m in _MARKERS)


def leaked_markers(content: str) -> list[str]:
    """The :data:`TEMPLATE_MARKERS` found in ``content``, in table order (each once)."""
    if not any(c in content for c in _FIRST_CHARS):
        return []
    found: set[str] = set()
    for match in _MARKER_RE.finditer(content):
        marker = match.group()
        opener = HTML_LIKE_MARKERS.get(marker)
        if opener is not None and opener in content[: match.start()]:
            continue
        found.add(marker)
    return [m for m in _MARKERS if m in found]


def template_families(template: str) -> list[str]:
    """The :data:`TEMPLATE_MARKERS` families whose markers occur in a chat template's text
    (Jinja or Go template as the server sends it), in table order."""
    return [f for f, markers in TEMPLATE_MARKERS.items() if any(m in template for m in markers)]


def template_leak(content: str) -> bool:
    """Whether ``content`` holds at least :data:`TEMPLATE_LEAK_MIN_HITS` chat-template control
    markers (:data:`TEMPLATE_MARKERS`; an HTML-like one only without its opening tag before
    it)."""
    return len(leaked_markers(content)) >= TEMPLATE_LEAK_MIN_HITS
