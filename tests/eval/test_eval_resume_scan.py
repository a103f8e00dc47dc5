"""Resume's shard scan in the background (:mod:`touchstone_ray.eval.resume`): shards read one
by one in the order the run needs them, each handed over as soon as it is read, in a forked
child (the CLI) and in a thread (a driver with threads). No Ray here; real files, a real
named pipe for a shard that cannot be read yet."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import tiny_pack, write_yaml

from touchstone_ray.bundle import Layout
from touchstone_ray.config import FleetConfig
from touchstone_ray.errors import BundleWriteError
from touchstone_ray.eval.matrix import CellIndex, CellSet, plan_models
from touchstone_ray.eval.resume import ResumeScan, need_order
from touchstone_ray.pack import Pack, load_pack


def _line(key: str, ok: bool) -> bytes:
    rec: dict[str, Any] = {"key": key, "pack_id": "tiny", "ok": ok, "error": None if ok else "x"}
    return (json.dumps(rec, separators=(",", ":")) + "\n").encode()


def _bundle(tmp_path: Path) -> Layout:
    """Shards ``a`` (2 ok, 1 error, a torn tail), ``b`` (1 ok), ``c`` (1 error)."""
    lay = Layout(tmp_path / "bundle")
    lay.responses_dir.mkdir(parents=True)
    lay.shard("a").write_bytes(
        _line("a|v|A1|1", True) + _line("a|v|A2|1", False) + _line("a|v|A3|1", True) + b'{"ke'
    )
    lay.shard("b").write_bytes(_line("b|v|A1|1", True))
    lay.shard("c").write_bytes(_line("c|v|A1|1", False))
    return lay


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "thread"])
def test_shards_come_in_need_order_then_by_name(tmp_path: Path, fork: bool) -> None:
    lay = _bundle(tmp_path)
    scan = ResumeScan(lay.root, ["c", "missing", "a"], set, fork=fork)
    scan.wait()
    assert list(scan.scanned) == [str(lay.shard(m)) for m in ("c", "a", "b")]
    assert scan.shard_lines == {
        str(lay.shard("c")): (1, 0),
        str(lay.shard("a")): (3, 2),
        str(lay.shard("b")): (1, 1),
    }
    found = scan.total
    assert found.ok_keys == {"a|v|A1|1", "a|v|A3|1", "b|v|A1|1"}
    assert found.error_keys == {"a|v|A2|1", "c|v|A1|1"}
    assert (found.n_lines, found.torn_bytes, found.malformed) == (5, 4, 0)
    assert (lay.root / "responses" / "a.jsonl.torn").read_bytes() == b'{"ke\n'
    assert scan.complete and scan.start <= min(scan.scanned.values())
    assert max(scan.scanned.values()) <= scan.end
    assert scan.has("missing")  # a model without a shard: nothing to wait for
    scan.close()


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "thread"])
def test_a_shard_is_handed_over_while_a_later_one_cannot_be_read(
    tmp_path: Path, fork: bool
) -> None:
    """The last shard is a named pipe with no writer yet: opening it blocks the scan. The
    first shard is handed over all the same; the scan completes once the pipe is written."""
    lay = _bundle(tmp_path)
    pipe = lay.shard("z")
    os.mkfifo(pipe)
    scan = ResumeScan(lay.root, ["b", "new"], set, fork=fork)
    scan.wait("b", timeout_s=30)
    assert scan.has("b") and not scan.complete
    assert scan.has("new")  # no shard yet: nothing of it to wait for
    assert scan.total.ok_keys == {"b|v|A1|1"}
    assert str(pipe) not in scan.scanned
    with open(pipe, "wb") as fh:  # blocks until the scan opens the pipe
        fh.write(_line("z|v|A1|1", True) + _line("z|v|A1|2", False))
    scan.wait(timeout_s=30)
    assert scan.complete
    assert list(scan.scanned) == [str(lay.shard(m)) for m in ("b", "a", "c", "z")]
    assert len(scan.total.ok_keys) == 4 and "z|v|A1|1" in scan.total.ok_keys
    assert scan.total.error_keys == {"a|v|A2|1", "c|v|A1|1", "z|v|A1|2"}
    scan.close()


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "thread"])
def test_poll_never_blocks_and_takes_what_is_read(tmp_path: Path, fork: bool) -> None:
    lay = _bundle(tmp_path)
    os.mkfifo(lay.shard("z"))
    scan = ResumeScan(lay.root, [], set, fork=fork)
    taken: list[str] = []
    while len(taken) < 3:  # a, b, c; z blocks
        taken += scan.poll()
    assert taken == [str(lay.shard(m)) for m in ("a", "b", "c")]
    assert scan.poll() == [] and not scan.complete
    writer = threading.Thread(target=lambda: lay.shard("z").write_bytes(b""))
    writer.start()
    scan.wait(timeout_s=30)
    writer.join(30)
    assert scan.complete and scan.total.n_lines == 5
    scan.close()


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "thread"])
def test_the_scans_error_is_raised_in_the_caller(tmp_path: Path, fork: bool) -> None:
    lay = _bundle(tmp_path)
    (lay.responses_dir / "d.jsonl").mkdir()  # a folder where a shard should be
    scan = ResumeScan(lay.root, [], set, fork=fork)
    with pytest.raises(BundleWriteError, match=r"cannot write the bundle \(Is a directory\)"):
        scan.wait(timeout_s=30)
    assert list(scan.scanned) == [str(lay.shard(m)) for m in ("a", "b", "c")]
    scan.close()  # no second raise


def _plans(tmp_path: Path) -> tuple[Pack, Any]:
    pack = load_pack(write_yaml(tmp_path / "pack.yaml", tiny_pack(3)))
    config = FleetConfig.model_validate(
        {
            "hosts": {"h1": {"label": "h1"}, "h2": {"label": "h2"}},
            "models": [
                {"id": "m1", "engine": "simulated", "host": "h1"},
                {"id": "m2", "engine": "simulated", "host": "h1"},
                {"id": "m3", "engine": "simulated", "host": "h1"},
                {"id": "n1", "engine": "simulated", "host": "h2"},
            ],
        }
    )
    return pack, plan_models(pack, config)


def test_need_order_takes_every_hosts_first_model_first(tmp_path: Path) -> None:
    _, plans = _plans(tmp_path)
    assert need_order(plans) == ["m1", "n1", "m2", "m3"]


def test_cell_sets_merge_bit_by_bit_across_a_copy_of_the_index(tmp_path: Path) -> None:
    pack, plans = _plans(tmp_path)
    index = CellIndex(pack, plans)
    copy = CellIndex(pack, plans)  # as the forked scan's index arrives: equal, not the same
    keys = [c.key for models in plans.values() for p in models for c in p.cells(pack)]
    left = CellSet(index, [*keys[:5], "other|v|A1|1"])
    right = CellSet(copy, [*keys[3:8], "other|v|A1|2"])
    assert index.same_cells(copy)
    left |= right
    assert len(left) == 10 and set(left) == {*keys[:8], "other|v|A1|1", "other|v|A1|2"}
    plain = CellSet(index)
    plain |= {keys[9], "x|v|A1|1"}  # any other set: key by key
    assert set(plain) == {keys[9], "x|v|A1|1"}
    fewer = CellIndex(pack, {"h1": plans["h1"]})
    assert not index.same_cells(fewer)
