"""The public surface of ``report`` and ``judging``: their facade ``__all__`` (pinned), and no
module outside a package imports its private ``_x`` modules or names."""

from __future__ import annotations

import ast
from pathlib import Path

import touchstone_ray
from touchstone_ray import judging, report

PACKAGE = Path(touchstone_ray.__file__).parent

REPORT_ALL = [
    "FORMATS",
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
    "ReportData",
    "RowStats",
    "Strong",
    "Table",
    "answer_blocks",
    "build_document",
    "cell",
    "escape_text",
    "load_report_data",
    "num_cell",
    "parse_formats",
    "render_html",
    "render_markdown",
    "row_stats",
    "write_report",
]

JUDGING_ALL = [
    "ANSWER_SCHEMA",
    "SCORECARD_JSON",
    "SCORECARD_MD",
    "TEMPLATE_VERSION",
    "AggregatedReport",
    "AgreementStat",
    "JudgeConfig",
    "JudgePrompt",
    "JudgeSpec",
    "MissingDimensionsError",
    "ParseFailure",
    "ParsedHolistic",
    "ParsedVerdict",
    "PromptStat",
    "Scorecard",
    "ScorecardRow",
    "VariantComparison",
    "aggregate_reports",
    "answer_prompt",
    "build_scorecard",
    "category_means",
    "compare_variants",
    "dimension_alpha",
    "holistic_prompt",
    "holistic_schema",
    "load_judge_config",
    "load_scorecard",
    "mean_answer_score",
    "parse_answer_reply",
    "parse_holistic_reply",
    "passes_ko",
    "pre_judge_verdict",
    "prompt_stats",
    "quality_pct",
    "rank_rows",
    "ranking_tau",
    "red_flag_kappa",
    "red_flagged_prompts",
    "rubric_level",
    "vote_red_flags",
    "write_scorecard",
]


def test_the_facades_export_exactly_the_pinned_names() -> None:
    assert report.__all__ == REPORT_ALL
    assert judging.__all__ == JUDGING_ALL
    for module in (report, judging):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == []


def _private_imports(path: Path, package: str) -> list[str]:
    """``module:name`` of every import in ``path`` that reaches into ``package``'s privates."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[:2] != ["touchstone_ray", package]:
                continue
            names = [a.name for a in node.names]
            if any(p.startswith("_") for p in parts[2:]) or any(n.startswith("_") for n in names):
                found.append(f"{node.module}:{','.join(names)}")
    return found


def test_no_module_outside_a_package_imports_its_private_names() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        for package in ("report", "judging"):
            if rel.parts[0] == package:
                continue
            hits = _private_imports(path, package)
            if hits:
                offenders[str(rel)] = hits
    assert offenders == {}
