"""Reports of a bundle (SPEC §6, §10): ``report.md`` (Obsidian), ``report.html`` (one
self-contained file with charts), the unjudged rating task, ``compare`` across bundles and
flat ``export`` tables.

The names below are the package's public surface (a test pins them); the ``_x`` modules are
its implementation. Reports are built as :mod:`touchstone_ray.doc` documents from the figures
of :mod:`touchstone_ray.scoring`; :func:`answer_blocks` and :func:`ko_rule_lines` let the web
UI show the same answer blocks and K.-o. rule. Public modules: :mod:`.compare` (with
:mod:`.perf_join`, perf bundles joined onto eval rows), :mod:`.export`, :mod:`.unjudged`,
:mod:`.critique` (part B of the rating task, ``judge_quality.md``), :mod:`.rebuild`
(``report --runs``), :mod:`.tools` (a tools bundle's report) and :mod:`.tools_compare`
(``tools-compare``).

matplotlib is imported only when a chart is drawn, pyarrow only by a parquet export.
"""

from __future__ import annotations

from touchstone_ray.report._answers import answer_blocks
from touchstone_ray.report._build import FORMATS, build_document, parse_formats, write_report
from touchstone_ray.report._data import ReportData, load_report_data
from touchstone_ray.report._sections import ko_rule_lines

__all__ = [
    "FORMATS",
    "ReportData",
    "answer_blocks",
    "build_document",
    "ko_rule_lines",
    "load_report_data",
    "parse_formats",
    "write_report",
]
