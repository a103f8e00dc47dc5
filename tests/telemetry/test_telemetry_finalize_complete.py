"""Finalize is complete and idempotent: every unfinalized record is joined to the samples in
``hosts/`` whichever run wrote it, a second pass changes no byte, records are found without
relying on the key being the first field, and a host without samples is named once in
``bundle.json`` with the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_telemetry_finalize import _response, hs

from touchstone_ray.bundle import Bundle, ResponseShards
from touchstone_ray.storage import JsonlWriter, atomic_write_json, read_jsonl
from touchstone_ray.telemetry.finalize import finalize_bundle

MANIFEST: dict[str, Any] = {
    "pack": {"id": "p", "version": 1, "sha256": "00"},
    "models": [{"model": "m1", "id": "m1", "engine": "simulated"}],
    "hosts": {
        "gpu-a": {"node_id": "n1"},
        "lost": {"node_id": "n2", "monitoring_lost_reason": "monitor actor died"},
        "quiet": {"node_id": "n3"},
    },
    "status": "done",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    atomic_write_json(tmp_path / "bundle.json", MANIFEST)
    with JsonlWriter(tmp_path / "hosts" / "gpu-a.jsonl") as w:
        w.write(hs(-20.0, 1000.0, baseline=True, model="m1"))
        for i in range(10):
            w.write(hs(i * 0.5, 1100.0 + 10 * i))
    with JsonlWriter(tmp_path / "responses" / "m1.jsonl") as w:
        w.write(_response("m1", "A1", 0.0, 1.0))
        for host in ("lost", "quiet", "mac"):
            w.write(_response("m1", f"N-{host}", 0.0, 1.0, host=host))
    with open(tmp_path / "responses" / "m1.jsonl", "ab") as fh:  # key not the first field
        fh.write((json.dumps(_response("m1", "A2", 2.0, 4.0), sort_keys=True) + "\n").encode())
    done = {**_response("m1", "A3", 0.0, 1.0), "n_samples": 99, "sys_used_mb": 1.0}
    with JsonlWriter(tmp_path / "responses" / "m2.jsonl") as w:
        w.write(done)  # finalized before: never recomputed
    return tmp_path


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_ino)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _rows(root: Path) -> dict[str, dict[str, Any]]:
    return {r["prompt_id"]: r for r in read_jsonl(root / "responses" / "m1.jsonl").records}


def test_finalize_fills_every_unfinalized_record_and_names_hosts_without_samples(
    root: Path,
) -> None:
    m2_before = _files(root)["responses/m2.jsonl"]
    assert Bundle(root).shards.unfinalized_keys() == {
        "m1|v|A1|1",
        "m1|v|A2|1",
        "m1|v|N-lost|1",
        "m1|v|N-quiet|1",
        "m1|v|N-mac|1",
    }
    assert finalize_bundle(root) == 5
    rows = _rows(root)
    assert (rows["A1"]["n_samples"], rows["A1"]["sys_used_mb"]) == (4, 1130.0)
    # window 1.5 … 4.5 s: samples 3 … 9, peak 1100 + 10·9 MB over the 1000 MB baseline
    assert (rows["A2"]["n_samples"], rows["A2"]["sys_used_mb"]) == (7, 1190.0)
    assert rows["A2"]["sys_used_delta_mb"] == 190.0
    for host in ("lost", "quiet", "mac"):
        assert rows[f"N-{host}"]["n_samples"] is None and rows[f"N-{host}"]["sys_used_mb"] is None
    assert _files(root)["responses/m2.jsonl"] == m2_before  # nothing to do: not rewritten
    manifest = json.loads((root / "bundle.json").read_text())
    assert manifest["resources_unknown"] == {
        "lost": "no host samples: monitor lost (monitor actor died)",
        "mac": "no host samples: the host never joined the run (not in bundle.json hosts)",
        "quiet": "no host samples: its monitor recorded none",
    }
    assert list(manifest) == [*MANIFEST, "resources_unknown"]
    assert ResponseShards(Bundle(root).layout).unfinalized_keys() == {
        "m1|v|N-lost|1",
        "m1|v|N-quiet|1",
        "m1|v|N-mac|1",
    }


def test_finalize_twice_changes_no_byte(root: Path) -> None:
    finalize_bundle(root)
    first = _files(root)
    assert finalize_bundle(root) == 3  # only the records of hosts without samples are left
    assert _files(root) == first  # same bytes, same inodes: nothing was rewritten


def test_samples_that_arrive_later_finalize_the_earlier_records(root: Path) -> None:
    finalize_bundle(root)
    with JsonlWriter(root / "hosts" / "quiet.jsonl") as w:  # e.g. the run after a resume
        w.write(hs(0.2, 2000.0, host="quiet"))
    finalize_bundle(root)
    row = _rows(root)["N-quiet"]
    assert (row["n_samples"], row["sys_used_mb"]) == (1, 2000.0)
    reasons = json.loads((root / "bundle.json").read_text())["resources_unknown"]
    assert sorted(reasons) == ["lost", "mac", "quiet"]  # one line per host, kept as written


def test_finalize_without_a_manifest_still_fills_records(root: Path) -> None:
    os.remove(root / "bundle.json")
    assert finalize_bundle(root) == 5
    assert _rows(root)["A1"]["n_samples"] == 4
    assert not (root / "bundle.json").exists()


def test_line_order_and_untouched_bytes_are_kept(root: Path) -> None:
    shard = root / "responses" / "m1.jsonl"
    before = shard.read_bytes().splitlines(keepends=True)
    finalize_bundle(root)
    after = shard.read_bytes().splitlines(keepends=True)
    assert len(after) == len(before)
    assert [json.loads(line)["key"] for line in after] == [json.loads(b)["key"] for b in before]
    assert after[1:4] == before[1:4]  # the hosts without samples: byte for byte
