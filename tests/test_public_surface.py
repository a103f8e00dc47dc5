"""The public surface: each facade's ``__all__`` is pinned, every name in it resolves (the
lazy ones too), and no module outside a package imports its private ``_x`` modules or names."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import touchstone_ray

PACKAGE = Path(touchstone_ray.__file__).parent

PINNED: dict[str, list[str]] = {
    "touchstone_ray": [
        "Bundle",
        "EvalOptions",
        "EvalOutcome",
        "EvalResponse",
        "FleetConfig",
        "GpuSample",
        "HolisticReport",
        "HostSample",
        "JudgeConfig",
        "Layout",
        "Pack",
        "PerfOptions",
        "PerfOutcome",
        "PerfResponse",
        "Scorecard",
        "TouchstoneError",
        "Verdict",
        "__version__",
        "load_config",
        "load_judge_config",
        "load_pack",
        "load_scorecard",
        "run_eval",
        "run_judge",
        "run_perf",
        "write_report",
    ],
    "touchstone_ray.answers": [
        "ANSWER_FLAGS",
        "DETECT_LANGUAGES",
        "ECHO_MIN_WORDS",
        "ECHO_PREFIX_WORDS",
        "ECHO_SHARE",
        "ECHO_START_SLACK_WORDS",
        "HTML_LIKE_MARKERS",
        "LANGUAGE_MIN_CONFIDENCE",
        "LANGUAGE_MIN_WORDS",
        "LANGUAGE_PREFIX_CHARS",
        "LENGTH_FINISH",
        "LLAMACPP_TEMPLATES",
        "LOOP_MIN_WORDS",
        "LOOP_SHARE",
        "NGRAM_WORDS",
        "TEMPLATE_LEAK_MIN_HITS",
        "TEMPLATE_MARKERS",
        "AnswerFlag",
        "answer_flags",
        "cut_at_limit",
        "cut_in_reasoning",
        "detect_language",
        "empty",
        "leaked_markers",
        "loop_cover",
        "ngram_hashes",
        "preload",
        "prompt_echo",
        "reasoning_only",
        "repetition_loop",
        "template_families",
        "template_leak",
        "word_hashes",
        "wrong_language",
    ],
    "touchstone_ray.bundle": [
        "GENERATION_FIELDS",
        "JUDGE_ID_PATTERN",
        "LIVE_FILES",
        "SECRET_HINTS",
        "STALE_AFTER_S",
        "TEMPLATE_VERSION",
        "AgentEntry",
        "Bundle",
        "CacheFields",
        "ContextChoice",
        "EmbedSettings",
        "EngineFound",
        "Footprint",
        "HostFacts",
        "HostGpu",
        "JudgeFiles",
        "Layout",
        "Manifest",
        "ModelEntry",
        "PackRef",
        "PerfSettings",
        "PointEntry",
        "RayInfo",
        "ResponseScan",
        "ResponseShards",
        "ServerEntry",
        "ShardFolder",
        "StoredReport",
        "StoredVerdict",
        "TemplateCheck",
        "WarmupProbe",
        "current_of",
        "edit_manifest",
        "find_bundles",
        "frozen_config",
        "history_by_key",
        "history_by_row",
        "is_current",
        "is_unfinalized",
        "judge_ids",
        "last_by_key",
        "last_by_row",
        "new_bundle_root",
        "read_events",
        "read_host_samples",
        "read_manifest",
        "read_stored",
        "record_extras",
        "redact",
        "running_manifest",
        "write_manifest",
    ],
    "touchstone_ray.checks": [
        "CHECKS",
        "SandboxLimits",
        "SandboxResult",
        "SandboxUnavailable",
        "run_checks",
        "run_sandboxed",
        "verdict",
    ],
    "touchstone_ray.doc": [
        "NONE",
        "REPORT_CSS",
        "REPORT_JS",
        "Block",
        "Bullets",
        "Callout",
        "Cell",
        "Chart",
        "Code",
        "Document",
        "Heading",
        "HtmlWriter",
        "Inline",
        "Link",
        "Para",
        "Strong",
        "Table",
        "anchor",
        "cell",
        "escape_text",
        "heading_text",
        "num_cell",
        "quote_lines",
        "render_html",
        "render_markdown",
    ],
    "touchstone_ray.engines": [
        "ChatRequest",
        "ChatResult",
        "Engine",
        "EngineSettings",
        "StreamNormalizer",
        "create_engine",
        "engine_class",
        "known_kinds",
    ],
    "touchstone_ray.fleet": [
        "DEADLINE_SLACK_S",
        "HOST_LABEL",
        "LIVENESS_INTERVAL_S",
        "PREFLIGHT_TIMEOUT_S",
        "PROMETHEUS_CELL_METRICS",
        "PROMETHEUS_HOST_METRICS",
        "STREAMS_PER_PROCESS",
        "TASK_NAMES_PER_MODEL",
        "WARMUP_PROMPT",
        "AgentClient",
        "Call",
        "Cell",
        "ClientSpec",
        "Dispatcher",
        "HostClient",
        "Lane",
        "MonitorSet",
        "NodeInfo",
        "Pinned",
        "PreflightStart",
        "PromptCount",
        "StartLane",
        "abort_guard",
        "actor_ready_timeout_s",
        "agent_entries",
        "agents_on",
        "call_deadline_s",
        "cell_messages",
        "check_hosts",
        "client_spec",
        "close_actors",
        "cpu_model",
        "current_nodes",
        "dashboard_exposure_warning",
        "ensure_ray",
        "estimate_prompt_tokens",
        "fits",
        "gpu_inventory",
        "host_facts",
        "input_truncated",
        "is_loopback",
        "max_stream_workers",
        "monitor_name",
        "nonce_line",
        "pin",
        "preflight_problems",
        "preflight_warnings",
        "probe_reason",
        "probe_warning",
        "ray_logging_level",
        "resolve_address",
        "resolve_hosts",
        "run_hosts",
        "show_ray_logs",
        "spawn_client",
        "spawn_pinned",
        "split_streams",
        "start_clients",
        "start_failed_line",
        "start_local",
        "store_servers",
        "url_host",
    ],
    "touchstone_ray.judging": [
        "ANSWER_SCHEMA",
        "TEMPLATE_VERSION",
        "JudgeConfig",
        "JudgePrompt",
        "JudgeSpec",
        "ParseFailure",
        "ParsedHolistic",
        "ParsedVerdict",
        "answer_prompt",
        "holistic_prompt",
        "holistic_schema",
        "load_judge_config",
        "parse_answer_reply",
        "parse_holistic_reply",
        "run_judge",
    ],
    "touchstone_ray.report": [
        "FORMATS",
        "ReportData",
        "answer_blocks",
        "build_document",
        "ko_rule_lines",
        "load_report_data",
        "parse_formats",
        "write_report",
    ],
    "touchstone_ray.scoring": [
        "AggregatedReport",
        "AgreementStat",
        "MissingDimensionsError",
        "PromptStat",
        "RepeatStability",
        "RowStats",
        "Scorecard",
        "ScorecardRow",
        "VariantComparison",
        "aggregate_reports",
        "agreement_json",
        "build_scorecard",
        "category_means",
        "compare_variants",
        "counts_for_decode",
        "counts_for_prompt",
        "dimension_alpha",
        "ingest_reply",
        "load_scorecard",
        "mean_answer_score",
        "passes_ko",
        "pre_judge_verdict",
        "prompt_stats",
        "quality_pct",
        "rank_rows",
        "ranking_table",
        "ranking_tau",
        "red_flag_kappa",
        "red_flagged_prompts",
        "repeat_stability",
        "row_stats",
        "rubric_level",
        "speed_exclusions",
        "under_load",
        "vote_red_flags",
        "write_scorecard",
    ],
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_each_facade_exports_exactly_the_pinned_names(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == PINNED[name]
    assert [n for n in module.__all__ if getattr(module, n, None) is None] == []


def test_a_lazy_facade_refuses_an_unknown_name() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = touchstone_ray.nope  # type: ignore[attr-defined]


def _private_imports(tree: ast.AST, package: str) -> list[str]:
    """``module:name`` of every import in ``tree`` that reaches into ``package``'s privates."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[:2] != ["touchstone_ray", package]:
                continue
            names = [a.name for a in node.names]
            if any(p.startswith("_") for p in parts[2:]) or any(n.startswith("_") for n in names):
                found.append(f"{node.module}:{','.join(names)}")
    return found


def test_no_module_outside_a_package_imports_its_private_names() -> None:
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hits = [h for pkg in packages if rel.parts[0] != pkg for h in _private_imports(tree, pkg)]
        if hits:
            offenders[str(rel)] = hits
    assert offenders == {}


def test_the_private_import_check_catches_one() -> None:
    tree = ast.parse("from touchstone_ray.engines._http import new_session")
    assert _private_imports(tree, "engines") == ["touchstone_ray.engines._http:new_session"]
    assert _private_imports(tree, "bundle") == []
