"""One cell as a host's client actor receives it: what to send, and the Ray task name it runs
under."""

from __future__ import annotations

from dataclasses import dataclass

from touchstone_ray.pack import AnswerCheck

__all__ = ["TASK_NAMES_PER_MODEL", "Cell"]

TASK_NAMES_PER_MODEL = 256
"""Most distinct Ray task names one model's cells get: the driver's Ray core keeps state per
task name for the whole run (about 20 kB each, measured with ``bench/bench_eval_memory.py``),
so names name the prompt only while variants × prompts stays within this; above it they
name the model and variant (``eval:qwen3:8b:baseline``)."""


@dataclass(frozen=True)
class Cell:
    """One request of the matrix, as sent to a host's client actor."""

    key: str
    model: str
    """Model label (the id, or ``id@host`` when an id is served by several hosts)."""
    variant: str
    system_prompt: str | None
    category: str
    prompt_id: str
    prompt: str
    repeat: int
    max_tokens: int | None
    """The completion budget sent (tokens): the prompt's ``max_tokens`` plus the model's
    ``reasoning_headroom_tokens``; ``None``: no cap sent."""
    name_prompt: bool = True
    """Whether :attr:`task_name` names the prompt (see :data:`TASK_NAMES_PER_MODEL`)."""
    checks: tuple[AnswerCheck, ...] = ()
    """The prompt's judge-free checks (SPEC §3), run on the answer by the client actor."""

    @property
    def task_name(self) -> str:
        """Readable Ray task name: ``eval:qwen3:8b:baseline:B3`` (``eval:qwen3:8b:baseline``
        for a pack with more than :data:`TASK_NAMES_PER_MODEL` variants × prompts).

        Without the repeat: Ray keeps state per task name in the driver for the whole run,
        so names must stay bounded, not grow with the cells (``bench/bench_eval_memory.py``:
        +10 MB per 1k cells with one name per cell, +1 MB per 1k with one per prompt when
        the prompts grow with the cells).
        """
        if not self.name_prompt:
            return f"eval:{self.model}:{self.variant}"
        return f"eval:{self.model}:{self.variant}:{self.prompt_id}"
