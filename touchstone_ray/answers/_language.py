"""``wrong_language``: the answer is not in the pack's language (py3langid, langid.py's model).

The identifier is restricted to :data:`DETECT_LANGUAGES` (the pack languages and the ones a
model drifts into), classifies a bounded prefix of the answer with its fenced code blocks
removed, and flags only a confident, long enough verdict. Loading its model takes about a
second, once per process: :func:`preload` starts that in a thread (the client actor does at
``ready``), so no event loop waits for it.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import Future
from typing import Any

DETECT_LANGUAGES: tuple[str, ...] = ("de", "en", "fr", "es", "it", "nl", "pt", "pl", "ru", "zh")
"""The languages an answer is classified among: the pack languages (``de``, ``en``), the
neighbours a German or English answer could be mistaken for, and the ones small models drift
into (Chinese for Qwen-family models)."""

LANGUAGE_PREFIX_CHARS = 300
"""Characters of the answer (after removing code blocks) that are classified: plenty for a
verdict on the answers of tests/answers, and it bounds the cost on a 16 KB answer (about
0.05 ms instead of 1.5 ms for all of it)."""

LANGUAGE_MIN_WORDS = 15
"""Answers with fewer words in that prefix are not judged (a subject line, ``OK``)."""

LANGUAGE_MIN_CONFIDENCE = 0.95
"""The detected language's probability (0..1) must reach this for a ``wrong_language`` flag."""

_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_lock = threading.Lock()
_identifier: Any = None
_loading: Future[None] | None = None


def identifier() -> Any:
    """The process's py3langid ``LanguageIdentifier`` (probabilities normalised, restricted to
    :data:`DETECT_LANGUAGES`), loaded on first use (about 1 s)."""
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                ident.set_languages(list(DETECT_LANGUAGES))
                _identifier = ident
    return _identifier


def preload() -> Future[None]:
    """Start loading :func:`identifier` in a daemon thread (once per process); the future is
    done when it is loaded (its exception, if loading failed)."""
    global _loading
    with _lock:
        if _loading is None:
            loading: Future[None] = Future()
            _loading = loading

            def load() -> None:
                try:
                    identifier()
                except BaseException as exc:
                    loading.set_exception(exc)
                else:
                    loading.set_result(None)

            threading.Thread(target=load, name="answers-langid", daemon=True).start()
        return _loading


def language_sample(content: str) -> str:
    """What is classified: ``content`` without fenced code blocks, its first
    :data:`LANGUAGE_PREFIX_CHARS` characters."""
    if "```" in content:
        content = _CODE_BLOCK.sub(" ", content)
    return content[:LANGUAGE_PREFIX_CHARS]


def detect_language(content: str) -> tuple[str, float] | None:
    """``(language, probability)`` of ``content``'s :func:`language_sample` among
    :data:`DETECT_LANGUAGES`, or ``None`` when it has under :data:`LANGUAGE_MIN_WORDS` words."""
    sample = language_sample(content)
    if len(sample.split()) < LANGUAGE_MIN_WORDS:
        return None
    lang, prob = identifier().classify(sample)
    return str(lang), float(prob)


def wrong_language(content: str, language: str | None) -> bool:
    """Whether ``content`` is confidently (:data:`LANGUAGE_MIN_CONFIDENCE`) in another language
    than ``language`` (the pack's ``de`` / ``en``); ``False`` when ``language`` is ``None`` or
    not in :data:`DETECT_LANGUAGES`, and for answers too short to judge."""
    if language is None or language not in DETECT_LANGUAGES:
        return False
    found = detect_language(content)
    return found is not None and found[0] != language and found[1] >= LANGUAGE_MIN_CONFIDENCE
