"""Perf points: model × host × context × concurrency (or offered rate), their keys and order.

A point's requests have the key ``model|host|context|concurrency|run`` (SPEC §7b; ``run``
counts from 1). ``context`` is the target prompt length in tokens, or ``<tokens>-cached`` for
the cached variant (the same prompt every run, so the server's prompt cache serves it). An
open-loop point (``--rate``, :mod:`.schedule`) has concurrency 0 and ``r<rate>`` (requests/s)
in the concurrency's place: ``model|host|1024|r12.5|7``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from touchstone_ray.config import FleetConfig, ModelSpec
from touchstone_ray.errors import UsageError
from touchstone_ray.perf.schedule import MAX_IN_FLIGHT, Arrival, arrival_offsets

CACHED_SUFFIX = "-cached"
"""Appended to the context of the cached variant."""


def parse_tokens(text: str, flag: str) -> list[int]:
    """``"256,1k,16k"`` → ``[256, 1024, 16384]`` (``k`` = 1024). Raises UsageError naming
    ``flag`` and the bad item."""
    out: list[int] = []
    for item in (t.strip().lower() for t in text.split(",")):
        match = re.fullmatch(r"(\d+)(k?)", item)
        if not match or int(match.group(1)) == 0:
            raise UsageError(f"{flag}: {item!r} is not a positive count (e.g. 256, 1k, 16k)")
        out.append(int(match.group(1)) * (1024 if match.group(2) else 1))
    return out


def parse_slo(text: str | None) -> dict[str, float]:
    """``"ttft=0.5,tpot=0.05"`` → ``{"ttft": 0.5, "tpot": 0.05}`` (seconds). Raises
    UsageError for an unknown name or a value that is not a positive number."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        name = name.strip()
        if name not in ("ttft", "tpot"):
            raise UsageError(f"--slo: unknown target {name!r}; use ttft=SECONDS,tpot=SECONDS")
        try:
            out[name] = float(value)
        except ValueError:
            raise UsageError(f"--slo: {name}={value!r} is not a number of seconds") from None
        if out[name] <= 0:
            raise UsageError(f"--slo: {name} must be > 0 s, not {out[name]}")
    return out


def parse_rates(text: str) -> list[float]:
    """``"2,5,12.5"`` → ``[2.0, 5.0, 12.5]`` (requests/s). Raises UsageError for an item that
    is not a positive finite number."""
    out: list[float] = []
    for item in (t.strip() for t in text.split(",")):
        try:
            rate = float(item)
        except ValueError:
            rate = float("nan")
        if not rate > 0 or rate == float("inf"):
            raise UsageError(f"--rate: {item!r} is not a positive number of requests/s")
        out.append(rate)
    return out


@dataclass(frozen=True)
class Point:
    """One point: ``runs`` requests of ``model`` on ``host`` at ``concurrency`` in flight,
    prompts of ``context`` tokens (``cached``: the cached variant); or, with ``rate``, an
    open-loop point: ``runs`` requests due at ``rate`` requests/s (``arrival`` process,
    ``seed``), at most ``max_in_flight`` out at once (:mod:`.schedule`)."""

    model: str
    host: str
    context: int
    concurrency: int
    runs: int
    cached: bool = False
    rate: float | None = None
    """Offered rate (requests/s) of an open-loop point; ``None`` for a closed-loop one."""
    arrival: str = "constant"
    """``constant`` or ``poisson`` (open loop only)."""
    seed: int = 0
    """Seed of the ``poisson`` schedule (:func:`~.schedule.arrival_offsets`)."""
    max_in_flight: int = MAX_IN_FLIGHT
    """Open loop: requests out at once beyond which a due one is recorded ``dropped``."""

    @property
    def load_label(self) -> str:
        """The key's concurrency part: ``4``, or ``r12.5`` for an open-loop point."""
        return str(self.concurrency) if self.rate is None else f"r{self.rate:g}"

    def offsets(self) -> list[float]:
        """When each of the ``runs`` requests of an open-loop point is due (s from its start;
        :func:`~.schedule.arrival_offsets`). Raises ValueError for a closed-loop point."""
        if self.rate is None:
            raise ValueError(f"{self.prefix} is not an open-loop point")
        arrival: Arrival = "poisson" if self.arrival == "poisson" else "constant"
        return arrival_offsets(self.rate, arrival, n=self.runs, seed=self.seed)

    @property
    def context_label(self) -> str:
        """``1024`` or ``1024-cached``."""
        return f"{self.context}{CACHED_SUFFIX if self.cached else ''}"

    @property
    def prefix(self) -> str:
        """``model|host|context|concurrency``: the key without the run."""
        return f"{self.model}|{self.host}|{self.context_label}|{self.load_label}"

    def key(self, run: int) -> str:
        """The request key ``model|host|context|concurrency|run``."""
        return f"{self.prefix}|{run}"

    def to_json(self) -> dict[str, Any]:
        """The point as planned in ``bundle.json``."""
        return {**asdict(self), "context": self.context_label}


def runs_at(runs: int, concurrency: int) -> int:
    """Requests of a point: ``runs``, at least one per stream in flight."""
    return max(runs, concurrency)


@dataclass(frozen=True)
class OpenLoop:
    """How open-loop points are sent: the arrival process, how many requests per point
    (``requests``, or every one due within ``duration_s`` s), the in-flight cap and the
    Poisson seed."""

    arrival: str = "constant"
    duration_s: float | None = 30.0
    requests: int | None = None
    max_in_flight: int = MAX_IN_FLIGHT
    seed: int = 0

    def point(self, model: str, host: str, context: int, rate: float) -> Point:
        """The open-loop point of ``rate`` (requests/s); its ``runs`` is the schedule's length."""
        arrival: Arrival = "poisson" if self.arrival == "poisson" else "constant"
        n = len(
            arrival_offsets(
                rate,
                arrival,
                n=self.requests,
                duration_s=None if self.requests is not None else self.duration_s,
                seed=self.seed,
            )
        )
        return Point(
            model,
            host,
            context,
            0,
            n,
            rate=rate,
            arrival=arrival,
            seed=self.seed,
            max_in_flight=self.max_in_flight,
        )


@dataclass(frozen=True)
class ModelPoints:
    """One model on one host and its points in run order."""

    label: str
    spec: ModelSpec
    host: str
    points: tuple[Point, ...]


def plan_points(
    config: FleetConfig,
    contexts: list[int],
    concurrency: list[int],
    runs: int,
    models: list[str] | None = None,
    rates: list[float] | None = None,
    open_loop: OpenLoop | None = None,
    sweep: bool = False,
) -> dict[str, list[ModelPoints]]:
    """Per host (first-use order), its models in config order, each with its points: per
    context the cached variant (concurrency 1) then every concurrency; with ``rates`` per
    context one open-loop point per rate (``open_loop``) instead; with ``sweep`` none (the
    sweep plans its own, :class:`~.capacity.SweepSearch`). Raises UsageError for a
    ``models`` name the config does not have."""
    labels = {config.model_label(m): m for m in config.models}
    for name in models or []:
        if name not in labels and not any(m.id == name for m in labels.values()):
            raise UsageError(f"--models: unknown model {name!r}; the config has {list(labels)}")
    plans: dict[str, list[ModelPoints]] = {}
    for label, spec in labels.items():
        if models and label not in models and spec.id not in models:
            continue
        host = spec.host_name
        points: list[Point] = []
        for ctx in [] if sweep else contexts:
            if rates:
                loop = open_loop or OpenLoop()
                points.extend(loop.point(label, host, ctx, r) for r in rates)
                continue
            points.append(Point(label, host, ctx, 1, runs, cached=True))
            points.extend(Point(label, host, ctx, c, runs_at(runs, c)) for c in concurrency)
        plans.setdefault(host, []).append(ModelPoints(label, spec, host, tuple(points)))
    return plans
