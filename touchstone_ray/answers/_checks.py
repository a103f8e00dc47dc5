"""Judge-free checks of one answer (SPEC §3 ``checks``, stored as SPEC §7 ``checks``).

A quality pack's prompt may carry checks; each runs on the answer text (``response_text``:
the content the judge sees, reasoning split off) and gives ``ok`` ``True`` (passed),
``False`` (failed) or ``None`` (not measured: the check could not run; ``detail`` says why).
One function per type, each taking plain arguments (the check's ``value`` and the text) and
returning ``(ok, detail)``; :func:`answer_check` wraps one into a
:class:`~touchstone_ray.records.CheckOutcome`, :func:`answer_checks` runs a prompt's list.

- ``regex``: :func:`re.search` of the pattern anywhere in the answer, no flags (a pattern
  sets its own: ``(?i)``, ``(?m)``, ``(?s)``).
- ``contains`` / ``not_contains``: the text occurs / does not occur in the answer,
  case-insensitively (both sides :meth:`str.casefold`\\ ed; ``ß`` matches ``ss``), otherwise
  literally. A check that must respect case is a ``regex``.
- ``json_schema``: the answer is parsed as JSON, the whole text (stripped) or else the body of
  its first fenced block (```` ```json … ``` ````); the document is validated with
  ``jsonschema`` under the schema's own draft (``$schema``; the newest draft without one), its
  ``format`` keywords asserted. No JSON found fails.
- ``max_words``: :func:`count_words` ≤ the limit (code blocks count: they are answer text).
- ``max_sentences``: :func:`split_sentences` gives at most the limit.
- ``language``: the answer's language (:func:`~touchstone_ray.answers.detect_language`, the
  detector of the ``wrong_language`` flag) is the one named: the same language passes, another
  at ≥ :data:`~touchstone_ray.answers.LANGUAGE_MIN_CONFIDENCE` fails, an answer under
  :data:`~touchstone_ray.answers.LANGUAGE_MIN_WORDS` words or a less confident verdict is not
  measured.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from touchstone_ray.answers._language import (
    LANGUAGE_MIN_CONFIDENCE,
    LANGUAGE_MIN_WORDS,
    detect_language,
    language_sample,
)
from touchstone_ray.records import CheckOutcome

__all__ = [
    "CHECK_FUNCTIONS",
    "DETAIL_MAX_CHARS",
    "NOT_MEASURED_REASONING_ONLY",
    "SENTENCE_ABBREVIATIONS",
    "answer_check",
    "answer_checks",
    "contains_check",
    "count_words",
    "extract_json",
    "json_schema_check",
    "language_check",
    "max_sentences_check",
    "max_words_check",
    "not_contains_check",
    "regex_check",
    "split_sentences",
]

CheckResult = tuple[bool | None, str]
"""``(ok, detail)``: passed / failed / ``None`` not measured, and why (``""`` for a pass)."""

DETAIL_MAX_CHARS = 200
"""A ``detail`` is one line of at most this many characters."""

NOT_MEASURED_REASONING_ONLY = "no answer text (reasoning only)"
"""The ``detail`` of every check of an answer that is all reasoning (SPEC §10: unscored)."""

SENTENCE_ABBREVIATIONS = frozenset(
    {
        # German
        "abs", "abt", "anm", "bspw", "bzgl", "bzw", "ca", "d.h", "dipl", "dr", "evtl", "exkl",
        "ff", "gem", "ggf", "hr", "inkl", "ing", "jh", "lt", "max", "min", "mio", "mrd", "mwst",
        "nr", "o.ä", "prof", "s.o", "s.u", "sog", "str", "tel", "u.a", "u.u", "usw", "vgl",
        "z.b", "z.t", "zzgl",
        # English
        "approx", "co", "e.g", "etc", "fig", "i.e", "inc", "incl", "jr", "ltd", "mr", "mrs",
        "ms", "no", "sr", "st", "vs",
    }
)  # fmt: skip
"""Words whose full stop does not end a sentence (lower case, without the final dot; German
and English)."""

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_WORD = re.compile(r"\w+(?:[-'’.]\w+)*")
_BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s+|\d{1,3}[.)]\s+|#{1,6}\s+|>\s*|\|)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_BOUNDARY = re.compile(r"[.!?…]+[\"'»«“”„‘’)\]]*\s+")
_TOKEN_BEFORE = re.compile(r"(\S+)$")


def _one_line(text: str) -> str:
    """``text`` on one line (whitespace runs made one space), cut to :data:`DETAIL_MAX_CHARS`."""
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_MAX_CHARS else text[: DETAIL_MAX_CHARS - 1] + "…"


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def regex_check(pattern: str, text: str) -> CheckResult:
    """``pattern`` is found in ``text`` (:func:`re.search`, no flags)."""
    if re.search(pattern, text):
        return True, ""
    return False, f"no match for {_quote(pattern)}"


def contains_check(needle: str, text: str) -> CheckResult:
    """``needle`` occurs in ``text``, case-insensitively (casefolded)."""
    if needle.casefold() in text.casefold():
        return True, ""
    return False, f"{_quote(needle)} not found"


def not_contains_check(needle: str, text: str) -> CheckResult:
    """``needle`` does not occur in ``text``, case-insensitively (casefolded); a failure
    quotes the text around the first place it was found."""
    folded = needle.casefold()
    if folded not in text.casefold():
        return True, ""
    origin: list[int] = []  # casefolding may lengthen a character (ß → ss)
    for i, char in enumerate(text):
        origin.extend([i] * len(char.casefold()))
    at = text.casefold().find(folded)
    start, end = origin[at], origin[at + len(folded) - 1] + 1
    around = text[max(0, start - 20) : end + 20]
    return False, f"{_quote(needle)} found: …{around}…"


def extract_json(text: str) -> tuple[Any, str]:
    """``(document, "")`` of the JSON in ``text``: the whole text (stripped), else the body of
    its first fenced block; ``(None, reason)`` when neither parses."""
    whole = text.strip()
    try:
        return json.loads(whole), ""
    except ValueError:
        pass
    fence = _FENCE.search(text)
    if fence is None:
        return None, "the answer is not JSON and has no fenced block"
    try:
        return json.loads(fence.group(1)), ""
    except ValueError as exc:
        return None, f"the first fenced block is not JSON: {exc}"


def json_schema_check(schema: dict[str, Any], text: str) -> CheckResult:
    """The JSON of ``text`` (:func:`extract_json`) validates against ``schema`` (its own draft,
    ``format`` asserted); a failure names the first error (``jsonschema``'s best match) and
    where it is (a JSON path, ``$`` the document)."""
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    document, reason = extract_json(text)
    if reason:
        return False, reason
    cls = validator_for(schema)
    error = best_match(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(document))
    if error is None:
        return True, ""
    return False, f"{error.json_path}: {error.message}"


def count_words(text: str) -> int:
    """Words of ``text``: runs of letters and digits, joined by ``-``, ``'``, ``’`` or ``.``
    inside a word (``E-Mail``, ``don't``, ``3.5`` and ``z.B`` are one word each); markup and
    punctuation alone are none."""
    return len(_WORD.findall(text))


def _blocks(text: str) -> list[str]:
    """``text`` without fenced code, as blocks: paragraphs (lines up to a blank line), where a
    list item, heading, quote line or table row starts a block of its own (only a list item's
    block takes the lines after it); markers stripped."""
    blocks: list[list[str]] = []
    open_block = False
    for line in _CODE_BLOCK.sub("\n", text).splitlines():
        if not line.strip():
            open_block = False
            continue
        start = _BLOCK_START.match(line)
        if start is not None:
            blocks.append([line[start.end() :]])
            open_block = _LIST_ITEM.match(line) is not None  # a list item may go on
        elif open_block:
            blocks[-1].append(line)
        else:
            blocks.append([line])
            open_block = True
    return [" ".join(part.strip() for part in block) for block in blocks]


def _ends_sentence(block: str, match: re.Match[str]) -> bool:
    """Whether the punctuation of ``match`` in ``block`` ends a sentence: not a lone full
    stop after an abbreviation, a single letter (``z. B.``) or a one- or two-digit number
    (``3. Mai``), and not followed by a lower-case letter."""
    after = block[match.end() : match.end() + 1]
    if after.islower():
        return False
    punct = match.group(0).rstrip()
    if punct.rstrip("\"'»«“”„‘’)]") != ".":
        return True
    before = _TOKEN_BEFORE.search(block[: match.start()])
    word = before.group(1).lstrip("\"'»«“”„‘’([") if before else ""
    if not word:
        return True
    if word.lower() in SENTENCE_ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha():
        return False
    return not (word.isdigit() and len(word) <= 2)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, each stripped; the splitter :func:`max_sentences_check`
    counts with.

    Fenced code blocks are left out. The text is cut into blocks: paragraphs (lines up to a
    blank line; a line break inside a paragraph does not end a sentence), and every list
    item (with the lines that follow it), heading, quote line and table row is a block of its
    own (a salutation line
    followed by a blank line is one sentence; each bullet at least one). Inside a block a
    sentence ends at ``.``, ``!``, ``?`` or ``…`` (runs of them, closing quotes and brackets
    included) followed by whitespace, except a full stop after an abbreviation
    (:data:`SENTENCE_ABBREVIATIONS`), a single letter or a one- or two-digit number, and
    except before a lower-case letter; the block's end ends its last sentence. Pieces without
    a letter or digit (a table's ``|---|`` rule, a lone ``…``) are no sentences.
    """
    out: list[str] = []
    for block in _blocks(text):
        start = 0
        for match in _BOUNDARY.finditer(block):
            if _ends_sentence(block, match):
                out.append(block[start : match.end()].strip())
                start = match.end()
        out.append(block[start:].strip())
    return [s for s in out if re.search(r"\w", s)]


def max_words_check(limit: int, text: str) -> CheckResult:
    """:func:`count_words` of ``text`` ≤ ``limit``."""
    n = count_words(text)
    return (True, "") if n <= limit else (False, f"{n} words > {limit}")


def max_sentences_check(limit: int, text: str) -> CheckResult:
    """:func:`split_sentences` of ``text`` gives at most ``limit``."""
    n = len(split_sentences(text))
    return (True, "") if n <= limit else (False, f"{n} sentences > {limit}")


def language_check(language: str, text: str) -> CheckResult:
    """``text`` is in ``language`` (:func:`~touchstone_ray.answers.detect_language`): that
    language passes, another at ≥ :data:`LANGUAGE_MIN_CONFIDENCE` fails, anything else (too
    few words, a less confident verdict) is not measured."""
    found = detect_language(text)
    if found is None:
        words = len(language_sample(text).split())
        return None, f"too short to tell the language ({words} of {LANGUAGE_MIN_WORDS} words)"
    lang, prob = found
    if lang == language:
        return True, ""
    if prob >= LANGUAGE_MIN_CONFIDENCE:
        return False, f"language {lang} (p = {prob:.2f}), not {language}"
    return None, f"unsure: {lang} at p = {prob:.2f} < {LANGUAGE_MIN_CONFIDENCE}"


CHECK_FUNCTIONS: dict[str, Callable[[Any, str], CheckResult]] = {
    "regex": regex_check,
    "contains": contains_check,
    "not_contains": not_contains_check,
    "json_schema": json_schema_check,
    "max_words": max_words_check,
    "max_sentences": max_sentences_check,
    "language": language_check,
}
"""Check type (:data:`~touchstone_ray.records.AnswerCheckType`) → its function."""


def answer_check(check_id: str, check_type: str, value: Any, text: str) -> CheckOutcome:
    """The outcome of one check of ``check_type`` with ``value`` on the answer ``text``.

    Never raises: an unknown type, a value the check cannot use (a pack built without the
    loader) or a detector that fails to load is ``ok=None`` with the reason."""
    run = CHECK_FUNCTIONS.get(check_type)
    if run is None:
        return CheckOutcome(
            id=check_id, type=check_type, ok=None, detail=f"unknown check type {check_type!r}"
        )
    try:
        ok, detail = run(value, text)
    except Exception as exc:
        ok, detail = None, f"could not run: {type(exc).__name__}: {exc}"
    return CheckOutcome(id=check_id, type=check_type, ok=ok, detail=_one_line(detail))


def answer_checks(
    checks: Iterable[tuple[str, str, Any]],
    content: str,
    reasoning: str = "",
    not_measured: str = "",
) -> list[CheckOutcome]:
    """The outcomes of ``checks`` (``(id, type, value)`` each, in pack order) on one answer.

    ``content`` is the answer text, ``reasoning`` its reasoning (``""`` none). Every check is
    not measured (``ok=None``) with ``not_measured`` as its detail when that is given (the
    caller's reason, e.g. a prompt the server cut), and with
    :data:`NOT_MEASURED_REASONING_ONLY` when the answer is all reasoning; an empty answer
    (neither) is checked like any other (SPEC §10 scores it too)."""
    if not not_measured and not content.strip() and reasoning.strip():
        not_measured = NOT_MEASURED_REASONING_ONLY
    if not_measured:
        detail = _one_line(not_measured)
        return [CheckOutcome(id=i, type=t, ok=None, detail=detail) for i, t, _ in checks]
    return [answer_check(i, t, value, content) for i, t, value in checks]
