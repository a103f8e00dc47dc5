"""A real disk that fails on cue: a small ext4 image on a loop device.

``chmod`` does not stop root, and a read-only remount is refused while files are open for
writing, so :func:`ext4_mount` mounts an image with ``errors=remount-ro`` and
:func:`turn_read_only` writes ``/sys/fs/ext4/<dev>/trigger_fs_error``: the kernel treats it like
a real disk error, and from then on every write, to open files too, fails with EROFS. Needs root
(skips otherwise).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _sh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def ext4_mount(tmp: Path, name: str, size_mb: int = 32) -> Iterator[Path]:
    """A fresh ext4 image loop-mounted at ``tmp/name`` (``errors=remount-ro``); unmounted
    (which frees the loop device) and deleted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a loop device")
    image, mnt = tmp / f"{name}.img", tmp / name
    mnt.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(size_mb * 2**20)
    made = _sh("mkfs.ext4", "-q", "-F", str(image))
    mounted = made.returncode == 0 and (
        _sh("mount", "-o", "loop,errors=remount-ro", str(image), str(mnt)).returncode == 0
    )
    if not mounted:
        pytest.skip(f"cannot make or mount an ext4 loop image: {made.stderr.strip()}")
    try:
        yield mnt
    finally:
        for _ in range(50):  # a driver that just died may still hold files for a moment
            if _sh("umount", str(mnt)).returncode == 0:
                break
            time.sleep(0.2)
        else:
            _sh("umount", "-l", str(mnt))
        image.unlink(missing_ok=True)


def turn_read_only(mnt: Path) -> None:
    """Make the file system under ``mnt`` fail every write from now on (EROFS)."""
    source = _sh("findmnt", "-n", "-o", "SOURCE", str(mnt)).stdout.strip()
    trigger = Path("/sys/fs/ext4") / Path(source).name / "trigger_fs_error"
    trigger.write_text("touchstone reliability test\n")
    with pytest.raises(OSError):
        (mnt / "probe").write_text("x")
