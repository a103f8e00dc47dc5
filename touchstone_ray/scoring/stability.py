"""Repeat stability: does a prompt asked several times get the same answer?

Over the ok answers of one (model, variant), a prompt with at least two ok repeats counts; its
distinct answers are the distinct ``response_text`` values among those repeats, compared byte
for byte; it is stable with one. ``stability_pct`` = stable prompts / counted prompts × 100
(%), ``None`` when no prompt counts. Every repeat is still judged: stability is reported beside
the scores, never instead of them.

Why temperature 0 is not enough (:data:`WHY_UNSTABLE`): greedy decoding picks the most likely
token, but the logits it compares depend on how the server computed them. llama.cpp's server
decodes the requests of its slots (``--parallel`` > 1) in one batch, and a batch of another
size or make-up sums the same numbers in another order, so near-ties can flip and the answers
part from there; Ollama (``OLLAMA_NUM_PARALLEL``) and vLLM (continuous batching) batch
concurrent requests the same way. A row below 100 % says the answers to one prompt differ run
to run on that server setup, not that sampling was on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from touchstone_ray.records import EvalResponse

__all__ = ["WHY_UNSTABLE", "RepeatStability", "repeat_stability"]

WHY_UNSTABLE = (
    "servers batch concurrent requests (llama.cpp slots at --parallel > 1, Ollama, vLLM); a "
    "different batch sums in a different order, so temperature 0 is not bit-identical"
)
"""The reason, in one line, that repeats at temperature 0 can differ (the module docstring)."""


@dataclass(frozen=True)
class RepeatStability:
    """The repeat stability of one (model, variant)."""

    distinct_answers: dict[str, int]
    """Prompt id → distinct answers among its ok repeats, for the prompts with at least two ok
    repeats (in the order of their first answer)."""

    @property
    def n_prompts(self) -> int:
        """Prompts counted (at least two ok repeats)."""
        return len(self.distinct_answers)

    @property
    def n_stable(self) -> int:
        """Counted prompts whose repeats all gave the same answer."""
        return sum(1 for n in self.distinct_answers.values() if n == 1)

    @property
    def stability_pct(self) -> float | None:
        """Stable prompts / counted prompts × 100 (%); ``None`` when none counts."""
        return self.n_stable / self.n_prompts * 100.0 if self.n_prompts else None

    @property
    def unstable(self) -> dict[str, int]:
        """Prompt id → distinct answers, of the prompts with more than one."""
        return {p: n for p, n in self.distinct_answers.items() if n > 1}


def repeat_stability(responses: Iterable[EvalResponse]) -> RepeatStability:
    """:class:`RepeatStability` of one (model, variant)'s ``responses`` (one record per key,
    as the bundle's readers give them); failed cells do not count."""
    answers: dict[str, list[str]] = {}
    for r in responses:
        if r.ok:
            answers.setdefault(r.prompt_id, []).append(r.response_text)
    return RepeatStability(
        {prompt: len(set(texts)) for prompt, texts in answers.items() if len(texts) >= 2}
    )
