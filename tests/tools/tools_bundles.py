"""Tools bundles for the scoring, report, compare and UI tests: a small tools pack and a
folder written the way the tools stage writes one (SPEC §7c), from real
:class:`~touchstone_ray.tool_records.ToolsRecord` objects."""

from __future__ import annotations

import json
from collections.abc import Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

import yaml

from touchstone_ray.storage import slug
from touchstone_ray.tool_records import CheckOutcome, ToolCall, ToolsRecord, ToolTurn, tools_key
from touchstone_ray.toolpack import ToolsPack, dump_tools_pack, tools_pack_from_data

PACK_DATA: dict[str, Any] = {
    "kind": "tools",
    "id": "mini-tools",
    "title": "Mini tools",
    "version": 3,
    "language": "en",
    "tools": [
        {
            "name": "get_weather",
            "description": "Weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
        {
            "name": "read",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
        {"name": "now", "description": "The time.", "parameters": {"type": "object"}},
    ],
    "world": {"files": {"notes.txt": "the answer is 42"}},
    "items": [
        {
            "id": "weather",
            "title": "Weather in Berlin",
            "prompt": "How is the weather in Berlin?",
            "tools": ["get_weather"],
            "repeats": 2,
            "checks": [
                {"id": "called", "type": "calls", "expect": ["get_weather"]},
                {"id": "schema", "type": "schema_valid"},
                {
                    "id": "city",
                    "type": "arg_equals",
                    "tool": "get_weather",
                    "path": "$.city",
                    "value": "Berlin",
                },
            ],
        },
        {
            "id": "chat",
            "title": "No tool needed",
            "prompt": "Say hello.",
            "tools": ["get_weather", "now"],
            "checks": [{"id": "none", "type": "no_call"}],
        },
        {
            "id": "notes",
            "title": "Read the notes",
            "prompt": "What does notes.txt say?",
            "tools": ["read"],
            "checks": [
                {"id": "read", "type": "calls", "expect": ["read"]},
                {
                    "id": "code",
                    "type": "python_asserts",
                    "tool": "read",
                    "path": "$.path",
                    "asserts": "assert True",
                },
            ],
        },
    ],
}
"""Three items, four cells per model: ``weather`` ×2, ``chat``, ``notes``."""


def mini_pack(**changes: Any) -> ToolsPack:
    """The mini tools pack, top-level keys replaced by ``changes``."""
    return tools_pack_from_data({**PACK_DATA, **changes}, "mini-tools.yaml")


def turn(
    content: str = "",
    calls: Sequence[tuple[str, Any]] = (),
    finish: str | None = "stop",
    completion: int | None = 10,
    reasoning: int | None = None,
    ttft_s: float | None = 0.1,
    e2e_s: float | None = 1.0,
    reasoning_text: str = "",
) -> ToolTurn:
    """One turn: ``calls`` as ``(name, arguments)``."""
    return ToolTurn(
        content=content,
        reasoning_text=reasoning_text,
        tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)],
        tool_calls_raw=[
            {"index": i, "id": f"c{i}", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ],
        finish_reason=finish,
        prompt_tokens=50,
        completion_tokens=completion,
        reasoning_tokens=reasoning,
        ttft_s=ttft_s,
        e2e_s=e2e_s,
    )


def record(
    model: str,
    item: str,
    repeat: int,
    checks: Sequence[tuple[str, str, bool | None]] = (),
    turns: Sequence[ToolTurn] = (),
    *,
    ok: bool = True,
    error_kind: str | None = None,
    run_s: float | None = 2.0,
    t_start: float | None = 1000.0,
    host: str = "h1",
    engine: str = "simulated",
    pack: ToolsPack | None = None,
    **fields: Any,
) -> ToolsRecord:
    """One cell; ``checks`` as ``(id, type, ok)``; ``passed``/``not_measured`` as the stage
    computes them (every measured check ok; ``None`` when none was measured or not ok)."""
    pack = pack or mini_pack()
    outcomes = [CheckOutcome(id=i, type=t, ok=v, detail="" if v else "why") for i, t, v in checks]
    measured = [c.ok for c in outcomes if c.ok is not None]
    passed = all(measured) if ok and measured else None
    return ToolsRecord(
        key=tools_key(model, item, repeat),
        pack_id=pack.id,
        pack_version=pack.version,
        model=model,
        engine=engine,
        host=host,
        item_id=item,
        repeat=repeat,
        ok=ok,
        error=None if ok else f"{error_kind}: failed",
        error_kind=error_kind,  # type: ignore[arg-type]
        t_start=t_start,
        t_end=None if t_start is None or run_s is None else t_start + run_s,
        turns=list(turns) if ok else [],
        checks=outcomes if ok else [],
        passed=passed,
        not_measured=[c.id for c in outcomes if c.ok is None] if ok else [],
        run_s=run_s,
        **fields,
    )


def write_tools_bundle(
    root: Path,
    records: Sequence[ToolsRecord],
    *,
    pack: ToolsPack | None = None,
    models: Sequence[tuple[str, str]] | None = None,
    status: str = "done",
    manifest: dict[str, Any] | None = None,
    events: Sequence[dict[str, Any]] = (),
) -> Path:
    """Write a tools bundle folder at ``root`` as the tools stage does: ``bundle.json`` (``kind:
    tools``, ``pack`` {id, version, sha256 of ``pack.yaml``}, the pack's fingerprints,
    ``selection``), ``pack.yaml``, ``config.yaml``, ``cells/<slug(model)>.jsonl`` (one
    ``model_dump(mode="json")`` line per record), ``hosts/``, ``events.jsonl``. ``models``:
    ``(label, host)`` in config order (default: the records' models, in order of appearance);
    ``manifest`` keys replace the defaults."""
    pack = pack or mini_pack()
    if models is None:
        seen = dict.fromkeys((r.model, r.host) for r in records)
        models = list(seen)
    text = dump_tools_pack(pack)
    root.mkdir(parents=True, exist_ok=True)
    (root / "cells").mkdir(exist_ok=True)
    (root / "hosts").mkdir(exist_ok=True)
    data = {
        "schema_version": 4,
        "kind": "tools",
        "pack": {
            "id": pack.id,
            "version": pack.version,
            "sha256": sha256(text.encode()).hexdigest(),
        },
        "pack_fingerprint": pack.fingerprint(),
        "checks_fingerprint": pack.checks_fingerprint(),
        "models": [{"model": m, "engine": "simulated", "host": h} for m, h in models],
        "hosts": {h: {"hostname": h} for _, h in models},
        "touchstone_version": "0.0.0",
        "sampling": pack.sampling.model_dump(),
        "selection": None,
        "simulated": True,
        "started_at": 1000.0,
        "finished_at": 2000.0 if status != "running" else None,
        "status": status,
        **(manifest or {}),
    }
    (root / "bundle.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    config = {"models": [{"id": m, "engine": "simulated", "host": h} for m, h in models]}
    (root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for r in records:
        with (root / "cells" / f"{slug(r.model)}.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n")
    with (root / "events.jsonl").open("a", encoding="utf-8") as fh:
        for event in events:
            fh.write(json.dumps(event) + "\n")
    return root


def standard_records(pack: ToolsPack | None = None) -> list[ToolsRecord]:
    """Two models over the mini pack.

    ``alpha`` (host h1): weather#1 passes (1 call, then an answer), weather#2 fails ``city``
    (called with ``Paris``), chat passes, notes passes with ``code`` not measured. Scored 4,
    passed 3; completion tokens per cell 30, 30, 12, 25; reasoning 5 on weather#1 only.
    ``beta`` (host h2): weather#1 fails ``schema`` and ``city`` (empty arguments) and is cut
    by ``length``, weather#2 is a transport error (http_4xx), chat fails ``none`` (called
    ``now`` with ``{}``: not empty-args, ``now`` has no required parameter), notes has a
    connect error. Scored 2, passed 0.
    """
    w = [("called", "calls"), ("schema", "schema_valid"), ("city", "arg_equals")]
    berlin = [("get_weather", {"city": "Berlin"})]
    return [
        record(
            "alpha",
            "weather",
            1,
            [(i, t, True) for i, t in w],
            [
                turn("", berlin, "tool_calls", 20, 5, reasoning_text="think"),
                turn("Sunny.", completion=10, ttft_s=0.2, e2e_s=0.65),
            ],
            run_s=2.0,
            t_start=1000.0,
            pack=pack,
        ),
        record(
            "alpha",
            "weather",
            2,
            [
                ("called", "calls", True),
                ("schema", "schema_valid", True),
                ("city", "arg_equals", False),
            ],
            [
                turn("", [("get_weather", {"city": "Paris"})], "tool_calls", 20),
                turn("Rain.", completion=10),
            ],
            run_s=3.0,
            t_start=1002.0,
            pack=pack,
        ),
        record(
            "alpha",
            "chat",
            1,
            [("none", "no_call", True)],
            [turn("Hello!", completion=12)],
            run_s=1.0,
            t_start=1005.0,
            pack=pack,
        ),
        record(
            "alpha",
            "notes",
            1,
            [("read", "calls", True), ("code", "python_asserts", None)],
            [
                turn("", [("read", {"path": "notes.txt"})], "tool_calls", 15),
                turn("It says 42.", completion=10),
            ],
            run_s=4.0,
            t_start=1006.0,
            pack=pack,
        ),
        record(
            "beta",
            "weather",
            1,
            [
                ("called", "calls", True),
                ("schema", "schema_valid", False),
                ("city", "arg_equals", False),
            ],
            [turn("", [("get_weather", {})], "length", 64, ttft_s=0.5, e2e_s=0.5)],
            run_s=6.0,
            t_start=1000.0,
            host="h2",
            pack=pack,
        ),
        record(
            "beta",
            "weather",
            2,
            ok=False,
            error_kind="http_4xx",
            run_s=0.1,
            t_start=1006.0,
            host="h2",
            pack=pack,
        ),
        record(
            "beta",
            "chat",
            1,
            [("none", "no_call", False)],
            [turn("", [("now", {})], "tool_calls", 8), turn("Hi.", completion=4)],
            run_s=2.0,
            t_start=1007.0,
            host="h2",
            pack=pack,
        ),
        record(
            "beta",
            "notes",
            1,
            ok=False,
            error_kind="connect",
            run_s=None,
            t_start=None,
            host="h2",
            pack=pack,
        ),
    ]
