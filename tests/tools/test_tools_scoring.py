"""The figures of a tools bundle: per model, per item, summary.json, the tolerant reader."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from tools_bundles import mini_pack, record, standard_records, turn, write_tools_bundle

from touchstone_ray.errors import BundleError
from touchstone_ray.scoring.tools import (
    ToolsSummary,
    has_empty_args,
    is_tools_bundle,
    load_tools_bundle,
    load_tools_summary,
    pass_mark,
    read_tools_records,
    selected_items,
    tools_summary,
    write_tools_summary,
)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_tools_bundle(tmp_path / "b", standard_records())


def test_per_model_figures_are_exact(bundle: Path) -> None:
    summary = tools_summary(load_tools_bundle(bundle))
    alpha, beta = summary.models
    assert alpha.model_dump() == {
        "model": "alpha",
        "engine": "simulated",
        "hosts": ["h1"],
        "cells_planned": 4,
        "cells": 4,
        "cells_missing": 0,
        "scored": 4,
        "passed": 3,
        "failed": 1,
        "not_scored": 0,
        "pass_share": 0.75,
        "pass_ci_low": 0.30064184258240184,
        "pass_ci_high": 0.9544127391902995,
        "checks_ok": 7,
        "checks_failed": 1,
        "checks_not_measured": 1,
        "length_cutoffs": 0,
        "calls": 3,
        "empty_args": 0,
        "schema_errors": 0,
        "transport_errors": 0,
        "http_4xx": 0,
        "completion_tokens_median": 27.5,
        "completion_tokens_total": 97,
        "reasoning_tokens_median": 5.0,
        "reasoning_tokens_total": 5,
        "run_s_total": 10.0,
        "run_s_median": 2.5,
        "wall_s": 10.0,
        "turns_median": 2.0,
        "decode_tps_median": 14 / 0.9,
    }
    assert beta.model_dump() == {
        "model": "beta",
        "engine": "simulated",
        "hosts": ["h2"],
        "cells_planned": 4,
        "cells": 4,
        "cells_missing": 0,
        "scored": 2,
        "passed": 0,
        "failed": 2,
        "not_scored": 0,
        "pass_share": 0.0,
        "pass_ci_low": 0.0,
        "pass_ci_high": 0.657619772493347,
        "checks_ok": 1,
        "checks_failed": 3,
        "checks_not_measured": 0,
        "length_cutoffs": 1,
        "calls": 2,
        "empty_args": 1,
        "schema_errors": 1,
        "transport_errors": 2,
        "http_4xx": 1,
        "completion_tokens_median": 38.0,
        "completion_tokens_total": 76,
        "reasoning_tokens_median": None,
        "reasoning_tokens_total": None,
        "run_s_total": 8.1,
        "run_s_median": 4.0,
        "wall_s": 9.0,
        "turns_median": 1.5,
        "decode_tps_median": (7 / 0.9 + 3 / 0.9) / 2,
    }
    assert [p.model_dump() for p in summary.pass_speed] == [
        {
            "model": "alpha",
            "pass_share": 0.75,
            "pass_ci_low": 0.30064184258240184,
            "pass_ci_high": 0.9544127391902995,
            "run_s_median": 2.5,
            "decode_tps_median": 14 / 0.9,
        },
        {
            "model": "beta",
            "pass_share": 0.0,
            "pass_ci_low": 0.0,
            "pass_ci_high": 0.657619772493347,
            "run_s_median": 4.0,
            "decode_tps_median": (7 / 0.9 + 3 / 0.9) / 2,
        },
    ]


def test_per_item_rows_are_exact(bundle: Path) -> None:
    items = {row.item_id: row for row in tools_summary(load_tools_bundle(bundle)).items}
    assert list(items) == ["weather", "chat", "notes"]
    weather = items["weather"]
    assert (weather.title, weather.checks) == ("Weather in Berlin", ["called", "schema", "city"])
    assert weather.models["alpha"].model_dump() == {
        "cells": 2,
        "scored": 2,
        "passed": 1,
        "mark": "1/2",
        "checks_ok": 5,
        "checks_measured": 6,
        "finish_reasons": {"stop": 2, "tool_calls": 2},
        "calls_per_turn": [[1, 0], [1, 0]],
        "failed_checks": ["city"],
        "not_measured": [],
        "transport_errors": 0,
    }
    assert weather.models["beta"].model_dump() == {
        "cells": 2,
        "scored": 1,
        "passed": 0,
        "mark": "✗",
        "checks_ok": 1,
        "checks_measured": 3,
        "finish_reasons": {"length": 1},
        "calls_per_turn": [[1]],
        "failed_checks": ["schema", "city"],
        "not_measured": [],
        "transport_errors": 1,
    }
    assert items["chat"].models["alpha"].mark == "✓"
    assert items["chat"].models["beta"].failed_checks == ["none"]
    assert items["notes"].models["alpha"].not_measured == ["code"]
    assert items["notes"].models["alpha"].mark == "✓"
    notes_beta = items["notes"].models["beta"]
    assert (notes_beta.mark, notes_beta.cells, notes_beta.transport_errors) == ("–", 1, 1)


def test_pass_marks() -> None:
    assert [pass_mark(0, 0), pass_mark(2, 2), pass_mark(3, 0), pass_mark(3, 2)] == [
        "–",
        "✓",
        "✗",
        "2/3",
    ]


def test_empty_arguments_count_only_for_tools_with_required_parameters() -> None:
    pack = mini_pack()
    assert has_empty_args("get_weather", {}, pack)
    assert has_empty_args("get_weather", "  ", pack)
    assert has_empty_args("get_weather", None, pack)
    assert has_empty_args("nope", {}, pack)  # a tool the pack does not have
    assert not has_empty_args("now", {}, pack)  # no required parameter
    assert not has_empty_args("get_weather", {"city": ""}, pack)
    assert not has_empty_args("get_weather", 0, pack)


def test_summary_json_round_trips_and_names_the_pack(bundle: Path) -> None:
    path = write_tools_summary(bundle)
    assert path == bundle / "summary.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    pack = mini_pack()
    assert {k: data[k] for k in list(data)[:13]} == {
        "schema_version": 1,
        "kind": "tools",
        "pack_id": "mini-tools",
        "pack_version": 3,
        "pack_title": "Mini tools",
        "language": "en",
        "pack_fingerprint": pack.fingerprint(),
        "checks_fingerprint": pack.checks_fingerprint(),
        "simulated": True,
        "status": "done",
        "n_items": 3,
        "malformed_lines": 0,
        "models": data["models"],
    }
    assert list(data) == [
        "schema_version", "kind", "pack_id", "pack_version", "pack_title", "language",
        "pack_fingerprint", "checks_fingerprint", "simulated", "status", "n_items",
        "malformed_lines", "models", "items", "pass_speed",
    ]  # fmt: skip
    assert load_tools_summary(bundle) == ToolsSummary.model_validate(data)


def test_the_reader_skips_a_torn_tail_quarantines_bad_lines_and_dedupes(tmp_path: Path) -> None:
    records = standard_records()
    root = write_tools_bundle(tmp_path / "b", records)
    shard = root / "cells" / "beta.jsonl"
    retry = record("beta", "notes", 1, [("read", "calls", True)], [turn("42")], host="h2")
    with shard.open("a", encoding="utf-8") as fh:
        fh.write("not json\n")
        fh.write(json.dumps({"key": "beta|x|1", "ok": True}) + "\n")  # not a tools record
        fh.write(json.dumps(retry.model_dump(mode="json")) + "\n")  # ok wins over the error
        fh.write('{"key": "beta|chat|2", "ok": tr')  # torn
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found, skipped = read_tools_records(root)
    assert skipped == 2
    assert len(caught) == 2
    assert "beta.jsonl:5: malformed line quarantined" in str(caught[0].message)
    assert "'beta|x|1' is not a tools record" in str(caught[1].message)
    by_key = {r.key: r for r in found}
    assert len(by_key) == 8
    assert by_key["beta|notes|1"].ok is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = tools_summary(load_tools_bundle(root))
    beta = summary.model_row("beta")
    assert beta is not None
    figures = (beta.scored, beta.passed, beta.transport_errors, summary.malformed_lines)
    assert figures == (3, 1, 1, 2)
    assert shard.read_text(encoding="utf-8").endswith("tr")  # nothing written


def test_missing_cells_and_a_limited_selection(tmp_path: Path) -> None:
    records = [r for r in standard_records() if r.item_id == "weather"]
    root = write_tools_bundle(
        tmp_path / "b", records, status="running", manifest={"selection": {"limit": 2}}
    )
    data = load_tools_bundle(root)
    assert [it.id for it in selected_items(data.pack, data.manifest)] == ["weather", "chat"]
    alpha = tools_summary(data).models[0]
    assert (alpha.cells_planned, alpha.cells, alpha.cells_missing) == (3, 2, 1)
    root2 = write_tools_bundle(
        tmp_path / "c", records, manifest={"selection": {"items": ["notes", "weather"]}}
    )
    assert [it.id for it in load_tools_bundle(root2).items] == ["weather", "notes"]


def test_only_tools_bundles_are_read(tmp_path: Path) -> None:
    root = write_tools_bundle(tmp_path / "b", standard_records(), manifest={"kind": "perf"})
    assert not is_tools_bundle(root)
    assert not is_tools_bundle(tmp_path / "nothing")
    with pytest.raises(BundleError, match=r"not a tools bundle \(bundle.json has kind: perf\)"):
        load_tools_bundle(root)
    with pytest.raises(BundleError, match=r"summary\.json: missing"):
        load_tools_summary(root)
    ok = write_tools_bundle(tmp_path / "ok", standard_records())
    assert is_tools_bundle(ok)
    (ok / "pack.yaml").write_text("kind: tools\nid: x\n", encoding="utf-8")
    with pytest.raises(BundleError, match="the frozen pack cannot be read"):
        load_tools_bundle(ok)
