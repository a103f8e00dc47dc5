"""The flags of ``touchstone-ray perf`` (SPEC §6) as one value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from touchstone_ray.perf.plan import OpenLoop
from touchstone_ray.perf.schedule import MAX_IN_FLIGHT

DEFAULT_DURATION_S = 30.0
"""``--duration`` when neither it nor ``--requests`` is given (s per open-loop point)."""
SWEEP_POINTS = 6
"""``--sweep-points`` default: open-loop rates between the two closed-loop throughputs."""


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
    rates: list[float] | None = None
    """``--rate``: open-loop points at these offered rates (requests/s per model and host)."""
    arrival: str = "constant"
    """``--arrival``: ``constant`` or ``poisson`` (:mod:`.schedule`)."""
    duration_s: float | None = None
    """``--duration``: s of arrivals per open-loop point (default :data:`DEFAULT_DURATION_S`)."""
    requests: int | None = None
    """``--requests``: requests per open-loop point instead of a duration."""
    max_in_flight: int = MAX_IN_FLIGHT
    """``--max-in-flight``: requests out at once beyond which a due one is ``dropped``."""
    seed: int = 0
    """``--seed``: the Poisson schedule's seed (recorded in ``bundle.json``)."""
    sweep: bool = False
    """``--sweep``: closed loop at c = 1 and at the highest ``--concurrency``, then
    ``sweep_points`` rates between, to the highest sustainable rate."""
    sweep_points: int = SWEEP_POINTS
    """``--sweep-points``: open-loop rates of the sweep (≥ 2)."""
    concurrency_given: bool = False
    """``--concurrency`` was on the command line (it excludes ``--rate``)."""

    def open_loop(self) -> OpenLoop:
        """How this run's open-loop points are sent."""
        duration = None if self.requests is not None else (self.duration_s or DEFAULT_DURATION_S)
        return OpenLoop(
            arrival=self.arrival,
            duration_s=duration,
            requests=self.requests,
            max_in_flight=self.max_in_flight,
            seed=self.seed,
        )
