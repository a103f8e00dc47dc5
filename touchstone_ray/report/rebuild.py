"""``report --runs DIR``: rebuild every report below a folder, one line per bundle.

Per bundle (:func:`~touchstone_ray.bundle.find_bundles`, sorted by path): a perf bundle gets
its perf report; a tools bundle its ``summary.json`` and tools report; an eval bundle with
``scorecard.json`` its judged report (and ``judge_quality.md`` when an outside rater's
critique is stored); one without a scorecard its rating task when it had one
(``rating-task.md``), else it is skipped. A bundle that cannot be read gives its error on its
own line and the others go on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from touchstone_ray.bundle import Bundle, Layout, find_bundles
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.report._build import TASK_STEM, write_report
from touchstone_ray.report.critique import write_judge_quality

__all__ = ["RebuildLine", "rebuild_reports"]


@dataclass(frozen=True)
class RebuildLine:
    """What happened to one bundle."""

    bundle: Path
    written: tuple[Path, ...] = ()
    skipped: str | None = None
    """Why nothing was written (one line), or ``None``."""
    error: str | None = None
    """The bundle's error (one line), or ``None``."""

    def __str__(self) -> str:
        if self.error is not None:
            return f"{self.bundle}: error: {self.error}"
        if self.skipped is not None:
            return f"{self.bundle}: skipped ({self.skipped})"
        return f"{self.bundle}: " + ", ".join(p.name for p in self.written)


def _rebuild(root: Path, formats: Sequence[str]) -> RebuildLine:
    from touchstone_ray.perf.report import is_perf_bundle, write_perf_report
    from touchstone_ray.report.tools import write_tools_report
    from touchstone_ray.scoring.tools import is_tools_bundle

    fmt = ",".join(formats)
    if is_tools_bundle(root):
        return RebuildLine(root, tuple(write_tools_report(root, formats)))
    Bundle.open(root).manifest()  # an unreadable bundle is its own error line
    layout = Layout(root)
    if is_perf_bundle(root):
        return RebuildLine(root, tuple(write_perf_report(root, formats)))
    if layout.scorecard_json.exists():
        written = write_report(root, fmt)
        quality = write_judge_quality(root)
        return RebuildLine(root, tuple(written) + ((quality,) if quality else ()))
    if layout.report("md", TASK_STEM).exists() or layout.report("html", TASK_STEM).exists():
        return RebuildLine(root, tuple(write_report(root, fmt, unjudged=True)))
    return RebuildLine(root, skipped="no scorecard and no rating task")


def rebuild_reports(runs: Path, formats: Sequence[str] = ("md", "html")) -> Iterator[RebuildLine]:
    """Rebuild the report of every bundle below ``runs`` (module docstring), yielding one
    :class:`RebuildLine` per bundle as it is done."""
    for root in find_bundles(Path(runs)):
        try:
            yield _rebuild(root, formats)
        except (TouchstoneError, OSError) as exc:
            yield RebuildLine(root, error=str(exc).splitlines()[0] if str(exc) else repr(exc))
