"""The eval run's last line speaks the pack's language (issue 31, item 5)."""

from __future__ import annotations

from pathlib import Path

from touchstone_ray.eval.run import EvalOutcome, end_line


def test_the_end_line_in_english_and_german() -> None:
    done = EvalOutcome(bundle=Path("b"), n_ok=4, n_reused=2)
    assert end_line(done, 1.234, "en") == "eval done: 4 ok, 0 failed, 2 reused in 1.2 s"
    assert end_line(done, 1.234, "de") == (
        "eval fertig: 4 ok, 0 fehlgeschlagen, 2 wiederverwendet in 1.2 s"
    )
    failed = EvalOutcome(
        bundle=Path("b"),
        n_ok=3,
        n_failed=2,
        failures_by_kind={"timeout": 1, "http_5xx": 1},
        hosts_stopped={"gpu-b": "engine unreachable"},
    )
    assert end_line(failed, 10.0, "en") == (
        "eval failed: 3 ok, 2 failed (http_5xx 1, timeout 1), 0 reused in 10.0 s; gpu-b stopped "
        "before its cells: engine unreachable"
    )
    assert end_line(failed, 10.0, "de") == (
        "eval fehlgeschlagen: 3 ok, 2 fehlgeschlagen (http_5xx 1, timeout 1), 0 wiederverwendet "
        "in 10.0 s; gpu-b vor seinen Zellen angehalten: engine unreachable"
    )
