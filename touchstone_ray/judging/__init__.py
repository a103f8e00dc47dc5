"""Judging: ask LLM judges about a bundle's answers and store their verdicts (SPEC §10).

Modules: :mod:`.parse` (the judge reply contract), :mod:`.prompts` (judge templates and reply
schemas), :mod:`.config` (the judge config). Running judges: :func:`run_judge` (the ``judge``
command, :mod:`.runner`) over :mod:`.worklist` (what is left to ask), :mod:`.client` (the judge
actor), :mod:`.driver` (its lanes on the fleet's dispatcher) and :mod:`.cache` (cache keys);
:mod:`.flags` checks the flags a judge names against the prompt's, :mod:`.checks` qualifies
each judge on the pack's calibration answers and warns about degenerate output. The judge
files are :class:`touchstone_ray.bundle.JudgeFiles`'s; what the verdicts add up to is
:mod:`touchstone_ray.scoring`'s. :func:`run_judge` is imported on first use (it brings Ray and
the engines). The names in ``__all__`` are the package's public surface (a test pins them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from touchstone_ray.judging.config import JudgeConfig, JudgeSpec, load_judge_config
from touchstone_ray.judging.parse import (
    ParsedHolistic,
    ParsedVerdict,
    ParseFailure,
    parse_answer_reply,
    parse_holistic_reply,
)
from touchstone_ray.judging.prompts import (
    ANSWER_SCHEMA,
    TEMPLATE_VERSION,
    JudgePrompt,
    answer_prompt,
    holistic_prompt,
    holistic_schema,
)

if TYPE_CHECKING:
    from touchstone_ray.judging.runner import run_judge

__all__ = [
    "ANSWER_SCHEMA",
    "TEMPLATE_VERSION",
    "JudgeConfig",
    "JudgePrompt",
    "JudgeSpec",
    "ParseFailure",
    "ParsedHolistic",
    "ParsedVerdict",
    "answer_prompt",
    "holistic_prompt",
    "holistic_schema",
    "load_judge_config",
    "parse_answer_reply",
    "parse_holistic_reply",
    "run_judge",
]


def __getattr__(name: str) -> Any:
    """:func:`run_judge` on first use (PEP 562), so that importing the facade stays light."""
    if name == "run_judge":
        from touchstone_ray.judging.runner import run_judge

        return run_judge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
