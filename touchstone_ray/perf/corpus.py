"""The shipped text corpus: German and English prose written for this project.

Two stories, ``corpus/de.txt`` (about 6,600 words) and ``corpus/en.txt`` (about 6,500), no
run of 12 words in them twice. Prompts are cut from one word stream (German, then English),
so a prompt of ``n`` words starting at word ``offset`` is the same on every machine. The
stream is about 16,900 tokens for Gemma 3's tokenizer (llama.cpp ``/tokenize``), so a
16k-token prompt from offset 0 repeats nothing; a longer one wraps around deterministically:
word ``i`` of a passage is word ``(offset + i) mod len(words())`` of the stream, so it starts
over with the first German word.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

LANGUAGES = ("de", "en")
"""Corpus files, in the order they are joined."""


@cache
def words() -> tuple[str, ...]:
    """Every word of the corpus (whitespace-split), German first, then English."""
    out: list[str] = []
    for lang in LANGUAGES:
        text = resources.files("touchstone_ray.perf").joinpath(f"corpus/{lang}.txt")
        out.extend(text.read_text(encoding="utf-8").split())
    return tuple(out)


def passage(n_words: int, offset: int = 0) -> str:
    """``n_words`` words from word ``offset`` on, wrapping around the corpus, space-joined."""
    stream = words()
    return " ".join(stream[(offset + i) % len(stream)] for i in range(max(0, n_words)))
