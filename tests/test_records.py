"""The record types: EvalResponse is composed of its parts but flat on disk, in SPEC §7 order."""

from __future__ import annotations

import json
from pathlib import Path

from touchstone_ray.engines import ChatResult
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.records import (
    EVAL_RESPONSE_FIELDS,
    CellConditions,
    CellIdentity,
    CellResources,
    ChatOutcome,
    EngineProcessSample,
    EvalResponse,
    GpuSample,
    HolisticReport,
    HostSample,
    ToolCall,
    Verdict,
)
from touchstone_ray.storage import to_json_line

GOLDEN = Path(__file__).parent / "golden" / "eval_response_v1.jsonl"
"""A response line written by the flat EvalResponse before it was split into parts."""

TOOL_FIELDS = {"tool_calls", "tool_calls_raw"}
"""The two fields a ChatResult has beyond the outcome an EvalResponse stores."""

LATER = [
    "answer_flags",
    "engine_down_s",
    "reasoning_s",
    "reasoning_tps",
    "max_tokens_sent",
    "checks",
]
"""Fields added after the golden line was written, in the order they were appended."""


def test_a_line_written_before_the_split_reads_and_writes_back_byte_for_byte() -> None:
    line = GOLDEN.read_text(encoding="utf-8")
    record = EvalResponse.model_validate_json(line)
    # the line predates the fields added later: they read as [] and null and come back
    # appended
    assert (record.answer_flags, record.engine_down_s, record.max_tokens_sent) == ([], None, None)
    assert (record.reasoning_s, record.reasoning_tps, record.checks) == (None, None, [])
    added = (
        ',"answer_flags":[],"engine_down_s":null,"reasoning_s":null,"reasoning_tps":null,'
        '"max_tokens_sent":null,"checks":[]}\n'
    )
    assert to_json_line(record) == line.removesuffix("}\n") + added
    assert list(record.model_dump(mode="json")) == [*json.loads(line), *LATER]
    assert EvalResponse.on_disk_fields() == [*json.loads(line), *LATER]
    assert len(EVAL_RESPONSE_FIELDS) == 71


def test_answer_flags_round_trip_at_the_end_of_the_line() -> None:
    line = json.loads(GOLDEN.read_text(encoding="utf-8"))
    record = EvalResponse.model_validate(line | {"answer_flags": ["template_leak", "empty"]})
    written = to_json_line(record)
    flags = '"answer_flags":["template_leak","empty"]'
    assert written.endswith(
        f',"n_samples":7,{flags},"engine_down_s":null,"reasoning_s":null,"reasoning_tps":null,'
        '"max_tokens_sent":null,"checks":[]}\n'
    )
    assert EvalResponse.model_validate_json(written).answer_flags == ["template_leak", "empty"]


def test_the_parts_cover_every_field_exactly_once() -> None:
    parts = (CellIdentity, ChatOutcome, CellConditions, CellResources)
    names = [name for part in parts for name in part.model_fields]
    assert len(names) == len(set(names)) == 71
    assert set(names) == set(EvalResponse.model_fields) == set(EVAL_RESPONSE_FIELDS)
    assert issubclass(EvalResponse, ChatOutcome) and not issubclass(EvalResponse, ChatResult)
    # what an engine returns is the outcome plus the tool calls, which eval never stores
    assert set(ChatResult.model_fields) == {*ChatOutcome.model_fields, *TOOL_FIELDS}
    assert set(ChatOutcome.model_fields) == {
        *EVAL_RESPONSE_FIELDS[5:6],
        *EVAL_RESPONSE_FIELDS[12:23],
        *EVAL_RESPONSE_FIELDS[24:37],
        *EVAL_RESPONSE_FIELDS[38:44],
        "engine_down_s",
        "reasoning_s",
        "reasoning_tps",
    }


def test_from_chat_keeps_the_engine_result_unchanged() -> None:
    line = json.loads(GOLDEN.read_text(encoding="utf-8"))
    result = ChatResult.model_validate(line)
    identity = CellIdentity.model_validate(line)
    conditions = CellConditions.model_validate(line).model_dump()
    record = EvalResponse.from_chat(identity, result, **conditions)
    assert record.engine_version == "llama.cpp b4500"
    assert record.server_timings == {
        "prompt_n": 59,
        "prompt_ms": 180.5,
        "predicted_n": 27,
        "predicted_ms": 1200.0,
        "cache_n": 1,
    }
    assert record.queue_wait_s == 0.01
    assert record.sys_used_mb is None and record.n_samples is None
    assert list(record.model_dump()) == [*line, *LATER]


def test_from_chat_leaves_the_tool_calls_out_of_the_response_line() -> None:
    line = json.loads(GOLDEN.read_text(encoding="utf-8"))
    call = ToolCall(id="call_1", name="lesen", arguments={"pfad": "a.txt"})
    raw = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lesen"}}
    result = ChatResult.model_validate(line | {"tool_calls": [call], "tool_calls_raw": [raw]})
    assert result.tool_calls == [call] and result.tool_calls_raw == [raw]
    identity = CellIdentity.model_validate(line)
    record = EvalResponse.from_chat(identity, result)
    written = json.loads(to_json_line(record))
    assert list(written) == [*line, *LATER]
    assert not TOOL_FIELDS & set(written)


def test_a_subclass_keeps_the_eval_fields_first_then_its_own() -> None:
    own = ["context", "context_target_tokens", "concurrency", "run", "prompt_tokens_counted"]
    line = json.loads(GOLDEN.read_text(encoding="utf-8"))
    perf = PerfResponse.model_validate(
        line | {"context": "512", "context_target_tokens": 512, "concurrency": 2, "run": 1}
    )
    keys = list(perf.model_dump(mode="json"))
    assert keys[:71] == list(EVAL_RESPONSE_FIELDS)
    assert keys[71:76] == own
    assert PerfResponse.on_disk_fields() == keys


def test_include_and_exclude_still_apply() -> None:
    record = EvalResponse.model_validate_json(GOLDEN.read_text(encoding="utf-8"))
    assert list(record.model_dump(include={"ok", "key", "n_samples"})) == [
        "key",
        "ok",
        "n_samples",
    ]
    assert "response_text" not in record.model_dump(exclude={"response_text"})


def test_every_record_field_is_documented() -> None:
    records = (EvalResponse, Verdict, HolisticReport, HostSample, GpuSample, EngineProcessSample)
    undocumented = [
        f"{record.__name__}.{name}"
        for record in records
        for name, info in record.model_fields.items()
        if not info.description
    ]
    assert undocumented == []
    assert [len(record.model_fields) for record in records] == [71, 16, 7, 18, 8, 5]


def test_checks_round_trip_at_the_end_of_the_line() -> None:
    line = json.loads(GOLDEN.read_text(encoding="utf-8"))
    checks = [
        {"id": "kurz", "type": "max_words", "ok": False, "detail": "93 words > 80"},
        {"id": "deutsch", "type": "language", "ok": None, "detail": "too short"},
    ]
    record = EvalResponse.model_validate(line | {"checks": checks})
    written = to_json_line(record)
    assert written.endswith(
        f',"max_tokens_sent":null,"checks":{json.dumps(checks, separators=(",", ":"))}}}\n'
    )
    assert [c.model_dump() for c in EvalResponse.model_validate_json(written).checks] == checks
