"""The queue file's loader (one line per broken rule, naming file, entry and value), its
fingerprint, and the log replay that a rerun resumes from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import tiny_pack, write_yaml

from touchstone_ray.errors import ConfigError
from touchstone_ray.queue import load_queue, read_states
from touchstone_ray.queue.spec import NAME_PATTERN, entry_fingerprint
from touchstone_ray.queue.state import QueueLog


def _files(tmp: Path) -> None:
    write_yaml(tmp / "pack.yaml", tiny_pack(2))
    write_yaml(tmp / "fleet.yaml", {"models": [{"id": "m", "engine": "simulated"}]})


def _entry(**kw: Any) -> dict[str, Any]:
    return {"name": "one", "kind": "eval", "pack": "pack.yaml", "config": "fleet.yaml"} | kw


def test_paths_resolve_against_the_queue_file(tmp_path: Path) -> None:
    _files(tmp_path)
    path = write_yaml(tmp_path / "night.yaml", {"entries": [_entry(limit=2)]})
    spec = load_queue(path)
    assert spec.out == tmp_path / "night-queue"
    entry = spec.entries[0]
    assert (entry.pack, entry.config, entry.limit) == (
        tmp_path / "pack.yaml",
        tmp_path / "fleet.yaml",
        2,
    )
    assert (spec.stall_timeout_s, entry.report, entry.judge_config) == (900.0, True, None)


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"entries": [_entry(kind="train")]},
         "entries[0].kind: Input should be 'eval', 'perf' or 'tools' (got 'train')"),
        ({"entries": [_entry(pack="missing.yaml")]},
         "entries[0].pack: no such file (entry 'one', got {tmp}/missing.yaml)"),
        ({"entries": [_entry(), _entry()]},
         "entries[1].name: two entries have this name (got 'one')"),
        ({"hosts": {"gpu-a": {"settle_s": -1}}, "entries": [_entry()]},
         "hosts.gpu-a.settle_s: Input should be greater than or equal to 0 (got -1)"),
        ({"entries": [_entry(pack=None)]},
         "entries[0].pack: an eval entry needs a pack (entry 'one') (got None)"),
        ({"entries": [_entry(kind="perf", pack=None, limit=3)]},
         "entries[0].limit: not used by a perf entry (entry 'one') (got 3)"),
        ({"entries": [_entry(kind="tools", variants=["baseline"])]},
         "entries[0].variants: not used by a tools entry (entry 'one') (got ('baseline',))"),
        ({"entries": [_entry(kind="tools", pack=None)]},
         "entries[0].pack: a tools entry needs a pack (entry 'one') (got None)"),
        ({"entries": [_entry(limit=0)]},
         "entries[0].limit: Input should be greater than or equal to 1 (got 0)"),
        ({"entries": []},
         "entries: Tuple should have at least 1 item after validation, not 0 (got [])"),
        ({"entries": [_entry(name="a b")]},
         "entries[0].name: String should match pattern " + repr(NAME_PATTERN) + " (got 'a b')"),
    ],
)  # fmt: skip
def test_a_broken_rule_is_one_line(tmp_path: Path, data: dict[str, Any], line: str) -> None:
    _files(tmp_path)
    path = write_yaml(tmp_path / "night.yaml", data)
    with pytest.raises(ConfigError) as caught:
        load_queue(path)
    assert str(caught.value) == f"{path}: " + line.replace("{tmp}", str(tmp_path))


def test_a_tools_entry_runs_a_bfcl_category_as_named(tmp_path: Path) -> None:
    from touchstone_ray.queue.commands import tools_command

    _files(tmp_path)
    entry = _entry(kind="tools", pack="bfcl:simple_python", limit=5)
    spec = load_queue(write_yaml(tmp_path / "night.yaml", {"entries": [entry]}))
    tools = spec.entries[0]
    assert (str(tools.pack), tools.config) == ("bfcl:simple_python", tmp_path / "fleet.yaml")
    assert len(entry_fingerprint(tools)) == 64
    assert tools_command(tools.pack, tools.config, out=tmp_path / "o", models=["m"], limit=5) == [
        "tools", "--pack", "bfcl:simple_python", "--config", str(tmp_path / "fleet.yaml"),
        "--out", str(tmp_path / "o"), "--models", "m", "--limit", "5",
    ]  # fmt: skip


def test_the_fingerprint_follows_the_pack_bytes_and_the_settings(tmp_path: Path) -> None:
    _files(tmp_path)
    path = write_yaml(tmp_path / "night.yaml", {"entries": [_entry(), _entry(name="two")]})
    one, two = load_queue(path).entries
    assert entry_fingerprint(one) != entry_fingerprint(two)  # the name is a setting
    before = entry_fingerprint(one)
    assert entry_fingerprint(one) == before
    write_yaml(tmp_path / "pack.yaml", tiny_pack(3))
    assert entry_fingerprint(one) != before


def test_the_log_replays_to_each_entrys_state(tmp_path: Path) -> None:
    log = QueueLog(tmp_path)
    log.write("entry_pending", "a", stage="eval", state="pending")
    log.write("entry_started", "a", stage="eval", state="running", fingerprint="f1")
    log.write("stage_done", "a", stage="eval", state="done", bundle="/b/a")
    log.write("entry_ended", "a", stage="judge", state="failed", bundle="/b/a",
              reason="judge exited 1: x", duration_s=3.5)  # fmt: skip
    log.write("entry_pending", "a", stage="eval", state="pending")  # the rerun
    assert read_states(tmp_path)["a"].state == "pending"
    log.write("entry_started", "a", stage="eval", state="running", bundle="/b/a",
              fingerprint="f1")  # fmt: skip
    log.write("entry_started", "b", stage="perf", state="running", fingerprint="f2")
    log.close()
    with open(tmp_path / "queue-state.jsonl", "a") as torn:
        torn.write('{"ts": 1, "entry": "b", "stage": "perf"')  # the driver died mid-line
    states = read_states(tmp_path)
    a, b = states["a"], states["b"]
    assert (a.state, a.stages, a.bundle, a.reason) == ("running", [], "/b/a", None)
    assert (b.state, b.stages, b.bundle) == ("running", [], None)
    QueueLog(tmp_path).close()  # the next writer cuts the torn line off first
    lines = [json.loads(line) for line in (tmp_path / "queue-state.jsonl").read_text().splitlines()]
    assert lines[-1]["event"] == "entry_started"
    # SPEC §7d: every line starts with the Contract's keys
    assert {tuple(line)[:6] for line in lines} == {
        ("ts", "entry", "stage", "state", "bundle", "reason")
    }
    assert lines[3] | {"ts": 0} == {
        "ts": 0, "entry": "a", "stage": "judge", "state": "failed", "bundle": "/b/a",
        "reason": "judge exited 1: x", "event": "entry_ended", "duration_s": 3.5,
    }  # fmt: skip
