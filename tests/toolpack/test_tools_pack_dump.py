"""The bundle's copy of a tools pack (``dump_tools_pack``) reads back equal, the largest BFCL
category included (it stays under the YAML reader's node cap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from touchstone_ray.toolpack import dump_tools_pack, load_tools_pack

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("source", ["bfcl:live_multiple", str(REPO / "packs" / "werkzeuge.yaml")])
def test_the_copy_reads_back_equal(tmp_path: Path, source: str) -> None:
    pack = load_tools_pack(source)
    copy = tmp_path / "pack.yaml"
    copy.write_text(dump_tools_pack(pack), encoding="utf-8")
    again = load_tools_pack(copy)
    assert again == pack
    assert again.checks_fingerprint() == pack.checks_fingerprint()
    assert again.fingerprint() == pack.fingerprint()
