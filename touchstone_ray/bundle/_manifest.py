"""``bundle.json``: the typed manifest of an eval or perf bundle (SPEC §7, §7b).

:class:`Manifest` documents every field the project writes; keys it does not know (written by
a newer version, or a section another stage adds) are kept (``extra="allow"``), and a read →
write round trip keeps the keys in the order they were written, so an unchanged manifest is
written back byte for byte. :func:`read_manifest` is the one reader; :func:`write_manifest`
the one writer (atomic: temp file, fsync, rename). Updates go through
:meth:`touchstone_ray.bundle.Bundle.edit_manifest` (read, modify, atomic write).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from touchstone_ray.errors import BundleError
from touchstone_ray.storage import atomic_write_json

__all__ = ["Manifest", "edit_manifest", "read_manifest", "write_manifest"]

Number = int | float
"""A JSON number kept as written (an int stays an int, so a round trip keeps the bytes)."""


class Manifest(BaseModel):
    """The fields of ``bundle.json``; every one optional on read (older bundles lack some)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    schema_version: int | None = None
    """Record schema version of the bundle (``touchstone_ray.records.SCHEMA_VERSION``)."""
    kind: str | None = None
    """``perf`` for a perf bundle (SPEC §7b); absent for an eval bundle."""
    config_name: str | None = None
    """Perf: the name of the fleet config the bundle was started from."""
    pack: dict[str, Any] | None = None
    """Eval: ``{id, version, sha256}`` of the frozen ``pack.yaml`` (sha256 hex of its bytes)."""
    models: list[dict[str, Any]] = Field(default_factory=list)
    """One entry per model: ``model`` (the label used in keys and shard names) and the frozen
    config entry (``id``, ``engine``, ``base_url``, ``concurrency`` …, secrets redacted)."""
    variants: list[str] | None = None
    """Eval: the pack's prompt variant ids, in pack order."""
    points: list[dict[str, Any]] | None = None
    """Perf: the points planned (model, host, context tokens, concurrency, runs)."""
    settings: dict[str, Any] | None = None
    """Perf: the run settings (SLO, durations in s)."""
    hosts: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Host name → facts: ``node_id``, ``hostname``, ``ip``, ``cpu``, ``cpu_count``,
    ``ram_gb`` (GB), ``gpus``, ``os``, ``capabilities`` (what its monitor can measure),
    ``engines`` (endpoint → how its engine process was found, or why not),
    ``touchstone_footprint`` (MB, % of one core), ``monitoring_lost_at`` (epoch s) and
    ``monitoring_lost_reason`` when its monitor was lost."""
    sampling: dict[str, Any] | None = None
    """Eval: the pack's sampling parameters as sent (temperature, max_tokens, seed …)."""
    ray: dict[str, Any] | None = None
    """``{version, address}`` of the Ray cluster the run used."""
    touchstone_version: str | None = None
    """Version of touchstone-ray that started the bundle."""
    simulated: bool | None = None
    """True when any model ran on the simulated engine."""
    started_at: Number | None = None
    """Epoch s (driver clock) when the bundle was created."""
    resumed_at: Number | None = None
    """Epoch s of the latest ``--resume``; absent for a bundle never resumed."""
    finished_at: Number | None = None
    """Epoch s when the last run ended (done or failed); null while running."""
    status: str | None = None
    """``running`` | ``done`` | ``failed`` (SPEC §7)."""
    servers: dict[str, dict[str, Any]] | None = None
    """Model label → ``engine_kind`` and ``server_facts`` the preflight found."""
    server_checks: dict[str, dict[str, Any]] | None = None
    """Model label → the end-of-model server check (cache and slot figures as reported)."""
    resources_unknown: dict[str, str] | None = None
    """Host → why its records keep null resource fields after finalize (the host has no
    samples in ``hosts/``); one line per host, written by finalize."""

    _order: list[str] = PrivateAttr(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The manifest as a JSON mapping: the keys read first, in their order, then new ones;
        fields never set and still at their default are left out."""
        data = self.model_dump(mode="json", warnings=False)
        defaults = {
            name: info.get_default(call_default_factory=True)
            for name, info in type(self).model_fields.items()
        }
        keep = {
            k: v
            for k, v in data.items()
            if k in self.model_fields_set or k not in defaults or v != defaults[k]
        }
        ordered = {k: keep[k] for k in self._order if k in keep}
        ordered.update((k, v) for k, v in keep.items() if k not in ordered)
        return ordered

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: Path | str = "bundle.json") -> Manifest:
        """Validate a mapping; raises :class:`BundleError` naming ``where``, the field and
        the problem."""
        try:
            manifest = cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
            raise BundleError(f"{where}: {loc}: {err['msg']}") from None
        manifest._order = list(data)
        return manifest


def read_manifest(path: Path) -> Manifest:
    """Parse ``bundle.json`` at ``path``; raises :class:`BundleError` if it is missing, not a
    JSON object, or a field has the wrong type."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path}: missing; is this a bundle?") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a touchstone bundle manifest")
    return Manifest.from_dict(data, path)


def write_manifest(path: Path, manifest: Manifest | dict[str, Any]) -> None:
    """Replace ``bundle.json`` at ``path`` atomically (indented JSON, keys in written order);
    a mapping is validated first (:class:`BundleError` for a wrong field type)."""
    if isinstance(manifest, dict):
        manifest = Manifest.from_dict(manifest, path)
    atomic_write_json(path, manifest.to_dict())


@contextlib.contextmanager
def edit_manifest(path: Path) -> Iterator[Manifest]:
    """Read ``bundle.json`` at ``path``, yield it for changes, then validate it again and
    replace the file atomically, only when its content changed (so an edit that changes
    nothing leaves the file as it was). On an error inside the block nothing is written.
    Raises :class:`BundleError` like :func:`read_manifest`, or for a field set to a wrong type.
    One driver writes a bundle, so no lock is taken."""
    manifest = read_manifest(path)
    before = manifest.to_dict()
    yield manifest
    after = manifest.to_dict()
    if after != before or list(after) != list(before):
        checked = Manifest.from_dict(after, path)
        atomic_write_json(path, checked.to_dict())
