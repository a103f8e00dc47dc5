"""The flags of ``touchstone-ray perf`` (SPEC §6) as one value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PerfOptions:
    """The flags of ``touchstone-ray perf`` (SPEC §6); token counts in tokens, SLO in s."""

    config: Path
    address: str | None = None
    models: list[str] | None = None
    contexts: list[int] = field(default_factory=lambda: [1024, 4096])
    concurrency: list[int] = field(default_factory=lambda: [1, 2, 4])
    output_tokens: int = 128
    runs: int = 8
    slo: dict[str, float] = field(default_factory=dict)
    capacity: bool = False
    embed: bool = False
    embed_chunks: int = 64
    """``--embed``: chunks embedded per model."""
    embed_tokens: int = 256
    """``--embed``: target tokens per chunk (estimated from words, see :mod:`.embed`)."""
    embed_batch: int = 8
    """``--embed``: chunks per request."""
    out: Path | None = None
    resume: Path | None = None
    lockstep: bool = False
    """``--lockstep``: each point's requests in rounds of ``concurrency`` sent together
    instead of a closed loop (:mod:`.schedule`); a resumed run keeps its bundle's choice."""
