"""Server faults from the simulator, through ``eval`` records: each fault ends with the right
``error_kind`` after the right number of attempts, and every record's ``attempt`` equals the
requests the simulator saw for that cell.

One simulator serves every fault as a per-model override, on both protocols (OpenAI SSE and
Ollama NDJSON); one eval runs all of them at once (``max_attempts: 3``, no warm-up, so the
counters see only cell requests). The model-loading fault uses ``load_s`` = 3 s instead of a
real model's 30 s: the same code path (HTTP 503 "model is loading", retried within
``load_timeout_s`` and not counted against ``max_attempts``), a tenth of the wait.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_helpers import run, shard_lines, sim_stats, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.sim import SimConfig, SimModelKnobs, SimServer
from touchstone_ray.sim._text import request_key

pytestmark = pytest.mark.slow

MAX_ATTEMPTS = 3
LOAD_S = 3.0
STALL_TIMEOUT_S = 1.0

FAULTS: dict[str, dict[str, Any]] = {
    "burst": {"fail_first_n": 2},  # a 5xx burst shorter than the retry budget
    "burst-long": {"fail_first_n": 4},  # longer: one cell exhausts it, the next recovers
    "down": {"fail_rate": 1.0},  # 5xx on every request
    "loading": {"load_s": LOAD_S},  # 503 "model is loading" until loaded
    "stall": {"stall_rate": 1.0},  # the stream stops and hangs past the deadline
    "cut": {"disconnect_rate": 1.0},  # the connection is cut mid-stream
    "errev": {"error_event_rate": 1.0},  # an error object inside a 200 stream
    "garbage": {"garbage_rate": 1.0},  # a non-JSON line inside the stream
}

# (ok, error_kind, attempt) of the two cells of each fault, sorted
EXPECTED: dict[str, list[tuple[bool, str | None, int]]] = {
    "burst": [(True, None, 1), (True, None, 3)],
    "burst-long": [(False, "http_5xx", 3), (True, None, 2)],
    "down": [(False, "http_5xx", 3)] * 2,
    "stall": [(False, "timeout", 3)] * 2,
    "cut": [(False, "protocol", 3)] * 2,
    "errev": [(False, "protocol", 1)] * 2,
    "garbage": [(False, "protocol", 1)] * 2,
}


def _model(api: str, fault: str) -> str:
    return f"{api}-{fault}"


@pytest.fixture(scope="module")
def faulted(rc: RayCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("faults")
    pack_data = tiny_pack(2, pack_id="faults")  # A1, E1
    pack = write_yaml(tmp / "pack.yaml", pack_data)
    overrides = {
        _model(api, fault): SimModelKnobs(**knobs)
        for api in ("openai", "ollama")
        for fault, knobs in FAULTS.items()
    }
    config = SimConfig(ttft_ms=20, tps=400, answer_tokens=12, model_overrides=overrides)
    with SimServer(config) as sim:
        assert sim.url is not None
        models = []
        for api in ("openai", "ollama"):
            for fault in FAULTS:
                models.append(
                    {
                        "id": _model(api, fault),
                        "engine": api,
                        "base_url": f"{sim.url}/v1" if api == "openai" else sim.url,
                        "concurrency": 2 if fault == "stall" else 1,
                        "timeout_s": STALL_TIMEOUT_S if fault == "stall" else 30,
                    }
                )
        fleet = write_yaml(
            tmp / "fleet.yaml",
            {
                "ray": {"include_dashboard": False},
                "models": models,
                "scheduling": {
                    "max_attempts": MAX_ATTEMPTS,
                    "warmup": False,
                    "models_per_host": len(models),
                },
                "monitor": {"interval_s": 0.5, "gpu": "off"},
            },
        )
        outcome, printed = run(pack, fleet, out=tmp / "runs", variants=["baseline"])
        stats = sim_stats(sim.url)
    assert outcome.bundle is not None, printed
    messages = {
        p["id"]: [
            {"role": "system", "content": pack_data["prompt_variants"][0]["system_prompt"]},
            {"role": "user", "content": p["prompt"]},
        ]
        for c in pack_data["categories"]
        for p in c["prompts"]
    }
    return {
        "outcome": outcome,
        "printed": printed,
        "records": shard_lines(outcome.bundle),
        "stats": stats,
        "messages": messages,
    }


@pytest.mark.parametrize("api", ["openai", "ollama"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_ends_with_the_right_kind_after_the_right_attempts(
    faulted: dict[str, Any], api: str, fault: str
) -> None:
    model = _model(api, fault)
    records = [r for r in faulted["records"] if r["model"] == model]
    assert len(records) == 2, records
    by_key = faulted["stats"]["requests_by_key"]
    for r in records:
        # the attempt field counts exactly the requests the server saw for this cell
        assert r["attempt"] == by_key[request_key(model, faulted["messages"][r["prompt_id"]])], r
        assert (r["error"] is None) == r["ok"], r
    got = sorted((r["ok"], r["error_kind"], r["attempt"]) for r in records)
    if fault == "loading":
        # the cell that met the loading model retried past max_attempts (503 while loading
        # does not count against it) and succeeded once loaded; the next one at once
        (ok1, kind1, first), (ok2, kind2, later) = sorted(got, key=lambda g: g[2])
        assert ok1 and ok2 and kind1 is None and kind2 is None
        assert first == 1 and later > MAX_ATTEMPTS, got
    else:
        assert got == sorted(EXPECTED[fault]), got
    if fault == "stall":
        for r in records:  # each attempt ended at its own deadline, not later
            assert r["t_end"] - r["t_start"] < STALL_TIMEOUT_S + 2.0, r


def test_the_run_fails_with_a_summary_by_kind(faulted: dict[str, Any]) -> None:
    failed = [r for r in faulted["records"] if not r["ok"]]
    kinds: dict[str, int] = {}
    for r in failed:
        kinds[r["error_kind"]] = kinds.get(r["error_kind"], 0) + 1
    outcome = faulted["outcome"]
    assert outcome.exit_code == 1
    assert outcome.failures_by_kind == kinds
    summary = faulted["printed"].splitlines()[-2]
    listed = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    assert summary.startswith(f"eval failed: {outcome.n_ok} ok, {len(failed)} failed ({listed})")
    assert faulted["printed"].splitlines()[-1] == str(outcome.bundle)
    assert isinstance(outcome.bundle, Path)
