"""The queue's warm stage process: it runs the command it is handed as ``touchstone-ray``
would, into the stage's output files and with its exit code (it warms up at nice 19); a
spare that is gone hands nothing and the stage starts cold."""

from __future__ import annotations

import os
from pathlib import Path

from eval_helpers import tiny_pack, write_yaml

from touchstone_ray.queue.spare import WARM_NICE, Spare


def test_a_spare_becomes_the_stage_it_is_handed(tmp_path: Path) -> None:
    pack = write_yaml(tmp_path / "pack.yaml", tiny_pack(3))
    spare = Spare(None, dict(os.environ))
    assert spare.proc.poll() is None
    assert os.getpriority(os.PRIO_PROCESS, spare.proc.pid) == WARM_NICE  # warming up
    out, err = tmp_path / "validate.out", tmp_path / "validate.err"
    child = spare.run(["validate", str(pack)], out, err)
    assert child is spare.proc
    assert child.wait(timeout=120) == 0
    assert out.read_text().splitlines() == ["tiny v1: 3 prompts, 3 cells/variant, max 30 points"]
    assert err.read_text() == ""
    assert spare.run(["validate", str(pack)], out, err) is None  # used up


def test_a_failing_stage_keeps_its_exit_code_and_an_unused_spare_ends(tmp_path: Path) -> None:
    spare = Spare(None, dict(os.environ))
    out, err = tmp_path / "v.out", tmp_path / "v.err"
    child = spare.run(["validate", str(tmp_path / "missing.yaml")], out, err)
    assert child is not None and child.wait(timeout=120) == 2
    assert err.read_text() == f"error: {tmp_path / 'missing.yaml'}: no such pack file\n"
    idle = Spare(None, dict(os.environ))
    idle.close()
    assert idle.proc.returncode == 0
