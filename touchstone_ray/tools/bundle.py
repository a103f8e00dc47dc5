"""The tools bundle folder (SPEC §7c): create, open, read its cells.

``<out>/<YYYY-MM-DD_HHMMSS>_tools_<pack_id>/`` with ``bundle.json`` (``kind: tools``,
``pack``, ``pack_fingerprint``, ``checks_fingerprint``), ``pack.yaml`` (the pack as loaded, asserts
inlined, so the bundle needs no other file), ``config.yaml``, ``cells/<model>.jsonl``,
``hosts/<host>.jsonl``, ``events.jsonl``. The manifest, host and event files are the eval
bundle's (:class:`~touchstone_ray.bundle.Bundle`); the cell shards live in ``cells/``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

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
from touchstone_ray.records import SCHEMA_VERSION
from touchstone_ray.toolpack import ToolsPack, dump_tools_pack

__all__ = ["ToolsBundle", "create_tools_bundle", "open_tools_bundle"]


class ToolsBundle(Bundle):
    """A tools bundle: the eval bundle's files, a manifest with ``kind: tools``, cells in
    ``cells/``."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.cells = ResponseShards(self.layout, ShardFolder.CELLS)
        """The cell shards."""

    def check_manifest(self, manifest: Manifest) -> None:
        """Raise BundleError unless ``manifest`` says ``kind: tools``."""
        if manifest.kind != "tools":
            raise BundleError(f"{self.root}: not a tools bundle (bundle.json has no kind: tools)")

    def check_same_checks(self, pack: ToolsPack) -> None:
        """Raise BundleError (one line) unless ``pack`` has the checks this bundle ran with."""
        manifest = self.manifest()
        if manifest.checks_fingerprint != pack.checks_fingerprint():
            raise BundleError(
                f"{self.root}: the pack's checks differ from the bundle's (checks_fingerprint "
                f"{manifest.checks_fingerprint} vs {pack.checks_fingerprint()}); resume with "
                "the pack the bundle was started with"
            )


def create_tools_bundle(
    out: Path,
    pack: ToolsPack,
    config: FleetConfig,
    ray_info: dict[str, Any],
    selection: dict[str, Any] | None,
) -> ToolsBundle:
    """A new tools bundle with a ``running`` manifest (``-2``, ``-3`` … on a name clash)."""
    root = new_bundle_root(out, f"tools_{pack.id}", config)
    layout = Layout(root)
    layout.shard_dir(ShardFolder.CELLS).mkdir()
    text = dump_tools_pack(pack)
    layout.pack.write_text(text, encoding="utf-8")
    bundle = ToolsBundle(root)
    common = running_manifest(config, ray_info)
    bundle.write_manifest(
        {
            "schema_version": SCHEMA_VERSION,
            "kind": "tools",
            "pack": {
                "id": pack.id,
                "version": pack.version,
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
            },
            "pack_fingerprint": pack.fingerprint(),
            "checks_fingerprint": pack.checks_fingerprint(),
            "models": common.pop("models"),
            "sampling": pack.sampling.model_dump(),
            "selection": selection,
            **common,
        }
    )
    return bundle


def open_tools_bundle(root: Path) -> ToolsBundle:
    """Open a tools bundle; raises BundleError when it is not one."""
    if not root.is_dir():
        raise BundleError(f"{root}: no such bundle folder")
    bundle = ToolsBundle(root)
    bundle.manifest()
    return bundle
