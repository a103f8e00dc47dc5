"""Per-point figures of a perf bundle (``summary.json``, SPEC §7b).

Over the requests of one point: p50/p95/p99 (linear interpolation) of TTFT, TPOT, ITL (each
request's ``itl_p50_s``) and E2E; CV % of TTFT (population stdev / mean × 100); median
prefill and decode tok/s per request; total tok/s = Σ completion tokens of ok requests /
the point's wall time (first send to last end, s); goodput = requests meeting every SLO / the
wall time (req/s); the share meeting the SLO over the requests that count for it
(:func:`counts_for_slo`: a failed one counts, as a miss; one measured while the host was
contended or throttled does not);
the send lateness p50/p99/max (s); n excluded by reason (:mod:`touchstone_ray.scoring.aggregates`:
prompt-side figures leave out every reason, decode-side ones keep prompt-cached requests).

An open-loop point (``--rate``) adds (:func:`open_loop_summary`): the offered rate; the
achieved rate = (n sent − 1) / (last ``sent_at`` − first ``sent_at``) (requests/s: the rate
requests really went out at, GuideLLM's and AIPerf's "request rate"; the n − 1 gaps between
n sends) and its error vs the offered one (%); in-flight at each send p50/max (requests);
``dropped`` (requests); ``saturated`` and its reason.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from touchstone_ray.descriptive import median, percentile
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.scoring.aggregates import counts_for_decode, counts_for_prompt, speed_exclusions


def _pctls(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    return {f"p{q}": percentile(values, q) for q in (50, 95, 99)}


def meets_slo(r: PerfResponse, slo: dict[str, float]) -> bool:
    """Whether ``r`` succeeded and met every target of ``slo`` (``ttft``, ``tpot``; s). A
    request without a TPOT (one token) meets a TPOT target only when it has no tokens to
    pace, which it cannot: it fails it."""
    if not r.ok:
        return False
    if "ttft" in slo and (r.ttft_s is None or r.ttft_s > slo["ttft"]):
        return False
    return not ("tpot" in slo and (r.tpot_s is None or r.tpot_s > slo["tpot"]))


SLO_LEFT_OUT = frozenset({"cold_start", "contended", "throttled"})
"""Exclusion reasons (:func:`~touchstone_ray.scoring.speed_exclusions`) that leave a request
out of the SLO share: its time says how busy the machine was, not how the server keeps up at
this concurrency. A failed request stays in (as a miss), a prompt-cached one too (the cached
variant's requests are all cached)."""


def counts_for_slo(r: PerfResponse) -> bool:
    """Whether ``r`` counts for the SLO share (no reason of :data:`SLO_LEFT_OUT`)."""
    return not SLO_LEFT_OUT.intersection(speed_exclusions(r))


def slo_share(records: Sequence[PerfResponse], slo: dict[str, float]) -> float | None:
    """Share (0..1) of the ``records`` that count (:func:`counts_for_slo`) meeting ``slo``;
    ``None`` when none counts."""
    counted = [r for r in records if counts_for_slo(r)]
    return sum(meets_slo(r, slo) for r in counted) / len(counted) if counted else None


def point_summary(records: Sequence[PerfResponse], slo: dict[str, float]) -> dict[str, Any]:
    """The figures of one point (module docstring) from its requests."""
    prompt_side = [r for r in records if counts_for_prompt(r)]
    decode_side = [r for r in records if counts_for_decode(r)]
    ttft = [r.ttft_s for r in prompt_side if r.ttft_s is not None]
    starts = [r.sent_at for r in records if r.sent_at is not None]
    ends = [r.t_end for r in records if r.t_end is not None]
    wall = max(ends) - min(starts) if starts and ends and max(ends) > min(starts) else None
    ok = [r for r in records if r.ok]
    tokens = sum(r.completion_tokens or 0 for r in ok)
    meeting = sum(meets_slo(r, slo) for r in records)
    excluded = Counter(reason for r in records for reason in speed_exclusions(r))
    lateness = [r.send_lateness_s for r in records if r.send_lateness_s is not None]
    first = records[0] if records else None
    return {
        "n": len(records),
        "n_ok": len(ok),
        "n_excluded": dict(sorted(excluded.items())),
        "ttft_s": _pctls(ttft),
        "tpot_s": _pctls([r.tpot_s for r in decode_side if r.tpot_s is not None]),
        "itl_s": _pctls([r.itl_p50_s for r in decode_side if r.itl_p50_s is not None]),
        "e2e_s": _pctls([r.e2e_s for r in prompt_side if r.e2e_s is not None]),
        "ttft_cv_pct": (
            statistics.pstdev(ttft) / statistics.mean(ttft) * 100
            if len(ttft) > 1 and statistics.mean(ttft) > 0
            else None
        ),
        "prefill_tps_median": median(r.prefill_tps for r in prompt_side),
        "decode_tps_median": median(r.decode_tps for r in decode_side),
        "total_tps": tokens / wall if wall else None,
        "wall_s": wall,
        "goodput_rps": meeting / wall if wall and slo else None,
        "slo_share": slo_share(records, slo) if slo else None,
        "prompt_tokens_median": median(
            r.prompt_tokens for r in ok if r.token_count_source == "server"
        ),
        "prompt_tokens_counted": first.prompt_tokens_counted if first else None,
        "completion_tokens_median": median(r.completion_tokens for r in ok),
        "output_forced": first.output_forced if first else None,
        "n_cached": sum(1 for r in records if r.prompt_cached),
        "send_lateness_s": {
            "p50": percentile(lateness, 50),
            "p99": percentile(lateness, 99),
            "max": max(lateness) if lateness else None,
        },
    }


def achieved_rate(sent_at: Sequence[float]) -> float | None:
    """Requests/s at which requests went out: ``(n − 1) / (last − first)`` over the send
    times (epoch s; the n − 1 gaps between n sends); ``None`` under two sends."""
    if len(sent_at) < 2 or max(sent_at) <= min(sent_at):
        return None
    return (len(sent_at) - 1) / (max(sent_at) - min(sent_at))


def open_loop_summary(records: Sequence[PerfResponse]) -> dict[str, Any]:
    """The open-loop figures of one ``--rate`` point (module docstring); ``{}`` for a
    closed-loop point."""
    first = records[0] if records else None
    if first is None or first.offered_rate is None:
        return {}
    offered = first.offered_rate
    achieved = achieved_rate([r.sent_at for r in records if r.sent_at is not None])
    in_flight = [float(r.in_flight_at_send) for r in records if r.in_flight_at_send is not None]
    return {
        "offered_rate": offered,
        "arrival": first.arrival,
        "achieved_rate": achieved,
        "achieved_rate_error_pct": (
            (achieved - offered) / offered * 100 if achieved is not None else None
        ),
        "in_flight": {
            "p50": percentile(in_flight, 50),
            "max": max(in_flight) if in_flight else None,
        },
        "dropped": sum(1 for r in records if r.dropped),
        "saturated": any(r.saturated for r in records),
        "saturation_reason": next((r.saturation_reason for r in records if r.saturated), None),
    }


def point_figures(records: Sequence[PerfResponse], slo: dict[str, float]) -> dict[str, Any]:
    """Every figure of one point: :func:`point_summary` and :func:`open_loop_summary`."""
    return {**point_summary(records, slo), **open_loop_summary(records)}


def summarize(
    records: Iterable[PerfResponse],
    slo: dict[str, float],
    capacity: dict[str, Any] | None = None,
    sweep: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``summary.json``: ``{slo, points: [{model, host, context, concurrency, ...figures}],
    capacity: {"model|host": {...}}}`` (and ``sweep: {"model|host": {...}}`` after
    ``--sweep``); points in first-seen order, an open-loop point with concurrency 0 and its
    :func:`open_loop_summary` figures."""
    by_point: dict[tuple[str, str, str, int, float | None], list[PerfResponse]] = {}
    for r in records:
        point = (r.model, r.host, r.context, r.concurrency, r.offered_rate)
        by_point.setdefault(point, []).append(r)
    points = [
        {
            "model": model,
            "host": host,
            "context": context,
            "context_target_tokens": rs[0].context_target_tokens,
            "cached": context.endswith("-cached"),
            "concurrency": conc,
            **point_figures(rs, slo),
        }
        for (model, host, context, conc, _rate), rs in by_point.items()
    ]
    out: dict[str, Any] = {"slo": slo, "points": points, "capacity": capacity or {}}
    if sweep:
        out["sweep"] = sweep
    return out
