"""Reports of a bundle (SPEC §6, §10): ``report.md`` (Obsidian), ``report.html`` (one
self-contained file with charts), the unjudged rating task, ``compare`` across bundles and
flat ``export`` tables.

matplotlib is imported only when a chart is drawn, pyarrow only by a parquet export.
"""

from __future__ import annotations

from touchstone_ray.report._build import FORMATS, build_document, write_report
from touchstone_ray.report._data import ReportData, RowStats, load_report_data, row_stats

__all__ = [
    "FORMATS",
    "ReportData",
    "RowStats",
    "build_document",
    "load_report_data",
    "row_stats",
    "write_report",
]
