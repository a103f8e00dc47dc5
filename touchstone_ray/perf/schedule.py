"""When a perf point's requests are due, and how late each one went out.

Two ways to keep ``concurrency`` requests in flight:

* **closed loop** (the default, as GuideLLM's ``concurrent`` profile): ``concurrency`` streams,
  each sends its next request the moment its previous one ended. A request is *scheduled* at
  that moment; each stream's first request is its discarded warm-up, so every measured one
  has a predecessor.
* **lockstep** (``--lockstep``, as llama-benchy's ``--concurrency``): rounds of
  ``concurrency`` requests sent together; a round starts when every request of the round
  before has ended (the first after a discarded warm-up round), and all of its requests are
  scheduled at that moment, so a round's last send includes the time the others' took.

Send lateness (SPEC §7b ``send_lateness_s``) = ``sent_at`` − ``scheduled_at``, s: the load
generator's own delay between "due" and "the request headers were written" (building the
body, taking a connection, the event loop getting to it). A late generator sends fewer
requests than the point claims and its TTFT starts later than the user's would, as GuideLLM
(``request_dispatch_delay``) and AIPerf track it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def send_lateness_s(scheduled_at: float, sent_at: float | None) -> float | None:
    """``sent_at − scheduled_at`` (s, both ``time.time()``); ``None`` when the request was
    never sent (``sent_at`` unknown)."""
    return None if sent_at is None else sent_at - scheduled_at


def lockstep_rounds(first_run: int, last_run: int, concurrency: int) -> list[list[int]]:
    """The runs ``first_run .. last_run`` (inclusive, counted from 1) in rounds of
    ``concurrency``, the last round possibly shorter: ``(1, 8, 3)`` →
    ``[[1, 2, 3], [4, 5, 6], [7, 8]]``; empty when ``first_run > last_run``. Raises
    ValueError for ``concurrency < 1`` or ``first_run < 1``."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, not {concurrency}")
    if first_run < 1:
        raise ValueError(f"runs count from 1, not {first_run}")
    runs = list(range(first_run, last_run + 1))
    return [runs[i : i + concurrency] for i in range(0, len(runs), concurrency)]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then a collection.

    A full collection in a client actor (a Ray worker holds a large heap) stops its event loop
    for tens of ms, and any request due then is sent that much late; a point's measured
    requests run without it, as ``timeit`` does. The objects that already exist are frozen
    first (``gc.freeze``), so the collection afterwards only walks what the point made. The
    collector's previous on/off state is restored."""
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        gc.collect()
