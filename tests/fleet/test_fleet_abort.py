"""The one finalize-on-abort path (:func:`touchstone_ray.fleet.abort_guard`): what each way of
ending early runs, says and raises. Real signals to this process, real exceptions; no Ray."""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from touchstone_ray.errors import BundleWriteError, RunError
from touchstone_ray.fleet import abort_guard
from touchstone_ray.fleet.abort import Terminated, abort_reason

RESUME = "resume with --resume /runs/b"


def recorder() -> tuple[list[str], list[Callable[[str], object]]]:
    """Three steps that append ``<step>:<reason>`` to the returned list."""
    seen: list[str] = []
    steps: list[Callable[[str], object]] = [
        lambda reason, name=name: seen.append(f"{name}:{reason}")  # type: ignore[misc]
        for name in ("stop", "event", "finalize")
    ]
    return seen, steps


def test_ctrl_c_runs_every_step_then_says_how_to_resume(tmp_path: Path) -> None:
    seen, steps = recorder()
    with pytest.raises(RunError) as caught, abort_guard(tmp_path, "run", steps, RESUME):
        raise KeyboardInterrupt
    assert str(caught.value) == "interrupted; resume with --resume /runs/b"
    assert caught.value.exit_code == 1
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert seen == ["stop:interrupted", "event:interrupted", "finalize:interrupted"]


def test_sigterm_runs_every_step_and_exits_15(tmp_path: Path) -> None:
    seen, steps = recorder()
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as caught, abort_guard(tmp_path, "run", steps, RESUME):
        assert signal.getsignal(signal.SIGTERM) is not before  # the guard's own handler
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises inside the sleep
        raise AssertionError("SIGTERM did not end the block")
    assert isinstance(caught.value, Terminated)
    assert caught.value.code == 15
    assert seen == [f"{s}:terminated (SIGTERM)" for s in ("stop", "event", "finalize")]
    assert signal.getsignal(signal.SIGTERM) is before  # set back


def test_a_disk_error_becomes_the_one_write_failed_line(tmp_path: Path) -> None:
    seen, steps = recorder()
    with pytest.raises(BundleWriteError) as caught, abort_guard(tmp_path, "judge", steps, RESUME):
        raise OSError(errno.EROFS, "Read-only file system")
    assert str(caught.value) == (
        f"{tmp_path}: cannot write the bundle (Read-only file system); judge aborted, every "
        "record written before is intact"
    )
    assert isinstance(caught.value.__cause__, OSError)
    assert seen == [f"{s}:[Errno 30] Read-only file system" for s in ("stop", "event", "finalize")]


def test_a_failing_step_skips_no_other_and_the_first_error_goes_on(tmp_path: Path) -> None:
    seen: list[str] = []

    def broken(reason: str) -> None:
        seen.append("broken")
        raise OSError(errno.EROFS, "Read-only file system")

    steps = [broken, lambda reason: seen.append(f"after:{reason}")]
    with pytest.raises(ConnectionError) as caught, abort_guard(tmp_path, "run", steps, RESUME):
        raise ConnectionError("GCS went away\n  (twice)")
    # Ray's ConnectionError is an OSError but not the disk's: it is raised as it was
    assert str(caught.value) == "GCS went away\n  (twice)"
    assert seen == ["broken", "after:GCS went away (twice)"]


def test_nothing_runs_when_the_block_ends_well(tmp_path: Path) -> None:
    seen, steps = recorder()
    before = signal.getsignal(signal.SIGTERM)
    with abort_guard(tmp_path, "run", steps, RESUME):
        pass
    assert seen == []
    assert signal.getsignal(signal.SIGTERM) is before


def test_outside_the_main_thread_the_sigterm_handler_is_left_alone(tmp_path: Path) -> None:
    handlers: list[object] = []
    seen, steps = recorder()

    def body() -> None:
        try:
            with abort_guard(tmp_path, "run", steps, RESUME):
                handlers.append(signal.getsignal(signal.SIGTERM))
                raise ValueError("boom")
        except ValueError:
            handlers.append("raised")

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join(10)
    assert handlers == [before, "raised"]
    assert seen == ["stop:boom", "event:boom", "finalize:boom"]


def test_abort_reason_is_one_line() -> None:
    assert abort_reason(KeyboardInterrupt()) == "interrupted"
    assert abort_reason(Terminated()) == "terminated (SIGTERM)"
    assert abort_reason(RuntimeError("a\n  b")) == "a b"
    assert abort_reason(RuntimeError()) == "RuntimeError"
    assert abort_reason(SystemExit(3)) == "3"


def test_a_sigterm_that_ray_turned_into_system_exit_1_is_still_sigterm(tmp_path: Path) -> None:
    seen, steps = recorder()
    with pytest.raises(Terminated) as caught, abort_guard(tmp_path, "run", steps, RESUME):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Terminated:
            raise SystemExit(1) from None  # what Ray's check_signals makes of it in ray.wait
    assert caught.value.code == signal.SIGTERM
    assert seen == [f"{s}:terminated (SIGTERM)" for s in ("stop", "event", "finalize")]


def test_a_system_exit_without_sigterm_stays_what_it_was(tmp_path: Path) -> None:
    seen, steps = recorder()
    with pytest.raises(SystemExit) as caught, abort_guard(tmp_path, "run", steps, RESUME):
        raise SystemExit(1)
    assert type(caught.value) is SystemExit and caught.value.code == 1
    assert seen == ["stop:1", "event:1", "finalize:1"]
