"""``prompt_echo`` and ``repetition_loop``: answers that repeat the prompt, or themselves.

Both compare words as written: the text split at ASCII whitespace (case and punctuation stay
on the word, as an echo or a loop repeats them too). Each word becomes one 64-bit hash, computed for
all words at once with numpy (a polynomial hash over the UTF-8 bytes, from one prefix sum), and
each n-gram of :data:`NGRAM_WORDS` words one mix of those, so a 16 KB answer costs a fraction
of a millisecond (``bench/bench_answer_flags.py``); no Python loop runs per word.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Hashes = npt.NDArray[np.uint64]
"""One 64-bit hash per word or n-gram."""

NGRAM_WORDS = 4
"""Words per n-gram, in both detectors: long enough that clean prose rarely repeats one, short
enough that a loop of one short sentence is seen."""

ECHO_PREFIX_WORDS = 8
"""An answer *begins with* a prompt when its first words are the prompt's first this many
words (all of them for a shorter prompt)."""

ECHO_MIN_WORDS = 3
"""A prompt (user or system) shorter than this many words is never looked for (``Hallo``)."""

ECHO_START_SLACK_WORDS = 2
"""Words the echo may start after (a role name such as ``user`` or ``model`` left over from a
template)."""

ECHO_SHARE = 0.5
"""An answer *mostly consists of* the prompts when more than this share of its n-grams occur in
the user or system prompt, and it holds the first n-gram of one of them (so a corrected or
quoted text from the prompt, without the instruction, is no echo)."""

LOOP_SHARE = 0.5
"""A loop: the longest run of consecutive n-grams that each occurred earlier in the answer,
plus the n-gram's own words, covers more than this share of the answer's words. A text said
twice covers 1/2 (no loop); three times, 2/3."""

LOOP_MIN_WORDS = 5 * NGRAM_WORDS
"""Answers shorter than this many words are never a loop (``Ja, ja, ja.``)."""

_P = 0x100000001B3
"""The hash's base (the FNV-1 64-bit prime; odd, so it has an inverse modulo 2**64)."""
_BASE = np.uint64(_P)
_BASE_INV = np.uint64(pow(_P, -1, 1 << 64))
_MIX = np.uint64(0x9E3779B97F4A7C15)
_NONE: Hashes = np.empty(0, dtype=np.uint64)
_powers: tuple[Hashes, Hashes] = (np.ones(1, dtype=np.uint64), np.ones(1, dtype=np.uint64))


def _powers_for(n: int) -> tuple[Hashes, Hashes]:
    """``base**i`` and ``base**-i`` modulo 2**64 for ``i < n`` (kept, grown by doubling)."""
    global _powers
    have = _powers
    if len(have[0]) < n:
        size = max(n, 2 * len(have[0]))
        up = np.empty(size, dtype=np.uint64)
        down = np.empty(size, dtype=np.uint64)
        up[0] = down[0] = 1
        up[1:] = np.cumprod(np.full(size - 1, _BASE, dtype=np.uint64))
        down[1:] = np.cumprod(np.full(size - 1, _BASE_INV, dtype=np.uint64))
        have = _powers = (up, down)
    return have[0][:n], have[1][:n]


def word_hashes(text: str) -> Hashes:
    """One hash per word of ``text`` (split at ASCII whitespace, compared as written), in
    order; equal words hash equal wherever they stand."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    if not len(data):
        return _NONE
    space = (data == 32) | ((data >= 9) & (data <= 13))  # space, \t \n \v \f \r
    # -1 where a word starts, +1 just after one ends
    edges = np.diff(space.view(np.int8), prepend=np.int8(1), append=np.int8(1))
    starts = np.flatnonzero(edges == -1)
    if not len(starts):
        return _NONE
    ends = np.flatnonzero(edges == 1) - 1
    up, down = _powers_for(len(data))
    prefix = np.cumsum(data * up, dtype=np.uint64)
    before = prefix[starts - 1]
    before[starts == 0] = 0
    hashes: Hashes = (prefix[ends] - before) * down[starts]
    return hashes


def ngram_hashes(words: Hashes, n: int = NGRAM_WORDS) -> Hashes:
    """One hash per n-gram of ``words`` (``len(words) − n + 1`` of them; none when shorter)."""
    count = len(words) - n + 1
    if count <= 0:
        return _NONE
    grams = words[:count].copy()
    for i in range(1, n):
        grams *= _MIX
        grams ^= words[i : count + i]
    return grams


def begins_with(answer: Hashes, prompt: Hashes) -> bool:
    """Whether ``answer`` starts (within :data:`ECHO_START_SLACK_WORDS` words) with the first
    :data:`ECHO_PREFIX_WORDS` words of ``prompt`` (a prompt of at least
    :data:`ECHO_MIN_WORDS` words); both :func:`word_hashes`."""
    head = prompt[:ECHO_PREFIX_WORDS]
    if len(head) < ECHO_MIN_WORDS:
        return False
    for at in range(ECHO_START_SLACK_WORDS + 1):
        if np.array_equal(answer[at : at + len(head)], head):
            return True
    return False


def echo_share(answer_grams: Hashes, prompts: list[Hashes]) -> float:
    """Share (0..1) of ``answer_grams`` that occur among ``prompts``' n-grams; 0 unless the
    answer holds the first n-gram of one of those prompts (see :data:`ECHO_SHARE`)."""
    prompts = [p for p in prompts if len(p)]
    if not len(answer_grams) or not prompts:
        return 0.0
    if not any(bool((answer_grams == p[0]).any()) for p in prompts):
        return 0.0
    return float(np.isin(answer_grams, np.concatenate(prompts)).mean())


def echo_of(answer: Hashes, answer_grams: Hashes, prompts: list[Hashes]) -> bool:
    """:func:`prompt_echo` on :func:`word_hashes` and the answer's :func:`ngram_hashes`."""
    prompts = [p for p in prompts if len(p) >= ECHO_MIN_WORDS]
    if not len(answer) or not prompts:
        return False
    if any(begins_with(answer, p) for p in prompts):
        return True
    return echo_share(answer_grams, [ngram_hashes(p) for p in prompts]) > ECHO_SHARE


def prompt_echo(content: str, prompt: str | None, system_prompt: str | None) -> bool:
    """Whether ``content`` begins with the user or system prompt (:func:`begins_with`) or
    mostly consists of them (:func:`echo_share` above :data:`ECHO_SHARE`); ``None`` or short
    prompts are skipped."""
    answer = word_hashes(content)
    prompts = [word_hashes(p) for p in (prompt, system_prompt) if p]
    return echo_of(answer, ngram_hashes(answer), prompts)


def loop_cover(n_words: int, grams: Hashes) -> float:
    """Share (0..1) of an answer of ``n_words`` words covered by its longest run of n-grams that
    each occurred earlier in it (the run plus ``NGRAM_WORDS − 1`` words); 0 under
    :data:`LOOP_MIN_WORDS` words or without a repeated n-gram."""
    if n_words < LOOP_MIN_WORDS or not len(grams):
        return 0.0
    _, first, inverse = np.unique(grams, return_index=True, return_inverse=True)
    seen_before = first[inverse] < np.arange(len(grams))
    edges = np.diff(np.concatenate(([0], seen_before.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    longest = int((ends - starts).max()) if len(starts) else 0
    return 0.0 if longest == 0 else (longest + NGRAM_WORDS - 1) / n_words


def is_loop(n_words: int, grams: Hashes) -> bool:
    """:func:`repetition_loop` on words already split and hashed. Most answers repeat too few
    n-grams for any run to reach :data:`LOOP_SHARE`, which one sort tells."""
    if n_words < LOOP_MIN_WORDS or not len(grams):
        return False
    ordered = np.sort(grams)
    repeats = int(np.count_nonzero(ordered[1:] == ordered[:-1]))
    if (repeats + NGRAM_WORDS - 1) / n_words <= LOOP_SHARE:
        return False
    return loop_cover(n_words, grams) > LOOP_SHARE


def repetition_loop(content: str) -> bool:
    """Whether a run of repeated n-grams covers more than :data:`LOOP_SHARE` of ``content``'s
    words (:func:`loop_cover`)."""
    words = word_hashes(content)
    return is_loop(len(words), ngram_hashes(words))
