"""The arithmetic of a perf point's schedule (closed loop vs lockstep rounds, send lateness),
the garbage-collector pause around a point, and the per-request server timeline the perf
comparison bench reads from llama-server's log (lines in the format this build writes, copied
from a run, with times chosen so that the overlaps are exact)."""

# ruff: noqa: E501  (log lines are as long as the server writes them)

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from touchstone_ray.perf.schedule import collector_paused, lockstep_rounds, send_lateness_s

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _server_timeline import (
    Task,
    by_context,
    decode_stall_s,
    log_seconds,
    parse_tasks,
    timeline_summary,
)


def test_lockstep_rounds_exact() -> None:
    assert lockstep_rounds(1, 8, 2) == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert lockstep_rounds(1, 8, 3) == [[1, 2, 3], [4, 5, 6], [7, 8]]
    assert lockstep_rounds(4, 8, 2) == [[4, 5], [6, 7], [8]]  # a resumed point
    assert lockstep_rounds(1, 1, 4) == [[1]]
    assert lockstep_rounds(9, 8, 2) == []


@pytest.mark.parametrize(
    ("first", "c", "message"),
    [(1, 0, "concurrency must be ≥ 1, not 0"), (0, 2, "runs count from 1, not 0")],
)
def test_lockstep_rounds_refuses_bad_input(first: int, c: int, message: str) -> None:
    with pytest.raises(ValueError) as err:
        lockstep_rounds(first, 8, c)
    assert str(err.value) == message


def test_send_lateness_is_sent_minus_scheduled() -> None:
    assert send_lateness_s(1000.25, 1000.25) == 0.0
    assert send_lateness_s(1000.0, 1000.0625) == 0.0625  # exact in binary
    assert send_lateness_s(1000.0, None) is None


def test_collector_paused_restores_state_and_freezes() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # was off before: stays off
    finally:
        gc.enable()


# llama-server b0-unknown, --parallel 2, two 512-token prompts sent together (tasks 40, 41),
# then one alone (task 60) whose prefill overlaps task 41's decode.
LOG = """\
0.12.780.357 I slot launch_slot_: id  1 | task 40 | processing task, is_child = 0
0.12.781.002 I slot launch_slot_: id  0 | task 41 | processing task, is_child = 0
0.15.100.000 I slot print_timing: id  1 | task 40 | prompt processing, n_tokens =    508, progress = 0.99, t =   2.32 s / 219.00 tokens per second
0.17.980.357 I slot print_timing: id  1 | task 40 | prompt eval time =    5200.00 ms /   512 tokens (   10.16 ms per token,    98.46 tokens per second)
0.17.980.360 I slot print_timing: id  1 | task 40 |        eval time =     750.00 ms /    16 tokens (   46.88 ms per token,    21.33 tokens per second)
0.17.980.362 I slot print_timing: id  1 | task 40 |       total time =    5950.00 ms /   528 tokens
0.18.730.357 I slot      release: id  1 | task 40 | stop processing: n_tokens = 527, truncated = 0
0.18.740.357 I slot launch_slot_: id  1 | task 60 | processing task, is_child = 0
0.19.981.002 I slot print_timing: id  0 | task 41 | prompt eval time =    5230.00 ms /   512 tokens (   10.25 ms per token,    97.52 tokens per second)
0.19.981.004 I slot print_timing: id  0 | task 41 |        eval time =    3000.00 ms /    16 tokens (  187.50 ms per token,     5.33 tokens per second)
0.21.031.002 I slot      release: id  0 | task 41 | stop processing: n_tokens = 527, truncated = 0
1.01.500.000 I slot launch_slot_: id  0 | task 77 | processing task, is_child = 0
"""


def test_log_seconds() -> None:
    assert log_seconds("0.12.780.357") == 12.780357
    assert log_seconds("6.57.621.445") == pytest.approx(417.621445)
    assert log_seconds("1.02.03.004.005") == pytest.approx(3723.004005)  # past an hour


def test_parse_tasks_and_decode_stall() -> None:
    tasks = parse_tasks(LOG)
    # task 60 never ends in this slice and task 77 only starts: both left out
    assert [t.task for t in tasks] == [40, 41]
    t40, t41 = tasks
    assert t40 == Task(40, 12.780357, 5200.0, 512, 750.0, 16, 18.730357)
    assert t40.first_token_s == pytest.approx(17.980357)
    # 40 decodes from 17.980357; 41's prefill (its last batch shared with 40's decode) ends
    # at 18.011002
    assert decode_stall_s(t40, tasks) == pytest.approx(0.030645)
    other = Task(60, 18.740357, 1000.0, 512, 500.0, 16, 20.240357)
    # 41 decodes 18.011002 .. 21.031002; 60 prefills 18.740357 .. 19.740357: 1.0 s stalled
    assert decode_stall_s(t41, [*tasks, other]) == pytest.approx(1.0)


def test_timeline_summary() -> None:
    tasks = parse_tasks(LOG)
    other = Task(60, 18.740357, 1000.0, 512, 500.0, 16, 20.240357)
    got = timeline_summary([*tasks, other], min_prompt_n=496)
    assert got == {
        "n": 3,
        "server_prompt_ms_median": 5200.0,
        "server_decode_ms_per_token_median": 46.88,
        # 40: 0.031 s, under its 46.875 ms step; 41: 1.0 s, over its 187.5 ms step; 60: 0
        "stalled_share": round(1 / 3, 3),
        "decode_stall_s_median": 0.031,
        "launch_gap_s_median": 0.001,
    }
    assert timeline_summary(tasks, min_prompt_n=600) == {"n": 0}


def test_by_context_splits_alone_from_shared() -> None:
    t40, t41 = parse_tasks(LOG)
    alone = Task(90, 30.0, 700.0, 130, 500.0, 16, 31.2)
    cached = Task(91, 32.0, 20.0, 5, 500.0, 16, 32.6)  # a cached re-prompt: left out
    got = by_context([t40, t41, alone, cached], [128, 512])
    assert got == {(512, "shared"): [t40, t41], (128, "alone"): [alone]}
