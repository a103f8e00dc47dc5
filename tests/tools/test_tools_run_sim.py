"""``touchstone-ray tools`` end to end on simulated servers (real Ray, real HTTP, real
sandbox): every turn, the world's replies and each check land in the cell records; transport
errors stop a model after three in a row and ``--resume`` runs exactly the cells without an
ok record; the CLI's exit code and its one-line refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import cli, quick_fleet, write_yaml
from ray_env import RayCluster

from touchstone_ray.tool_records import ToolsRecord
from touchstone_ray.tools.run import ToolsOptions, ToolsOutcome, run_tools

pytestmark = pytest.mark.slow

READ = {
    "name": "read",
    "description": "Eine Datei lesen",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
CODE = "```python\ndef f():\n    return 2\n```"
PACK: dict[str, Any] = {
    "kind": "tools",
    "id": "mini",
    "title": "Mini",
    "language": "de",
    "tools": [READ],
    "world": {"files": {"a.py": "def f():\n    return 1\n"}},
    "items": [
        {
            "id": "lesen",
            "prompt": "Lies a.py und zeig die korrigierte Funktion.",
            "tools": ["read"],
            "repeats": 2,
            "checks": [
                {"id": "ruft", "type": "calls", "expect": ["read"], "turn": 1},
                {
                    "id": "pfad",
                    "type": "arg_equals",
                    "tool": "read",
                    "path": "$.path",
                    "value": "a.py",
                },
                {"id": "def", "type": "answer_contains", "values": ["def f"]},
            ],
        },
        {
            "id": "ohne",
            "prompt": "Wie viel ist zwei plus zwei?",
            "checks": [{"id": "kein", "type": "no_call"}],
        },
        {
            "id": "code",
            "prompt": "Schreib f so, dass es 2 liefert.",
            "tools": ["read"],
            "checks": [{"id": "asserts", "type": "python_asserts", "asserts": "assert f() == 2"}],
        },
    ],
}
FAST = {"ttft_ms": 1, "tps": 4000, "answer_tokens": 20}
CALLER = FAST | {"tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}],
                 "tool_answer": CODE}  # fmt: skip
SILENT = FAST | {"tool_call_shape": "no_call", "tool_answer": "Keine Werkzeuge nötig."}


def models(broken_rate: float) -> list[dict[str, Any]]:
    return [
        {"id": "caller", "engine": "simulated", "concurrency": 2, "sim": CALLER},
        {"id": "silent", "engine": "simulated", "sim": SILENT},
        {"id": "broken", "engine": "simulated", "sim": FAST | {"fail_rate": broken_rate}},
    ]


def run(pack: Path, config: Path, **kw: Any) -> tuple[ToolsOutcome, str]:
    buf = io.StringIO()
    outcome = run_tools(ToolsOptions(pack=str(pack), config=config, **kw), buf)
    return outcome, buf.getvalue()


def records(bundle: Path) -> dict[str, ToolsRecord]:
    out: dict[str, ToolsRecord] = {}
    for shard in sorted((bundle / "cells").glob("*.jsonl")):
        for line in shard.read_text(encoding="utf-8").splitlines():
            assert line.startswith('{"key":'), line[:40]
            record = ToolsRecord.model_validate_json(line)
            out.setdefault(record.key, record)
            if record.ok:
                out[record.key] = record
    return out


def checks(record: ToolsRecord) -> dict[str, bool | None]:
    return {c.id: c.ok for c in record.checks}


def test_a_tools_run_records_turns_checks_and_resumes_the_rest(
    rc: RayCluster, tmp_path: Path
) -> None:
    pack = write_yaml(tmp_path / "mini.yaml", PACK)
    config = quick_fleet(tmp_path / "fleet.yaml", models(1.0))
    outcome, printed = run(pack, config, out=tmp_path / "runs")
    bundle = outcome.bundle
    assert bundle is not None and bundle.name.endswith("_tools_mini"), printed
    # broken: three failed cells in a row stop it; its fourth cell has no record
    assert outcome.exit_code == 1
    assert (outcome.n_ok, outcome.n_failed, outcome.n_missing) == (8, 3, 4)
    assert outcome.n_passed == 5  # caller's four cells, and silent's "ohne"
    assert set(outcome.stopped) == {"broken"}
    assert printed.splitlines()[-1] == str(bundle)
    assert printed.splitlines()[-2].startswith(
        "tools failed: 8 ok (5 passed), 3 failed (http_5xx 3), 0 reused, 4 without a result in "
    )
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["kind"] == "tools" and manifest["status"] == "failed"
    assert len(manifest["checks_fingerprint"]) == 64 and len(manifest["pack_fingerprint"]) == 64
    got = records(bundle)
    assert len(got) == 11
    caller = got["caller|lesen|1"]
    assert caller.passed is True and checks(caller) == {"ruft": True, "pfad": True, "def": True}
    first, last = caller.turns
    assert [c.name for c in first.tool_calls] == ["read"]
    assert first.tool_calls[0].arguments == {"path": "a.py"}
    assert [(r.source, r.content) for r in first.world_replies] == [
        ("file", "def f():\n    return 1\n")
    ]
    assert first.finish_reason == "tool_calls" and last.finish_reason == "stop"
    assert last.content == CODE and last.tool_calls == []
    assert caller.t_start is not None and caller.t_end is not None
    assert caller.t_start < caller.t_end and caller.n_samples is not None  # finalized
    assert got["caller|code|1"].passed is True
    assert checks(got["caller|ohne|1"]) == {"kein": True}
    silent = got["silent|lesen|2"]
    assert silent.passed is False and len(silent.turns) == 1
    assert checks(silent) == {"ruft": False, "pfad": False, "def": False}
    code = got["silent|code|1"]
    assert code.passed is False and code.checks[0].detail.startswith("exit 1: ")
    failed = [r for r in got.values() if r.model == "broken"]
    assert [(r.ok, r.error_kind, r.turns, r.passed) for r in failed] == [
        (False, "http_5xx", [], None)
    ] * 3
    summary = json.loads((bundle / "summary.json").read_text())
    assert [(m["model"], m["passed"]) for m in summary["models"]] == [
        ("caller", 4), ("silent", 1), ("broken", 0)
    ]  # fmt: skip

    # the server mended: --resume runs exactly broken's four cells, nothing else
    quick_fleet(tmp_path / "fleet.yaml", models(0.0))
    again, printed = run(pack, config, resume=bundle)
    assert again.exit_code == 0, printed
    assert (again.n_ok, again.n_failed, again.n_reused, again.n_missing) == (4, 0, 8, 0)
    after = records(bundle)
    assert {k for k, r in after.items() if r.model == "broken" and r.ok} == {
        "broken|lesen|1", "broken|lesen|2", "broken|ohne|1", "broken|code|1"
    }  # fmt: skip
    assert after["caller|lesen|1"] == caller  # untouched
    assert json.loads((bundle / "bundle.json").read_text())["status"] == "done"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    pack = write_yaml(tmp_path / "mini.yaml", PACK)
    config = quick_fleet(tmp_path / "fleet.yaml", models(0.0))
    unknown = cli("tools", "--pack", "bfcl:nonsense", "--config", str(config))
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: bfcl:nonsense: ")
    item = cli("tools", "--pack", str(pack), "--config", str(config), "--items", "nope")
    assert (item.returncode, item.stderr) == (
        2, "error: --items: unknown item 'nope' in pack mini\n"
    )  # fmt: skip
    both = cli("tools", "--pack", str(pack), "--config", str(config), "--limit", "1",
               "--items", "ohne")  # fmt: skip
    assert (both.returncode, both.stderr) == (
        2,
        "error: --limit and --items are exclusive: give one\n",
    )
    bad = dict(PACK, items=[dict(PACK["items"][0], checks=[{"id": "x", "type": "vibes"}])])
    broken = cli("tools", "--pack", str(write_yaml(tmp_path / "bad.yaml", bad)), "--config",
                 str(config))  # fmt: skip
    assert broken.returncode == 2
    assert broken.stderr.startswith(
        f"error: {tmp_path / 'bad.yaml'}: items[0].checks[0]: Input tag"
    )


def test_a_bfcl_category_runs_as_a_pack(rc: RayCluster, tmp_path: Path) -> None:
    # the simulator calls the first offered tool with arguments built from its schema
    # ("wert", 1, 1.5 …): the path runs, BFCL's possible answers do not match them
    sim = FAST | {"tool_turns": 1, "tool_answer": "fertig"}
    config = quick_fleet(
        tmp_path / "fleet.yaml", [{"id": "sim", "engine": "simulated", "sim": sim}]
    )
    buf = io.StringIO()
    outcome = run_tools(
        ToolsOptions(pack="bfcl:simple_python", config=config, out=tmp_path / "runs", limit=3),
        buf,
    )
    assert outcome.bundle is not None and outcome.bundle.name.endswith("_tools_bfcl-simple_python")
    assert (outcome.exit_code, outcome.n_ok, outcome.n_passed) == (0, 3, 0)
    got = records(outcome.bundle)
    assert sorted(got) == [
        "sim|simple_python_0|1",
        "sim|simple_python_1|1",
        "sim|simple_python_2|1",
    ]
    first = got["sim|simple_python_0|1"]
    assert [c.type for c in first.checks] == ["calls"] and first.checks[0].ok is False
    assert len(first.turns) == 1  # BFCL items are single-turn
    assert [c.name for c in first.turns[0].tool_calls] == ["calculate_triangle_area"]


def test_a_cell_that_does_not_fit_the_context_is_refused_unsent(
    rc: RayCluster, tmp_path: Path
) -> None:
    long_item = {
        "id": "lang",
        "prompt": "Was steht in lang.txt?",
        "tools": ["read"],
        "context_files": ["lang.txt"],
        "checks": [{"id": "antwort", "type": "answer_regex", "pattern": "."}],
    }
    data = dict(PACK, world={"files": {"a.py": "x = 1\n", "lang.txt": "Wort " * 600}})
    data["items"] = [PACK["items"][1], long_item]
    pack = write_yaml(tmp_path / "lang.yaml", data)
    model = {"id": "klein", "engine": "simulated", "context_tokens": 400, "sim": SILENT}
    config = quick_fleet(tmp_path / "fleet.yaml", [model])
    outcome, printed = run(pack, config, out=tmp_path / "runs")
    assert outcome.bundle is not None
    assert (outcome.exit_code, outcome.n_ok, outcome.n_failed) == (1, 1, 1), printed
    refused = records(outcome.bundle)["klein|lang|1"]
    assert (refused.ok, refused.error_kind, refused.turns, refused.t_start) == (
        False, "context", [], None
    )  # fmt: skip
    assert refused.error == (
        "the first request needs about 1140 tokens (estimated), the model's context is 400: "
        "not sent"
    )
