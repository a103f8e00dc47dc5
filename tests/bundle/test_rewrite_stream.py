"""Finalize's shard rewrite streams: its memory is one line, not the changed lines."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from touchstone_ray.bundle import Layout, ResponseShards


def _line(key: str, n_samples: int | None, text: str) -> bytes:
    rec = {"key": key, "ok": True, "response_text": text, "n_samples": n_samples}
    return (json.dumps(rec, separators=(",", ":")) + "\n").encode()


def test_rewrite_keeps_memory_to_a_line_and_bytes_before_the_first_change(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.responses_dir.mkdir()
    text = "x" * 10_000
    done = [_line(f"d{i}", 3, text) for i in range(5)]  # finalized: kept byte for byte
    todo = [_line(f"k{i}", None, text) for i in range(2000)]  # 20 MB to finalize
    torn = b'{"key":"t","ok":tr'
    lay.shard("m").write_bytes(b"".join(done + todo) + torn)

    def fields_for(rec: dict[str, Any]) -> dict[str, Any]:
        return {"n_samples": 7}

    tracemalloc.start()
    try:
        seen = ResponseShards(lay).rewrite_unfinalized(fields_for)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == 2000
    assert peak < 2_000_000, peak  # the changed lines alone are 20 MB
    data = lay.shard("m").read_bytes()
    assert data.startswith(b"".join(done)) and data.endswith(b"\n" + torn)
    lines = data.splitlines()[:-1]
    assert [json.loads(x)["n_samples"] for x in lines] == [3] * 5 + [7] * 2000
    assert ResponseShards(lay).rewrite_unfinalized(fields_for) == 0  # nothing left to do
