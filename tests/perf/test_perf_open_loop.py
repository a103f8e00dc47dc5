"""``perf --rate`` and ``perf --sweep`` (open loop) against a simulated server whose ``slots``
make saturation reproducible: the schedule (constant and seeded Poisson arrivals), the
over-saturation test, a rate below capacity achieved within 2 % and never saturated, twice
capacity marked saturated before its duration ends, the sweep's sustainable rate, and one
line with exit 2 for each bad flag.

Capacity of the simulator: ``slots`` requests generate at once, each for
``ttft + (output_tokens − 1) / tps`` s (no ``batch_slowdown``), so it ends at most
``slots / service time`` requests/s; a higher offered rate grows its queue without bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats
from test_perf_sim import cli, lines

from touchstone_ray.perf.capacity import SweepSearch, sweep_rates
from touchstone_ray.perf.plan import OpenLoop
from touchstone_ray.perf.schedule import (
    SATURATION_WINDOW_S,
    SaturationWatch,
    arrival_offsets,
    saturation_test,
)

TTFT_S = 0.02
TPS = 100.0
SLOTS = 2
OUTPUT = 16
SERVICE_S = TTFT_S + (OUTPUT - 1) / TPS
CAPACITY_RPS = SLOTS / SERVICE_S  # 11.76 requests/s
BELOW = 5.0
TWICE = round(2 * CAPACITY_RPS, 1)
DURATION_S = 10.0


def fleet(tmp: Path) -> Path:
    config = {
        "ray": {"include_dashboard": False},
        "models": [
            {
                "id": "sim-q",
                "engine": "simulated",
                "sim": {
                    "ttft_ms": TTFT_S * 1000,
                    "tps": TPS,
                    "answer_tokens": 400,
                    "slots": SLOTS,
                    "batch_slowdown": 0.0,
                },
            }
        ],
        "scheduling": {"warmup": True},
        "monitor": {"interval_s": 0.5},
        "out": str(tmp / "runs"),
    }
    path = tmp / "openfleet.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


# --- the schedule --------------------------------------------------------------------------


def test_constant_arrivals_are_evenly_spaced_and_cut_at_the_duration() -> None:
    assert arrival_offsets(4.0, "constant", n=5) == [0.0, 0.25, 0.5, 0.75, 1.0]
    offsets = arrival_offsets(10.0, "constant", duration_s=2.0)
    assert len(offsets) == 20 and offsets[-1] == pytest.approx(1.9)


def test_poisson_arrivals_pass_a_ks_test_against_the_exponential_at_the_seeded_rate() -> None:
    rate = 50.0
    offsets = arrival_offsets(rate, "poisson", n=5001, seed=7)
    gaps = np.diff(offsets)
    assert stats.kstest(gaps, "expon", args=(0, 1 / rate)).pvalue > 0.05
    # and not against an exponential at a rate 10 % off
    assert stats.kstest(gaps, "expon", args=(0, 1 / (rate * 1.1))).pvalue < 0.01
    assert offsets[0] == 0.0 and bool(np.all(gaps > 0))


def test_the_same_seed_gives_the_same_schedule() -> None:
    one = arrival_offsets(20.0, "poisson", duration_s=30.0, seed=3)
    assert one == arrival_offsets(20.0, "poisson", duration_s=30.0, seed=3)
    assert one != arrival_offsets(20.0, "poisson", duration_s=30.0, seed=4)
    assert max(one) < 30.0 and len(one) == pytest.approx(600, rel=0.15)
    point = OpenLoop(arrival="poisson", duration_s=30.0, seed=3).point("m", "h", 64, 20.0)
    assert point.offsets() == one and point.runs == len(one)
    assert point.prefix == "m|h|64|r20"


@pytest.mark.parametrize(
    ("rate", "arrival", "n", "duration"),
    [(0.0, "constant", 3, None), (-1.0, "poisson", 3, None), (1.0, "burst", 3, None),
     (1.0, "constant", None, None), (1.0, "constant", 3, 1.0)],
)  # fmt: skip
def test_bad_schedules_raise(
    rate: float, arrival: Any, n: int | None, duration: float | None
) -> None:
    with pytest.raises(ValueError):
        arrival_offsets(rate, arrival, n=n, duration_s=duration)


# --- the over-saturation test --------------------------------------------------------------


def test_a_growing_queue_is_saturated_and_a_steady_one_is_not() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(0, SATURATION_WINDOW_S + 0.001, 0.05)
    growing = saturation_test(list(t), list(3 * t + rng.integers(0, 3, len(t))))
    assert growing is not None and growing.saturated and growing.ci_low_per_s > 0
    assert "95 % CI" in growing.reason
    steady = saturation_test(list(t), list(rng.integers(0, 4, len(t)).astype(float)))
    assert steady is not None and not steady.saturated
    # a slope whose interval is above zero but adds under 4 requests in the window is noise
    slow = saturation_test(list(t), list(0.5 * t))
    assert slow is not None and not slow.saturated and slow.ci_low_per_s > 0
    assert saturation_test([0.0, 1.0, 2.0], [0.0, 5.0, 10.0]) is None  # shorter than W


def test_saturated_only_when_the_queue_keeps_growing_for_a_whole_window() -> None:
    """A queue growing 5 requests/s is saturated 2 W s in (tests from W s, all growing for
    W s); a 2.5 s burst of the same growth followed by a steady queue never is."""
    grows = SaturationWatch()
    found = None
    t = 0.0
    while found is None and t < 20:
        found = grows.sample(t, int(5 * t))
        t = round(t + 0.05, 2)
    assert found is not None and "growing for" in found
    assert 2 * SATURATION_WINDOW_S <= t <= 2 * SATURATION_WINDOW_S + 0.5
    burst = SaturationWatch()
    for i in range(400):  # 20 s
        t = i * 0.05
        assert burst.sample(t, int(5 * min(t, 2.5)) + i % 2) is None, t


def test_sweep_rates_and_the_highest_sustainable_rate() -> None:
    assert sweep_rates(2.0, 10.0, 3) == [4.0, 6.0, 8.0]
    assert sweep_rates(4.0, 4.0, 3) == [1.0, 2.0, 3.0]
    search = SweepSearch(3, 4, {})
    assert search.next == ("closed", 1)
    search.record({"wall_s": 2.0, "n_ok": 8})  # 4 requests/s
    assert search.next == ("closed", 4)
    search.record({"wall_s": 1.0, "n_ok": 16})  # 16 requests/s
    assert search.next == ("rate", 7.0)
    for saturated in (False, False, True):
        search.record({"saturated": saturated, "dropped": 0})
    assert search.next is None
    assert [r["rate"] for r in search.rates] == [7.0, 10.0, 13.0]
    assert search.result is not None and search.result["rate"] == 10.0
    with_slo = SweepSearch(2, 1, {"ttft": 0.5})
    with_slo.record({"wall_s": 1.0, "n_ok": 3})
    with_slo.record({"slo_share": 0.95})
    with_slo.record({"slo_share": 0.5})
    assert with_slo.result is not None and with_slo.result["rate"] == 1.0


# --- end to end on the simulator -----------------------------------------------------------


@pytest.fixture(scope="module")
def rate_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    tmp = Path(tmp_path_factory.mktemp("openloop"))
    done = cli(
        tmp,
        "--config",
        str(fleet(tmp)),
        "--contexts",
        "64",
        "--output-tokens",
        str(OUTPUT),
        "--rate",
        f"{BELOW:g},{TWICE:g}",
        "--duration",
        f"{DURATION_S:g}",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    yield Path(done.stdout.strip().splitlines()[-1]), done.stdout


def point_of(summary: dict[str, Any], rate: float) -> dict[str, Any]:
    return next(p for p in summary["points"] if p.get("offered_rate") == rate)


def test_below_capacity_the_achieved_rate_is_the_offered_one(rate_run: tuple[Path, str]) -> None:
    bundle, _ = rate_run
    summary = json.loads((bundle / "summary.json").read_text())
    below = point_of(summary, BELOW)
    assert below["concurrency"] == 0 and below["arrival"] == "constant"
    assert below["n"] == below["n_ok"] == int(BELOW * DURATION_S)
    assert below["achieved_rate"] == pytest.approx(BELOW, rel=0.02)
    assert not below["saturated"] and below["saturation_reason"] is None
    assert below["dropped"] == 0
    assert below["in_flight"]["max"] <= SLOTS + 1


def test_twice_capacity_is_saturated_before_its_duration_ends(rate_run: tuple[Path, str]) -> None:
    bundle, _ = rate_run
    summary = json.loads((bundle / "summary.json").read_text())
    over = point_of(summary, TWICE)
    assert over["saturated"] and "in-flight grew" in over["saturation_reason"]
    planned = len(arrival_offsets(TWICE, "constant", duration_s=DURATION_S))
    assert over["n"] < planned  # it stopped sending before its schedule ended
    requests = [r for r in lines(bundle / "points" / "sim-q.jsonl") if r["offered_rate"] == TWICE]
    first = min(r["scheduled_at"] for r in requests)
    last_sent = max(r["sent_at"] for r in requests if r["sent_at"] is not None)
    assert last_sent - first < DURATION_S - 1
    assert all(r["saturated"] for r in requests)
    assert over["in_flight"]["max"] > 4 * SLOTS


def test_requests_are_sent_on_their_schedule(rate_run: tuple[Path, str]) -> None:
    """Each request's ``scheduled_at`` is the point's start plus its constant offset, and it
    went out within a loaded machine's tolerance of it (the median under 5 ms)."""
    bundle, _ = rate_run
    requests = [r for r in lines(bundle / "points" / "sim-q.jsonl") if r["offered_rate"] == BELOW]
    requests.sort(key=lambda r: r["run"])
    start = requests[0]["scheduled_at"]
    for r in requests:
        assert r["scheduled_at"] - start == pytest.approx((r["run"] - 1) / BELOW, abs=1e-6)
        assert r["key"] == f"sim-q|local|64|r{BELOW:g}|{r['run']}"
        assert r["send_lateness_s"] == pytest.approx(r["sent_at"] - r["scheduled_at"])
        assert r["send_lateness_s"] >= 0
    lateness = sorted(r["send_lateness_s"] for r in requests)
    assert lateness[len(lateness) // 2] < 0.005
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["settings"]["schedule"] == "open-loop"
    assert manifest["settings"]["open_loop"]["seed"] == 0
    from touchstone_ray.perf.report import RATES_HEAD, write_perf_report

    md, _ = write_perf_report(bundle, ["md", "html"])
    text = md.read_text(encoding="utf-8")
    assert "## Open-loop rates" in text and "| " + " | ".join(RATES_HEAD) + " |" in text
    assert "![Goodput vs offered rate](report-charts/goodput-rate.svg)" in text


@pytest.mark.slow
def test_sweep_finds_a_sustainable_rate_below_the_saturation_throughput(tmp_path: Path) -> None:
    done = cli(
        tmp_path,
        "--config",
        str(fleet(tmp_path)),
        "--contexts",
        "64",
        "--concurrency",
        "1,4",
        "--runs",
        "8",
        "--output-tokens",
        str(OUTPUT),
        "--sweep",
        "--sweep-points",
        "3",
        "--duration",
        "6",
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bundle = Path(done.stdout.strip().splitlines()[-1])
    entry = json.loads((bundle / "summary.json").read_text())["sweep"]["sim-q|local"]
    c1, sat = entry["closed_loop_rps"]["1"], entry["closed_loop_rps"]["4"]
    assert c1 == pytest.approx(1 / SERVICE_S, rel=0.25)
    assert sat == pytest.approx(CAPACITY_RPS, rel=0.25)
    assert [r["rate"] for r in entry["rates"]] == sweep_rates(c1, sat, 3)
    assert entry["sustainable_rate"] is not None and entry["sustainable_rate"] < sat
    assert entry["line"] in done.stdout.splitlines()
    from touchstone_ray.report.compare import compare_rows, render_compare

    rows, lang = compare_rows([bundle])
    text, _, _ = render_compare(rows, lang)
    assert "sustainable requests/s (perf)" in text
    assert rows[0].sustainable_rps == entry["sustainable_rate"]


def test_bad_open_loop_flags_exit_2_with_one_line(tmp_path: Path) -> None:
    config = fleet(tmp_path)
    cases = {
        ("--rate", "0"): "error: --rate: '0' is not a positive number of requests/s",
        ("--rate", "2,-1"): "error: --rate: '-1' is not a positive number of requests/s",
        ("--rate", "5", "--concurrency", "2"): "error: --rate and --concurrency are exclusive: "
        "an open-loop point has no fixed concurrency",
        ("--rate", "5", "--arrival", "burst"): "error: --arrival: unknown process 'burst'; use "
        "constant or poisson",
        ("--sweep", "--sweep-points", "1"): "error: --sweep-points: must be ≥ 2, not 1",
        ("--rate", "5", "--duration", "3", "--requests", "4"): "error: --duration and "
        "--requests are exclusive: give one per open-loop point",
        ("--rate", "5", "--max-in-flight", "0"): "error: --max-in-flight: must be ≥ 1, not 0",
    }
    for args, message in cases.items():
        done = cli(tmp_path, "--config", str(config), *args, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip().splitlines() == [message], args
    assert not (tmp_path / "runs").exists()


def test_every_open_loop_head_names_a_glossary_entry_in_both_languages() -> None:
    """The rate points' and the sweep's column heads: an identity, or a figure whose glossary
    entry (English and German, lined up by position) gives its tooltip."""
    from touchstone_ray import lang
    from touchstone_ray.perf.report import HEAD_TERMS, RATES_HEAD, SWEEP_HEAD

    identities = {"model", "host", "context", "n", "prompt tokens", "line"}
    for head in (*RATES_HEAD, *SWEEP_HEAD):
        if head in identities:
            continue
        term = HEAD_TERMS[head]
        assert lang.header_tip("en", head, HEAD_TERMS) is not None, head
        name, definition, unit = lang.glossary_entry("de", term)
        assert name and definition and unit, term
    assert lang.glossary_entry("de", "Sustainable rate")[0] == "Tragbare Rate"
    assert lang.glossary_entry("de", "Saturated")[2] == "ja/nein"
