"""The matrix: the compact set of finished cells (one bit per cell), bounded task names,
and resume's scan beside Ray's start. No Ray here; real packs and configs."""

from __future__ import annotations

import multiprocessing
import os
import threading
from functools import partial
from pathlib import Path

import pytest
from eval_helpers import tiny_pack, write_yaml

from touchstone_ray.config import FleetConfig
from touchstone_ray.eval.matrix import CellIndex, CellSet, plan_models
from touchstone_ray.eval.resume import beside
from touchstone_ray.fleet import TASK_NAMES_PER_MODEL
from touchstone_ray.pack import Pack, load_pack

_FORK = multiprocessing.get_context("fork")
_SCAN_BEGAN, _START_BEGAN = _FORK.Event(), _FORK.Event()  # inherited by the forked child


def _forked_scan() -> int:
    _SCAN_BEGAN.set()
    return os.getpid() if _START_BEGAN.wait(30) else -1


def _matrix(tmp_path: Path) -> tuple[Pack, FleetConfig]:
    data = tiny_pack(4)
    data["categories"][0]["prompts"][1]["repeats"] = 3  # A2 × 3: offsets are not all 1 apart
    pack = load_pack(write_yaml(tmp_path / "pack.yaml", data))
    config = FleetConfig.model_validate(
        {
            "hosts": {"a": {"label": "a"}, "b": {"label": "b"}},
            "models": [
                {"id": "m|1", "engine": "simulated", "host": "a"},
                {"id": "m2", "engine": "simulated", "host": "b"},
            ],
        }
    )
    return pack, config


def test_index_numbers_cells_in_run_order_and_back(tmp_path: Path) -> None:
    pack, config = _matrix(tmp_path)
    plans = plan_models(pack, config)
    index = CellIndex(pack, plans)
    keys = [c.key for ms in plans.values() for p in ms for c in p.cells(pack)]
    assert index.n_cells == len(keys) == 2 * plans["a"][0].n_cells(pack) == 2 * 2 * 6
    assert index.position("m2|" + keys[0].split("|", 2)[2].replace("A1", "A2")[:-1] + "3") == (
        12 + 3  # m2's base, then A1 × 1, A2 repeat 3
    )
    assert [index.position(k) for k in keys] == list(range(len(keys)))
    assert [index.key_at(i) for i in range(len(keys))] == keys
    assert keys[0].startswith("m|1|")  # a label with "|" still parses from the right
    # not cells of this matrix: another model, a repeat too many, a non-canonical repeat
    first = keys[0].rsplit("|", 1)[0]
    assert index.position("gone|" + keys[0].split("|", 2)[2]) is None
    assert index.position(first + "|99") is None
    assert index.position(first + "|01") is None
    assert index.position(first + "|0") is None
    assert index.position("no bars") is None


def test_cell_set_is_a_set_of_keys_in_n_over_8_bytes(tmp_path: Path) -> None:
    pack, config = _matrix(tmp_path)
    plans = plan_models(pack, config)
    index = CellIndex(pack, plans)
    keys = [c.key for ms in plans.values() for p in ms for c in p.cells(pack)]
    done = CellSet(index, [keys[3], keys[0], keys[3], "other|v|X|1"])
    assert len(done) == 3 and done == {keys[0], keys[3], "other|v|X|1"}
    assert list(done) == [keys[0], keys[3], "other|v|X|1"]  # run order, then the others
    assert keys[3] in done and keys[1] not in done and 5 not in done
    done.discard(keys[3])
    done.discard(keys[3])
    done.discard("other|v|X|1")
    assert set(done) == {keys[0]} and len(done) == 1
    assert len(done._bits) == (index.n_cells + 7) // 8
    # a plan skips by position and leaves out exactly the keys in the set
    done.add(keys[-1])
    left = [c.key for ms in plans.values() for p in ms for c in p.cells(pack, done)]
    assert left == keys[1:-1]


def test_task_names_name_the_prompt_while_they_stay_few(tmp_path: Path) -> None:
    pack, config = _matrix(tmp_path)
    plan = plan_models(pack, config)["b"][0]
    names = {c.task_name for c in plan.cells(pack)}
    assert len(names) == 2 * 4 and "eval:m2:baseline:A2" in names  # 2 variants × 4 prompts
    data = tiny_pack(TASK_NAMES_PER_MODEL // 2 + 1)  # 2 × 129 = 258 names: too many
    big = load_pack(write_yaml(tmp_path / "big.yaml", data))
    plan = plan_models(big, config)["b"][0]
    assert {c.task_name for c in plan.cells(big)} == {"eval:m2:baseline", "eval:m2:none"}


def test_beside_runs_both_steps_at_once() -> None:
    """Each step waits until the other has begun: run one after the other, neither could
    finish (the waits would time out and the assertions below fail)."""
    scan_began, start_began = threading.Event(), threading.Event()

    def scan() -> str:
        scan_began.set()
        return "scanned" if start_began.wait(30) else "alone"

    def start() -> str:
        start_began.set()
        return "started" if scan_began.wait(30) else "alone"

    both = beside(scan, start, fork=False)
    assert (both.background, both.foreground) == ("scanned", "started")
    assert both.background_start <= both.foreground_end
    assert both.foreground_start <= both.background_end
    times = both.timings("scan", "ray_start")
    assert sorted(times) == [
        "ray_start_end",
        "ray_start_s",
        "ray_start_start",
        "scan_end",
        "scan_s",
        "scan_start",
    ]


def test_beside_forks_the_scan_beside_the_start() -> None:
    """As above across processes: the child waits for the start, the start for the child."""

    def start() -> bool:
        _START_BEGAN.set()
        return _SCAN_BEGAN.wait(30)

    both = beside(_forked_scan, start, fork=True)
    assert both.foreground is True
    assert both.background not in (-1, os.getpid())  # ran, in another process


def test_beside_raises_a_forked_scans_error() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-shard"):
        beside(partial(os.stat, "/no-such-shard"), lambda: None, fork=True)


def test_beside_raises_the_scans_error_after_the_start() -> None:
    started: list[str] = []

    def scan() -> str:
        raise OSError(30, "Read-only file system")

    with pytest.raises(OSError, match="Read-only file system"):
        beside(scan, lambda: started.append("ray"), fork=False)
    assert started == ["ray"]


def test_beside_raises_the_starts_error_once_the_scan_is_done() -> None:
    finished = threading.Event()

    def scan() -> None:
        finished.wait(0.2)
        finished.set()

    def start() -> None:
        raise ConnectionError("no cluster at 10.0.0.9:6379")

    with pytest.raises(ConnectionError, match="no cluster"):
        beside(scan, start, fork=False)
    assert finished.is_set()  # joined before the error left
