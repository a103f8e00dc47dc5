"""Resume's shard scan reads ``key``/``ok`` from the line prefix: the same answer as a full
JSON parse of every line, on lines our writer writes and on lines it never would."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.bundle import Layout, ResponseShards
from touchstone_ray.bundle._responses import _prefix_key_and_ok, key_and_ok
from touchstone_ray.records import EvalResponse
from touchstone_ray.storage import JsonlWriter, ShardScan, iter_jsonl

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "eval_response_v1.jsonl"


def _record(key: str, ok: bool, **fields: Any) -> dict[str, Any]:
    """An EvalResponse as the client actor and the sink write it (on-disk field order)."""
    base: dict[str, Any] = {
        "key": key,
        "pack_id": "p",
        "pack_version": 1,
        "model": key.rsplit("|", 3)[0],
        "engine": "openai",
        "host": "h",
        "node_id": "n" * 56,
        "variant": "v",
        "category": "c",
        "prompt_id": "A1",
        "repeat": 1,
        "ok": ok,
        "error": None if ok else "HTTP 500: boom",
        "error_kind": None if ok else "http_5xx",
    }
    base.update(fields)
    return EvalResponse.model_validate(base).model_dump(mode="json")


def _full_parse_scan(shards: ResponseShards) -> tuple[set[str], set[str], int, int]:
    """The scan as a full parse of every line does it (the reference)."""
    ok: set[str] = set()
    err: set[str] = set()
    lines = malformed = 0
    for shard in shards.layout.shards(shards.folder):
        seen = ShardScan()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the scan under test warns; the reference not
            for rec in iter_jsonl(shard, seen):
                lines += 1
                key = rec.get("key")
                if not isinstance(key, str):
                    continue
                if rec.get("ok"):
                    ok.add(key)
                    err.discard(key)
                elif key not in ok:
                    err.add(key)
        malformed += len(seen.malformed)
    return ok, err, lines, malformed


TRICKY_TEXT = 'Antwort: {"key":"x|v|A1|1","pack_id":"p","ok":true,"error":null} \\" "ok":false,'
"""Answer text that spells a record, both ``ok`` values and an escaped quote."""


def _lines() -> list[bytes]:
    """Lines of every shape: writer layout (ok, failed, escaped key, tricky answer text, a
    nested ``ok`` in ``request``), finalize's re-encoding, an older spaced layout, key not
    first, no key, a JSON array, two records glued by a lost newline, garbage, blank."""
    wrote = [
        _record("m|v|A1|1", True, response_text="gut"),
        _record("m|v|A1|2", False),
        _record('q"w\\en 3:8b@hö|v|A1|1', True, response_text=TRICKY_TEXT),
        _record("m|v|A1|3", False, response_text=TRICKY_TEXT),
        _record("m|v|A1|4", True, request={"ok": False, "error": None}),
        _record("m|v|A1|5", True, request={"x": 1, "ok": False, "error": 1}),
        _record("m|v|A1|6", True, n_samples=4),
    ]
    out = [
        (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode() for r in wrote
    ]
    out.append((EvalResponse.model_validate(wrote[0]).model_dump_json() + "\n").encode())
    out.append((json.dumps(wrote[1], ensure_ascii=True, separators=(",", ":")) + "\n").encode())
    out.append((json.dumps({**wrote[1], "key": "m|v|A1|7"}) + "\n").encode())  # spaced layout
    out.append(b'{"ok":true,"key":"m|v|A1|8","pack_id":"p"}\n')  # key not first
    out.append(b'{"key":"m|v|A1|9","pack_id":"p","ok":1,"error":null}\n')  # ok not a bool
    out.append(b'{"pack_id":"p","ok":true,"error":null}\n')  # no key
    out.append(b'[{"key":"m|v|A1|10","pack_id":"p","ok":true,"error":null}]\n')
    glued = b'{"key":"m|v|A1|11","pack_id":"p","mo' + out[0]  # torn line, then a record
    out.append(glued)
    out.append(b'{"key":"m|v|A1|12","pack_id":"p","ok":true,"error":nul\n')  # broken end
    out.append(b"\n")
    out.append(b"not json\n")
    return out


@pytest.mark.parametrize("index", range(len(_lines())))
def test_each_line_reads_as_the_full_parse(index: int) -> None:
    raw = _lines()[index]
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    want = (
        (obj.get("key") if isinstance(obj.get("key"), str) else None, bool(obj.get("ok")))
        if isinstance(obj, dict)
        else None
    )
    assert key_and_ok(raw) == want


def test_the_writer_layout_takes_the_prefix_path() -> None:
    lines = _lines()
    assert _prefix_key_and_ok(lines[0]) == ("m|v|A1|1", True)
    assert _prefix_key_and_ok(lines[1]) == ("m|v|A1|2", False)
    assert _prefix_key_and_ok(lines[2]) == ('q"w\\en 3:8b@hö|v|A1|1', True)  # escaped key
    assert _prefix_key_and_ok(lines[3]) == ("m|v|A1|3", False)  # record-like answer text
    assert _prefix_key_and_ok(lines[7]) == ("m|v|A1|1", True)  # pydantic's own JSON
    assert _prefix_key_and_ok(lines[8]) == ("m|v|A1|2", False)  # ASCII-escaped
    # these go to the full parse: a second "ok" key, spaced layout, glued lines
    assert _prefix_key_and_ok(lines[4]) is None
    assert _prefix_key_and_ok(lines[5]) is None
    assert _prefix_key_and_ok(lines[9]) is None
    assert _prefix_key_and_ok(lines[14]) is None
    assert _prefix_key_and_ok(lines[15]) is None
    golden = GOLDEN.read_bytes().splitlines(keepends=True)
    assert [_prefix_key_and_ok(g) for g in golden] == [
        (json.loads(g)["key"], json.loads(g)["ok"]) for g in golden
    ]


def test_shard_scan_equals_the_full_parse(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.responses_dir.mkdir()
    lines = _lines()
    lay.shard("a").write_bytes(b"".join(lines) + lines[0][:40])  # torn last line
    with JsonlWriter(lay.shard("b")) as w:  # the sink's writer: error, then ok, then error
        w.write(_record("b|v|A1|1", False))
        w.write(_record("b|v|A1|1", True))
        w.write(_record("b|v|A1|1", False))
        w.write(_record("b|v|A1|2", False))
    shards = ResponseShards(lay)
    want_ok, want_err, want_lines, want_bad = _full_parse_scan(shards)
    with pytest.warns(UserWarning) as caught:
        scan = shards.scan(repair=True)
    assert [str(w.message).rsplit("/", 1)[1] for w in caught] == [
        f"a.jsonl:{n}: malformed line quarantined" for n in (14, 15, 16, 18)
    ]
    assert scan.torn_bytes == 40
    assert (scan.ok_keys, scan.error_keys) == (want_ok, want_err)
    assert (scan.n_lines, scan.malformed) == (want_lines, want_bad)
    assert scan.error_keys == {"m|v|A1|2", "m|v|A1|3", "m|v|A1|7", "b|v|A1|2"}
    assert len(scan.ok_keys) == 8 and "b|v|A1|1" in scan.ok_keys
    assert [n for _, n in scan.malformed_at] == [14, 15, 16, 18]
    # after the repair the file ends cleanly: a second scan finds the same
    again = shards.scan(warn=False)
    assert (again.ok_keys, again.error_keys, again.torn_bytes) == (want_ok, want_err, 0)


def _shuffled(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its keys in reverse order and one extra key first (a dict as a
    client or a merge might hand it over: ``ok`` before ``key``, ``error`` before ``ok``)."""
    return {"zz_extra": 1, **dict(reversed(list(record.items())))}


def test_the_shard_writer_pins_the_prefix_layout(tmp_path: Path) -> None:
    """Whatever order a dict's keys arrive in, the response shard writer writes ``key``
    first and ``ok`` right before ``error``: every line takes the prefix path, the content is
    the record's, the extra key goes last."""
    shards = ResponseShards(Layout(tmp_path))
    records = [
        _record("m|v|A1|1", True, response_text=TRICKY_TEXT),
        _record("m|v|A1|2", False),
        _record('q"w|v|A1|1', True, n_samples=4),
    ]
    with shards.writer("m") as writer:
        for rec in records:
            writer.write(_shuffled(rec))
    lines = shards.layout.shard("m").read_bytes().splitlines(keepends=True)
    assert [_prefix_key_and_ok(line) for line in lines] == [
        ("m|v|A1|1", True),
        ("m|v|A1|2", False),
        ('q"w|v|A1|1', True),
    ]
    assert lines[1].startswith(b'{"key":"m|v|A1|2","pack_id":"p","pack_version":1,')
    assert b',"ok":false,"error":"HTTP 500: boom","error_kind":"http_5xx",' in lines[1]
    assert [list(json.loads(line))[-1] for line in lines] == ["zz_extra"] * 3
    assert [json.loads(line) for line in lines] == [{**r, "zz_extra": 1} for r in records]


def test_the_finalize_rewrite_writes_the_prefix_layout(tmp_path: Path) -> None:
    """A line finalize changes is re-encoded with its keys in on-disk order (here it came in
    another order, from an older writer); a line it leaves alone is kept byte for byte."""
    shards = ResponseShards(Layout(tmp_path))
    path = shards.layout.shard("m")
    path.parent.mkdir(parents=True)
    moved = _shuffled(_record("m|v|A1|1", True))
    kept = _shuffled(_record("m|v|A1|2", False, n_samples=2))
    old = [(json.dumps(r, separators=(",", ":")) + "\n").encode() for r in (moved, kept)]
    path.write_bytes(b"".join(old))
    assert [_prefix_key_and_ok(line) for line in old] == [None, None]

    assert shards.rewrite_unfinalized(lambda rec: {"n_samples": 3}) == 1

    new = path.read_bytes().splitlines(keepends=True)
    assert _prefix_key_and_ok(new[0]) == ("m|v|A1|1", True)
    assert json.loads(new[0]) == {**moved, "n_samples": 3}
    assert new[1] == old[1]


def test_prefix_and_full_parse_on_one_shard_with_exact_values(tmp_path: Path) -> None:
    """One shard: a writer line (ok), a non-ok record, a line with its keys in another order
    (full parse), then a torn last line (cut off, not counted)."""
    lay = Layout(tmp_path)
    shards = ResponseShards(lay)
    with shards.writer("m") as writer:
        writer.write(_record("m|v|A1|1", True))
        writer.write(_record("m|v|A1|2", False))
    other_order = b'{"ok":true,"error":null,"pack_id":"p","key":"m|v|A1|3"}\n'
    torn = b'{"key":"m|v|A1|4","pack_id":"p","ok":tr'
    with open(lay.shard("m"), "ab") as fh:
        fh.write(other_order + torn)
    lines = lay.shard("m").read_bytes().splitlines(keepends=True)
    assert [_prefix_key_and_ok(line) for line in lines] == [
        ("m|v|A1|1", True),
        ("m|v|A1|2", False),
        None,  # keys in another order: parsed in full
        None,  # torn: no newline
    ]
    assert key_and_ok(lines[2]) == ("m|v|A1|3", True)
    assert key_and_ok(lines[3] + b"\n") is None  # malformed once it has an end

    scan = shards.scan(repair=True)

    assert scan.ok_keys == {"m|v|A1|1", "m|v|A1|3"}
    assert scan.error_keys == {"m|v|A1|2"}
    assert (scan.n_lines, scan.torn_bytes, scan.malformed) == (3, len(torn), 0)
    assert lay.shard("m").read_bytes().endswith(other_order)
