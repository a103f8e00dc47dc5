"""The perf bundle folder (SPEC §7b): create, open, read its requests, find complete points.

``<out>/<YYYY-MM-DD_HHMMSS>_perf_<config name>/`` with ``bundle.json`` (``kind: perf``, the
points planned), ``config.yaml``, ``points/<model>.jsonl``, ``hosts/<host>.jsonl``,
``events.jsonl``, ``summary.json``. The manifest, host and event files are the eval bundle's
(:class:`~touchstone_ray.bundle.Bundle`); only the request shards live in ``points/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from touchstone_ray.bundle import (
    Bundle,
    Layout,
    Manifest,
    ResponseShards,
    ShardFolder,
    new_bundle_root,
    running_manifest,
)
from touchstone_ray.config import FleetConfig
from touchstone_ray.errors import BundleError
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.records import SCHEMA_VERSION
from touchstone_ray.storage import slug


class PerfBundle(Bundle):
    """A perf bundle: the eval bundle's files, a manifest with ``kind: perf`` and no pack."""

    def check_manifest(self, manifest: Manifest) -> None:
        """Raise BundleError unless ``manifest`` says ``kind: perf``."""
        if manifest.kind != "perf":
            raise BundleError(f"{self.root}: not a perf bundle (bundle.json has no kind: perf)")


def create_perf_bundle(
    out: Path,
    config: FleetConfig,
    config_name: str,
    ray_info: dict[str, Any],
    planned: list[dict[str, Any]],
    settings: dict[str, Any],
) -> PerfBundle:
    """A new perf bundle with a ``running`` manifest (``-2``, ``-3`` … on a name clash)."""
    root = new_bundle_root(out, f"perf_{slug(config_name)}", config)
    Layout(root).shard_dir(ShardFolder.POINTS).mkdir()
    bundle = PerfBundle(root)
    common = running_manifest(config, ray_info)
    bundle.write_manifest(
        {
            "schema_version": SCHEMA_VERSION,
            "kind": "perf",
            "config_name": config_name,
            "models": common.pop("models"),
            "points": planned,
            "settings": settings,
            **common,
        }
    )
    return bundle


def open_perf_bundle(root: Path) -> PerfBundle:
    """Open a perf bundle; raises BundleError when it is not one."""
    bundle = PerfBundle(root)
    if not root.is_dir():
        raise BundleError(f"{root}: no such bundle folder")
    bundle.manifest()
    return bundle


def read_points(root: Path, repair: bool = False) -> list[PerfResponse]:
    """Every request of the bundle, de-duplicated by key (SPEC §7 rules); ``repair`` first
    cuts each shard back to its last newline (the fragment kept in ``<shard>.torn``)."""
    shards = ResponseShards(Layout(root), ShardFolder.POINTS)
    if repair:
        shards.repair()
    out: list[PerfResponse] = []
    for rec in shards.records():
        try:
            out.append(PerfResponse.model_validate(rec))
        except ValidationError as exc:
            raise BundleError(f"{root}: a request line is not a perf record: {exc}") from exc
    return out


def complete_points(records: list[PerfResponse], planned_runs: dict[str, int]) -> set[str]:
    """Point prefixes (``model|host|context|concurrency``) with at least their planned number
    of requests recorded."""
    seen: dict[str, int] = {}
    for r in records:
        prefix = r.key.rsplit("|", 1)[0]
        seen[prefix] = seen.get(prefix, 0) + 1
    return {p for p, n in seen.items() if n >= planned_runs.get(p, 1)}
