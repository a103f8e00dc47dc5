"""Bundle and shard rules without Ray: frozen config redaction, resume checks on generation
settings, torn-tail repair, de-duplication by key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from eval_helpers import tiny_pack, write_yaml

from touchstone_ray.bundle import Bundle
from touchstone_ray.config import load_config
from touchstone_ray.errors import BundleError
from touchstone_ray.pack import load_pack
from touchstone_ray.storage import dedupe_by_key, iter_jsonl, repair_torn_tail


def _config(tmp_path: Path, extra_body: dict[str, Any], name: str = "fleet.yaml") -> Path:
    return write_yaml(
        tmp_path / name,
        {
            "models": [
                {
                    "id": "m1",
                    "engine": "openai",
                    "base_url": "http://127.0.0.1:8000/v1",
                    "extra_body": extra_body,
                },
                {"id": "m2", "engine": "simulated", "sim": {"answer_tokens": 30, "tps": 50}},
            ]
        },
    )


def _bundle(tmp_path: Path, extra_body: dict[str, Any]) -> tuple[Bundle, Path]:
    pack = write_yaml(tmp_path / "pack.yaml", tiny_pack())
    config = load_config(_config(tmp_path, extra_body))
    bundle = Bundle.create(tmp_path / "runs", load_pack(pack), pack, config, {"version": "x"})
    return bundle, pack


def test_frozen_config_redacts_secrets_but_keeps_token_counts(tmp_path: Path) -> None:
    body = {
        "max_tokens": 64,
        "api_key": "sk-very-secret",
        "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k2", "accessToken": "t3"},
        "options": {"num_predict": 32, "num_ctx": 4096},
    }
    bundle, _ = _bundle(tmp_path, body)
    text = (bundle.root / "config.yaml").read_text() + bundle.layout.manifest.read_text()
    for secret in ("sk-very-secret", "Bearer abc", "k2", "t3"):
        assert secret not in text
    frozen = yaml.safe_load((bundle.root / "config.yaml").read_text())
    assert frozen["models"][0]["extra_body"] == {
        "max_tokens": 64,
        "api_key": "***",
        "headers": {"Authorization": "***", "X-Api-Key": "***", "accessToken": "***"},
        "options": {"num_predict": 32, "num_ctx": 4096},
    }
    assert frozen["models"][1]["sim"] == {"answer_tokens": 30, "tps": 50}


def test_resume_refuses_a_changed_max_tokens(tmp_path: Path) -> None:
    bundle, pack = _bundle(tmp_path, {"max_tokens": 64, "api_key": "a"})
    same = load_config(_config(tmp_path, {"max_tokens": 64, "api_key": "b"}, "same.yaml"))
    bundle.check_resume(pack, same)  # a different secret is not a generation setting
    changed = load_config(_config(tmp_path, {"max_tokens": 128, "api_key": "a"}, "new.yaml"))
    with pytest.raises(BundleError) as info:
        bundle.check_resume(pack, changed)
    assert str(info.value) == (
        f"{bundle.root}: model m1: extra_body changed since the bundle was started "
        "({'max_tokens': 64, 'api_key': '***'} → {'max_tokens': 128, 'api_key': '***'}); "
        "resume needs the same generation settings"
    )


def test_resume_refuses_a_changed_sim_answer_length(tmp_path: Path) -> None:
    bundle, pack = _bundle(tmp_path, {})
    path = tmp_path / "fleet.yaml"
    data = yaml.safe_load(path.read_text())
    data["models"][1]["sim"]["answer_tokens"] = 31
    with pytest.raises(BundleError, match=r"model m2: sim changed .*'answer_tokens': 31"):
        bundle.check_resume(pack, load_config(write_yaml(tmp_path / "new.yaml", data)))


def test_repair_torn_tail(tmp_path: Path) -> None:
    shard = tmp_path / "m.jsonl"
    torn = tmp_path / "m.jsonl.torn"
    shard.write_bytes(b'{"key":"a","ok":true}\n{"key":"b"')
    assert repair_torn_tail(shard) == len(b'{"key":"b"')
    assert shard.read_bytes() == b'{"key":"a","ok":true}\n'
    assert torn.read_bytes() == b'{"key":"b"\n'
    assert repair_torn_tail(shard) == 0  # clean now: nothing cut, .torn untouched
    shard.write_bytes(shard.read_bytes() + b"xyz")
    assert repair_torn_tail(shard) == 3
    assert torn.read_bytes() == b'{"key":"b"\nxyz\n'  # appended, the first fragment kept
    only = tmp_path / "only.jsonl"
    only.write_bytes(b'{"no newline at all"')
    assert repair_torn_tail(only) == len(b'{"no newline at all"')
    assert only.read_bytes() == b""
    assert repair_torn_tail(tmp_path / "missing.jsonl") == 0


def test_reading_skips_torn_tail_and_warns_on_malformed_lines(tmp_path: Path) -> None:
    shard = tmp_path / "m.jsonl"
    shard.write_bytes(b'{"key":"a"}\n[1, 2]\nnot json\n\n{"key":"b"}\n{"key":"c')
    with pytest.warns(UserWarning) as caught:
        got = list(iter_jsonl(shard))
    assert got == [{"key": "a"}, {"key": "b"}]
    assert [str(w.message) for w in caught] == [
        f"{shard}:2: malformed line quarantined",
        f"{shard}:3: malformed line quarantined",
    ]


def test_dedupe_ok_wins_first_ok_wins(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"key": "k1", "ok": False, "n": 1},
        {"key": "k1", "ok": True, "n": 2},
        {"key": "k1", "ok": True, "n": 3},
        {"key": "k1", "ok": False, "n": 4},
        {"key": "k2", "ok": False, "n": 5},
        {"key": "k2", "ok": False, "n": 6},
        {"no": "key"},
    ]
    assert {k: r["n"] for k, r in dedupe_by_key(records).items()} == {"k1": 2, "k2": 6}
    bundle, _ = _bundle(tmp_path, {})
    shard = bundle.layout.shard("m1")
    shard.write_text("".join(json.dumps(r) + "\n" for r in records))
    scan = bundle.scan_responses()
    assert scan.ok_keys == {"k1"} and scan.error_keys == {"k2"}
    assert [r["n"] for r in bundle.responses()] == [2, 6]
