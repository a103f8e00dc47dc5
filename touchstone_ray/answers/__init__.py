"""Per-answer flags: answers that show a misconfigured server or a spent budget rather than a
model's quality (SPEC §7 ``answer_flags``).

One small detector per flag, each with its threshold as a named constant, and
:func:`answer_flags`, which runs them all on one answer in :data:`ANSWER_FLAGS` order:

- ``template_leak`` (:mod:`._markers`): chat-template control text in the content (the marker
  families are data, :data:`TEMPLATE_MARKERS`, also read to name a server's template:
  :func:`template_families`, :data:`LLAMACPP_TEMPLATES`);
- ``prompt_echo``, ``repetition_loop`` (:mod:`._text`): the answer begins with or mostly
  consists of the prompt; a repeated n-gram run covers most of it;
- ``cut_at_limit``, ``cut_in_reasoning``, ``empty``, ``reasoning_only`` (:mod:`._flags`);
- ``wrong_language`` (:mod:`._language`, py3langid): not in the pack's language.

And the judge-free checks a quality pack's prompt may carry (SPEC §3 ``checks``,
:mod:`._checks`): :func:`answer_checks` runs a prompt's list on one answer, one function per
type (``regex``, ``contains``, ``not_contains``, ``json_schema``, ``max_words``,
``max_sentences``, ``language``), each with plain arguments.

It imports only the standard library, numpy and py3langid, so every stage can use it.
"""

from __future__ import annotations

from touchstone_ray.answers._checks import (
    CHECK_FUNCTIONS,
    DETAIL_MAX_CHARS,
    NOT_MEASURED_REASONING_ONLY,
    SENTENCE_ABBREVIATIONS,
    answer_check,
    answer_checks,
    contains_check,
    count_words,
    extract_json,
    json_schema_check,
    language_check,
    max_sentences_check,
    max_words_check,
    not_contains_check,
    regex_check,
    split_sentences,
)
from touchstone_ray.answers._flags import (
    ANSWER_FLAGS,
    LENGTH_FINISH,
    answer_flags,
    cut_at_limit,
    cut_in_reasoning,
    empty,
    reasoning_only,
)
from touchstone_ray.answers._language import (
    DETECT_LANGUAGES,
    LANGUAGE_MIN_CONFIDENCE,
    LANGUAGE_MIN_WORDS,
    LANGUAGE_PREFIX_CHARS,
    detect_language,
    preload,
    wrong_language,
)
from touchstone_ray.answers._markers import (
    HTML_LIKE_MARKERS,
    LLAMACPP_TEMPLATES,
    TEMPLATE_LEAK_MIN_HITS,
    TEMPLATE_MARKERS,
    leaked_markers,
    template_families,
    template_leak,
)
from touchstone_ray.answers._text import (
    ECHO_MIN_WORDS,
    ECHO_PREFIX_WORDS,
    ECHO_SHARE,
    ECHO_START_SLACK_WORDS,
    LOOP_MIN_WORDS,
    LOOP_SHARE,
    NGRAM_WORDS,
    loop_cover,
    ngram_hashes,
    prompt_echo,
    repetition_loop,
    word_hashes,
)
from touchstone_ray.records import AnswerFlag, CheckOutcome

__all__ = [
    "ANSWER_FLAGS",
    "CHECK_FUNCTIONS",
    "DETAIL_MAX_CHARS",
    "DETECT_LANGUAGES",
    "ECHO_MIN_WORDS",
    "ECHO_PREFIX_WORDS",
    "ECHO_SHARE",
    "ECHO_START_SLACK_WORDS",
    "HTML_LIKE_MARKERS",
    "LANGUAGE_MIN_CONFIDENCE",
    "LANGUAGE_MIN_WORDS",
    "LANGUAGE_PREFIX_CHARS",
    "LENGTH_FINISH",
    "LLAMACPP_TEMPLATES",
    "LOOP_MIN_WORDS",
    "LOOP_SHARE",
    "NGRAM_WORDS",
    "NOT_MEASURED_REASONING_ONLY",
    "SENTENCE_ABBREVIATIONS",
    "TEMPLATE_LEAK_MIN_HITS",
    "TEMPLATE_MARKERS",
    "AnswerFlag",
    "CheckOutcome",
    "answer_check",
    "answer_checks",
    "answer_flags",
    "contains_check",
    "count_words",
    "cut_at_limit",
    "cut_in_reasoning",
    "detect_language",
    "empty",
    "extract_json",
    "json_schema_check",
    "language_check",
    "leaked_markers",
    "loop_cover",
    "max_sentences_check",
    "max_words_check",
    "ngram_hashes",
    "not_contains_check",
    "preload",
    "prompt_echo",
    "reasoning_only",
    "regex_check",
    "repetition_loop",
    "split_sentences",
    "template_families",
    "template_leak",
    "word_hashes",
    "wrong_language",
]
