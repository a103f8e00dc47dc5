"""Every path of an eval bundle (SPEC §7) and a perf bundle (SPEC §7b), in one place.

Eval::

    bundle.json  pack.yaml  config.yaml  events.jsonl
    responses/<slug(model)>.jsonl        hosts/<slug(host)>.jsonl
    judgements/<judge>/verdicts.jsonl | reports.jsonl | calibration.jsonl | <marker>
    scorecard.json  scorecard.md  report.md  report.html  export/

Perf: ``bundle.json``, ``config.yaml``, ``events.jsonl``, ``hosts/``, ``points/<model>.jsonl``,
``embed/<model>.jsonl``, ``summary.json``, ``report.md``, ``report.html``.

Shard and host file names are :func:`~touchstone_ray.storage.slug`-ged (``qwen3:8b`` →
``qwen3_8b.jsonl``); judge ids are already file-safe (``JUDGE_ID_PATTERN``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from touchstone_ray.storage import slug

__all__ = ["JUDGE_ID_PATTERN", "LIVE_FILES", "Layout", "ShardFolder"]

JUDGE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A judge id becomes the folder ``judgements/<id>/``: letters, digits, ``._-``, ≤ 64 chars."""

LIVE_FILES = ("bundle.json", "events.jsonl", "responses/*.jsonl", "hosts/*.jsonl", "points/*.jsonl")
"""The files a live driver writes (eval and perf bundles); their newest mtime is its heartbeat."""


class ShardFolder(StrEnum):
    """A folder of one JSONL shard per model (``<folder>/<slug(model)>.jsonl``); the value is
    the folder's name."""

    RESPONSES = "responses"
    """Eval: one :class:`~touchstone_ray.records.EvalResponse` per line."""
    POINTS = "points"
    """Perf: one request per line (:class:`~touchstone_ray.perf.records.PerfResponse`)."""
    EMBED = "embed"
    """Perf ``--embed``: one embedding request per line."""
    CELLS = "cells"
    """Tools: one :class:`~touchstone_ray.tool_records.ToolsRecord` per line."""


@dataclass(frozen=True)
class Layout:
    """The paths of one bundle folder ``root`` (nothing is created or read here)."""

    root: Path

    # top level ----------------------------------------------------------------------------
    @property
    def manifest(self) -> Path:
        """``bundle.json``."""
        return self.root / "bundle.json"

    @property
    def pack(self) -> Path:
        """``pack.yaml``, the frozen pack (eval bundles)."""
        return self.root / "pack.yaml"

    @property
    def config(self) -> Path:
        """``config.yaml``, the frozen fleet config (no secrets)."""
        return self.root / "config.yaml"

    @property
    def events(self) -> Path:
        """``events.jsonl``."""
        return self.root / "events.jsonl"

    @property
    def scorecard_json(self) -> Path:
        """``scorecard.json``."""
        return self.root / "scorecard.json"

    @property
    def scorecard_md(self) -> Path:
        """``scorecard.md``."""
        return self.root / "scorecard.md"

    def report(self, ext: str, stem: str = "report") -> Path:
        """``<stem>.<ext>``: ``report.md``, ``report.html``."""
        return self.root / f"{stem}.{ext}"

    def charts_dir(self, name: str = "report-charts") -> Path:
        """The SVG folder of a Markdown report (``report-charts/``, ``rating-task-charts/``)."""
        return self.root / name

    @property
    def export_dir(self) -> Path:
        """``export/`` (``touchstone-ray export``)."""
        return self.root / "export"

    # shards -------------------------------------------------------------------------------
    @property
    def responses_dir(self) -> Path:
        """``responses/``."""
        return self.shard_dir(ShardFolder.RESPONSES)

    def shard_dir(self, folder: ShardFolder) -> Path:
        """``<folder>/`` (``responses/``, ``points/``, ``embed/``)."""
        return self.root / folder.value

    def shard(self, model: str, folder: ShardFolder = ShardFolder.RESPONSES) -> Path:
        """``<folder>/<slug(model)>.jsonl``."""
        return self.shard_dir(folder) / f"{slug(model)}.jsonl"

    def shards(self, folder: ShardFolder = ShardFolder.RESPONSES) -> list[Path]:
        """The existing ``<folder>/*.jsonl``, sorted by name."""
        return sorted(self.shard_dir(folder).glob("*.jsonl"))

    @property
    def hosts_dir(self) -> Path:
        """``hosts/``."""
        return self.root / "hosts"

    def host(self, host: str) -> Path:
        """``hosts/<slug(host)>.jsonl``."""
        return self.hosts_dir / f"{slug(host)}.jsonl"

    def host_files(self) -> list[Path]:
        """The existing ``hosts/*.jsonl``, sorted by name."""
        return sorted(self.hosts_dir.glob("*.jsonl"))

    # judgements ---------------------------------------------------------------------------
    @property
    def judgements_dir(self) -> Path:
        """``judgements/``."""
        return self.root / "judgements"

    def judge_dir(self, judge: str) -> Path:
        """``judgements/<judge>/``."""
        return self.judgements_dir / judge

    def verdicts(self, judge: str) -> Path:
        """``judgements/<judge>/verdicts.jsonl``."""
        return self.judge_dir(judge) / "verdicts.jsonl"

    def reports(self, judge: str) -> Path:
        """``judgements/<judge>/reports.jsonl`` (holistic reports)."""
        return self.judge_dir(judge) / "reports.jsonl"

    def calibration(self, judge: str) -> Path:
        """``judgements/<judge>/calibration.jsonl``."""
        return self.judge_dir(judge) / "calibration.jsonl"

    def judge_marker(self, judge: str, name: str) -> Path:
        """``judgements/<judge>/<name>`` (a marker file such as the ingest marker)."""
        return self.judge_dir(judge) / name

    def judge_dirs(self) -> list[Path]:
        """The existing ``judgements/*/`` folders, sorted by name."""
        if not self.judgements_dir.is_dir():
            return []
        return sorted(p for p in self.judgements_dir.iterdir() if p.is_dir())

    # perf ---------------------------------------------------------------------------------
    @property
    def summary(self) -> Path:
        """``summary.json`` (perf)."""
        return self.root / "summary.json"

    def live_files(self) -> list[Path]:
        """The existing files of :data:`LIVE_FILES`."""
        return [p for pattern in LIVE_FILES for p in self.root.glob(pattern)]
