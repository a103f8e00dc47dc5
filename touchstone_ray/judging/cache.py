"""Cache keys: when a stored verdict or report is still valid (resume, SPEC §7 ``judgements/``).

Every stored verdict carries ``cache_key = sha256(judge model, TEMPLATE_VERSION, pack sha256,
answer text, prompt id, variant)`` (:func:`answer_cache_key`): it changes when the judge model,
the judge templates, the pack or the answer under test change, and then the verdict is asked
again. The record ``key`` (``model|variant|prompt_id|repeat``) says *which* cell a verdict
belongs to; the cache key says whether it is still *about the same thing*.

Every stored holistic report carries :func:`report_cache_key`: the same first three parts plus
(model, variant) and a digest of the evidence (each verdict's key, cache key, score, red flag
and status), so a report is asked again whenever one of its verdicts changed.

The parts are hashed as one JSON array (unambiguous: no separator can occur inside a part).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from touchstone_ray.judging.prompts import TEMPLATE_VERSION

__all__ = ["answer_cache_key", "report_cache_key"]


def _sha256(parts: list[Any]) -> str:
    data = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def answer_cache_key(
    judge_model: str, pack_sha256: str, answer_text: str, prompt_id: str, variant: str
) -> str:
    """sha256 hex of (judge model, TEMPLATE_VERSION, pack sha256, answer text, prompt id,
    variant): the validity stamp of one stored verdict."""
    return _sha256([judge_model, TEMPLATE_VERSION, pack_sha256, answer_text, prompt_id, variant])


def report_cache_key(
    judge_model: str,
    pack_sha256: str,
    model: str,
    variant: str,
    verdicts: Iterable[Mapping[str, Any]],
) -> str:
    """sha256 hex of (judge model, TEMPLATE_VERSION, pack sha256, model, variant, evidence):
    the validity stamp of one stored holistic report; ``verdicts`` are the stored verdict
    records (dicts) of that (model, variant), in any order."""
    evidence = sorted(
        (
            [
                str(v.get("key")),
                str(v.get("cache_key")),
                v.get("score"),
                bool(v.get("red_flag")),
                str(v.get("status")),
            ]
            for v in verdicts
        ),
        key=lambda item: (item[0], item[1]),
    )
    return _sha256([judge_model, TEMPLATE_VERSION, pack_sha256, model, variant, evidence])
