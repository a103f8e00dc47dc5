"""One request of a perf point: a line of ``points/<model>.jsonl`` (SPEC §7b).

The §7 :class:`~touchstone_ray.records.EvalResponse` fields (timing, server truth and, after
finalize, resources) plus the point and the load generator's own clock. Identity fields that
belong to packs are fixed: ``pack_id`` ``perf``, ``variant`` and ``category`` ``perf``,
``prompt_id`` ``<context>|<concurrency>``, ``repeat`` = ``run``.
"""

from __future__ import annotations

from touchstone_ray.records import EvalResponse


class PerfResponse(EvalResponse):
    """A request of a perf point; ``key`` is ``model|host|context|concurrency|run``."""

    context: str
    """Target prompt length (tokens), ``<tokens>-cached`` for the cached variant."""
    context_target_tokens: int
    """Target prompt length (tokens)."""
    concurrency: int
    """Requests in flight during the point (closed loop, or rounds with ``--lockstep``); 0 for
    an open-loop point (``offered_rate``)."""
    run: int
    """Request number within the point, from 1 (the warm-up is not recorded)."""
    prompt_tokens_counted: int | None = None
    """Prompt tokens as counted before sending (``prompt_count_source``)."""
    prompt_count_source: str | None = None
    """``server`` (the server's tokenizer) or ``estimated``."""
    output_tokens_target: int | None = None
    """``--output-tokens`` (tokens; sent as ``max_tokens``)."""
    output_forced: bool = False
    """The body asked the server to ignore end-of-sequence (llama.cpp, vLLM), so
    ``completion_tokens`` should equal the target; otherwise the model may stop earlier."""
    scheduled_at: float | None = None
    """Epoch s when the load generator meant to send: closed loop, when its stream got free
    (its previous request, or its discarded warm-up, ended); ``--lockstep``, when the round
    started (every request of the round before had ended) (:mod:`.schedule`)."""
    sent_at: float | None = None
    """Epoch s when the HTTP request was sent (``t_start``)."""
    send_lateness_s: float | None = None
    """``sent_at − scheduled_at`` (s): the load generator's own delay."""
    offered_rate: float | None = None
    """Open-loop point (``--rate``): the rate requests were due at (requests/s); ``None`` in a
    closed-loop point. ``scheduled_at`` is then the point's start plus the request's offset
    in the arrival schedule (:func:`~touchstone_ray.perf.schedule.arrival_offsets`)."""
    arrival: str | None = None
    """Open loop: ``constant`` or ``poisson``."""
    dropped: bool = False
    """Open loop: the request was due while ``max_in_flight`` were out, so it was not sent
    (``ok`` false, ``sent_at`` ``None``), never sent late."""
    in_flight_at_send: int | None = None
    """Open loop: requests out (this one included) the moment it was sent."""
    saturated: bool = False
    """Open loop: the point stopped early because the server fell behind for good
    (:func:`~touchstone_ray.perf.schedule.saturation_test`) or dropped a request; the same on
    every request of the point."""
    saturation_reason: str | None = None
    """Why the point was marked ``saturated`` (one line)."""
