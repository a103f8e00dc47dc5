"""Fake procfs/sysfs trees for the telemetry readers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from touchstone_ray.telemetry.linux import SysRoot


@pytest.fixture
def fake_root(tmp_path: Path) -> SysRoot:
    """An empty ``proc``/``sys`` pair under tmp_path."""
    root = SysRoot(proc=tmp_path / "proc", sys=tmp_path / "sys")
    root.proc.mkdir()
    root.sys.mkdir()
    return root


@pytest.fixture
def put() -> Callable[[Path, str], Path]:
    """Write a file (creating parents) and return its path."""

    def _put(path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return _put
