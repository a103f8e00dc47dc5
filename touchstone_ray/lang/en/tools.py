"""English: the labels of the tools bench's report, its paired comparison and its web UI
pages (SPEC §7c; the pack's ``language`` picks the table). ``d_<key>`` is the definition of
the figure under the label ``<key>``: the report lists them and the HTML heads carry them as
tooltips."""

from __future__ import annotations

TOOLS: dict[str, str] = {
    # report: setup
    "title": "Tools report",
    "setup": "Setup",
    "pack": "Pack",
    "checks_fingerprint": "Checks fingerprint",
    "pack_fingerprint": "Pack fingerprint",
    "status": "Status",
    "models": "Models",
    "hosts": "Hosts",
    "items": "Items",
    "cells": "Cells",
    "started": "Started",
    "finished": "Finished",
    "simulated_title": "Simulated",
    "simulated": (
        "Simulated: a simulated model produced these cells; they demonstrate the pipeline, "
        "they say nothing about real models."
    ),
    "malformed": "{n} lines of cells/ were skipped while reading (malformed, or not a cell).",
    "running_note": "The run is still going: {done} of {planned} cells have a record.",
    # report: per model
    "per_model": "Per model",
    "model": "Model",
    "host": "Host",
    "passed": "passed",
    "pass_pct": "pass %",
    "ci": "95 % CI",
    "checks": "checks ok/failed/n.m.",
    "cutoffs": "length cut-offs",
    "empty_args": "empty args",
    "schema_errors": "schema errors",
    "transport": "transport errors",
    "http_4xx": "4xx",
    "missing": "missing",
    "tokens_median": "completion tok/cell",
    "tokens_total": "completion tok Σ",
    "reasoning_median": "reasoning tok/cell",
    "reasoning_total": "reasoning tok Σ",
    "run_s": "run time Σ s",
    "wall_s": "wall s",
    "turns": "turns/cell",
    "decode_tps": "decode tok/s",
    "d_passed": (
        "Cells passed of the cells scored (ok, at least one check measured); a cell passes "
        "when every measured check is ok. Transport errors are no model result and stay out."
    ),
    "d_pass_pct": "passed / scored × 100 (%).",
    "d_ci": "Wilson's 95 % score interval of the pass share (%).",
    "d_checks": (
        "Check outcomes of the ok cells: ok / failed / not measured (the check could not run; "
        "never a pass)."
    ),
    "d_cutoffs": "Ok cells in which a turn ended with finish_reason length (cells).",
    "d_empty_args": (
        'Calls with empty arguments ({}, "", null) to a tool that has required parameters (calls).'
    ),
    "d_schema_errors": "Failed schema_valid checks (checks).",
    "d_transport": "Cells without a model result (ok false): retried, then kept as errors.",
    "d_http_4xx": "Of those, requests the server refused (error_kind http_4xx).",
    "d_missing": "Planned cells without any record (the run stopped or is still going).",
    "d_tokens_median": "Median per ok cell of the completion tokens over its turns (tokens).",
    "d_tokens_total": "Σ completion tokens of the ok cells (tokens).",
    "d_reasoning_median": "Median per ok cell of the reasoning tokens over its turns (tokens).",
    "d_reasoning_total": "Σ reasoning tokens of the ok cells (tokens).",
    "d_run_s": "Σ of every cell's run time, first request to last byte (s).",
    "d_wall_s": "Last cell end − first cell start of the model (s).",
    "d_turns": "Median model answers per ok cell.",
    "d_decode_tps": (
        "Median over the turns of ok, uncontended, unthrottled cells of (completion tokens − 1) "
        "/ (E2E − TTFT) (tokens/s)."
    ),
    # report: chart
    "pass_speed": "Pass rate vs speed",
    "x_run": "median time per cell (s)",
    "x_decode": "median decode tok/s",
    "y_pass": "cells passed %",
    "chart_empty": "no model was scored",
    "chart_caption": "One point per model, with its Wilson 95 % interval.",
    # report: per item
    "per_item": "Per item",
    "item": "Item",
    "item_title": "Title",
    "item_detail": "Per item and model",
    "mark": "pass",
    "checks_ok": "checks ok",
    "finish": "finish reasons",
    "calls_turn": "calls per turn",
    "failed_checks": "failed checks",
    "not_measured": "not measured",
    "d_mark": "✓ every scored cell passed, ✗ none did, k/n some, – none scored.",
    "d_checks_ok": "Checks ok of the checks measured, over the item's ok cells.",
    "d_finish": "Finish reason of every turn, counted.",
    "d_calls_turn": "Calls in each turn, one group per cell (repeats in order).",
    # report: cells
    "cells_section": "Cells",
    "turn": "Turn {n}",
    "answer": "Answer",
    "reasoning": "Reasoning",
    "calls": "Calls",
    "tool": "Tool",
    "arguments": "Arguments",
    "not_json": "not valid JSON",
    "world": "World replies",
    "check": "Check",
    "type": "Type",
    "outcome": "Outcome",
    "detail": "Detail",
    "ok": "ok",
    "failed": "failed",
    "error": "Error",
    "no_text": "(no text)",
    "chars_cut": "… ({n} characters in all)",
    "of_reasoning": "(of them {n} reasoning)",
    "turn_figures": "finish {finish} · {tokens} tokens · TTFT {ttft} s · E2E {e2e} s",
    "method": "How to read this",
    # tools-compare
    "compare_title": "Tools comparison",
    "side_a": "A",
    "side_b": "B",
    "pairs": "pairs",
    "a_passed": "A passed",
    "b_passed": "B passed",
    "only_a": "A only (b)",
    "only_b": "B only (c)",
    "mcnemar": "McNemar p",
    "unpaired": "unpaired A/B",
    "turns_ab": "turns A/B",
    "tokens_ab": "completion tok A/B",
    "reasoning_ab": "reasoning tok A/B",
    "discordant": "Discordant pairs",
    "no_discordant": "none",
    "compare_method": (
        "Cells paired by item and repeat where both sides were scored. b: passed in A only, "
        "c: passed in B only; McNemar's exact test: two-sided binomial test of b in b + c at "
        "0.5 (p = 1 when b + c = 0). Medians per cell over the paired cells."
    ),
    # web UI
    "ui_pass": "pass rate",
    "ui_best": "best",
    "ui_cells_live": "cells",
    "ui_no_summary": "no cell scored yet",
}
"""Labels and definitions of the tools report, ``tools-compare`` and the UI's tools pages."""
