"""A bundle folder (SPEC §7, a Contract): create it, read it, check a resume against it.

``<out>/<YYYY-MM-DD_HHMMSS>_eval_<pack_id>/``; its paths are :class:`Layout`'s, its manifest
a :class:`Manifest`, its shards :class:`ResponseShards`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, MutableSet
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from touchstone_ray.bundle._layout import Layout
from touchstone_ray.bundle._manifest import (
    Manifest,
    edit_manifest,
    read_manifest,
    write_manifest,
)
from touchstone_ray.bundle._responses import ResponseScan, ResponseShards
from touchstone_ray.config import FleetConfig
from touchstone_ray.errors import BundleError
from touchstone_ray.pack import Pack, load_pack, pack_sha256
from touchstone_ray.records import SCHEMA_VERSION, EvalResponse
from touchstone_ray.version import __version__

SECRET_HINTS = ("key", "apikey", "token", "secret", "password", "authorization")
"""Words that mark a mapping key as secret (``api_key``, ``X-Api-Key``, ``access_token``);
matched against the key's words, so ``max_tokens`` or ``answer_tokens`` stay readable."""

GENERATION_FIELDS = ("id", "engine", "extra_body", "sim")
"""Model settings that change answers; resume refuses a bundle where one of them changed."""


def _is_secret(key: str) -> bool:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()
    return any(w in SECRET_HINTS for w in re.split(r"[^a-z0-9]+", words))


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-looking mapping values replaced by ``"***"``."""
    if isinstance(value, dict):
        return {k: "***" if _is_secret(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def frozen_config(config: FleetConfig) -> dict[str, Any]:
    """The fleet config as frozen into ``config.yaml``: env var names only, secret-looking
    ``extra_body`` values redacted."""
    data: dict[str, Any] = config.model_dump(mode="json")
    for model in data["models"]:
        model["extra_body"] = redact(model["extra_body"])
    return data


STALE_AFTER_S = 90.0
"""A ``running`` bundle none of whose files changed for this long (s) has no live driver: the
driver writes host samples every ``monitor.interval_s`` (1 s by default) and fsyncs every
second, so a live run touches ``hosts/`` or ``events.jsonl`` far more often."""


def find_bundles(root: Path) -> list[Path]:
    """Every bundle folder under ``root`` (one with a ``bundle.json``), recursively, sorted by
    path; a bundle's own sub-folders are not searched. Unreadable folders are skipped."""
    found: list[Path] = []
    manifest_name = Layout(root).manifest.name
    for folder, dirs, files in os.walk(root, onerror=lambda _exc: None):
        if manifest_name in files:
            found.append(Path(folder))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def new_bundle_root(out: Path, name: str, config: FleetConfig) -> Path:
    """Make ``out/<YYYY-MM-DD_HHMMSS>_<name>`` (``-2``, ``-3`` … on a clash) with the frozen
    fleet config (``config.yaml``, no secrets) and an empty ``hosts/``; returns the folder."""
    stamp = time.strftime("%Y-%m-%d_%H%M%S")
    root = out / f"{stamp}_{name}"
    n = 2
    while root.exists():
        root = out / f"{stamp}_{name}-{n}"
        n += 1
    root.mkdir(parents=True)
    layout = Layout(root)
    layout.config.write_text(
        yaml.safe_dump(frozen_config(config), sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    layout.hosts_dir.mkdir()
    return root


def running_manifest(config: FleetConfig, ray_info: dict[str, Any]) -> dict[str, Any]:
    """The manifest fields every bundle kind starts with: ``models`` (label + frozen entry),
    empty ``hosts``, ``ray``, ``touchstone_version``, ``simulated``, ``started_at`` (epoch s),
    ``finished_at`` null and ``status: running``."""
    labels = [config.model_label(m) for m in config.models]
    frozen = frozen_config(config)["models"]
    return {
        "models": [{"model": label, **m} for label, m in zip(labels, frozen, strict=True)],
        "hosts": {},
        "ray": ray_info,
        "touchstone_version": __version__,
        "simulated": any(m.engine == "simulated" for m in config.models),
        "started_at": time.time(),
        "finished_at": None,
        "status": "running",
    }


class Bundle:
    """One bundle folder. Construct with :meth:`create` or :meth:`open`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.layout = Layout(root)
        """Every path of the bundle."""
        self.shards = ResponseShards(self.layout)
        """The response shards (``responses/``)."""

    # create / open ------------------------------------------------------------------------
    @classmethod
    def create(
        cls, out: Path, pack: Pack, pack_path: Path, config: FleetConfig, ray_info: dict[str, Any]
    ) -> Bundle:
        """Make a new bundle folder under ``out`` with a ``running`` manifest.

        The folder name is ``<YYYY-MM-DD_HHMMSS>_eval_<pack_id>`` (``-2``, ``-3`` … on a clash).
        """
        root = new_bundle_root(out, f"eval_{pack.id}", config)
        bundle = cls(root)
        shutil.copyfile(pack_path, bundle.layout.pack)
        bundle.layout.responses_dir.mkdir()
        common = running_manifest(config, ray_info)
        bundle.write_manifest(
            {
                "schema_version": SCHEMA_VERSION,
                "pack": {"id": pack.id, "version": pack.version, "sha256": pack_sha256(pack_path)},
                "models": common.pop("models"),
                "variants": [v.id for v in pack.prompt_variants],
                "hosts": common.pop("hosts"),
                "sampling": pack.sampling.model_dump(),
                **common,
            }
        )
        return bundle

    @classmethod
    def open(cls, root: Path) -> Bundle:
        """Open an existing bundle; raises :class:`BundleError` if its manifest is unusable."""
        bundle = cls(root)
        if not root.is_dir():
            raise BundleError(f"{root}: no such bundle folder")
        bundle.manifest()
        return bundle

    # manifest -----------------------------------------------------------------------------
    def read_manifest(self) -> Manifest:
        """``bundle.json`` of any bundle kind, typed; the one reader. Raises
        :class:`BundleError` if missing, not a JSON object or a field has the wrong type."""
        return read_manifest(self.layout.manifest)

    def check_manifest(self, manifest: Manifest) -> None:
        """Raise :class:`BundleError` unless ``manifest`` is one of this bundle's kind (an
        eval bundle: with a pack and its sha256)."""
        path = self.layout.manifest
        if manifest.kind in ("perf", "tools"):
            raise BundleError(
                f"{self.root}: a {manifest.kind} bundle (bundle.json has kind: "
                f"{manifest.kind}); this command needs an eval bundle"
            )
        if manifest.pack is None:
            raise BundleError(f"{path}: not a touchstone bundle manifest")
        if manifest.pack.sha256 is None:
            raise BundleError(f"{path}: pack.sha256 is missing; is this a bundle?")

    def manifest(self) -> Manifest:
        """``bundle.json``, typed and checked for this bundle's kind (:meth:`check_manifest`);
        raises :class:`BundleError` otherwise."""
        manifest = self.read_manifest()
        self.check_manifest(manifest)
        return manifest

    def pack_sha256(self) -> str:
        """sha256 hex of the frozen pack, as ``bundle.json`` names it; raises
        :class:`BundleError` for a manifest of another kind or without one."""
        pack = self.manifest().pack
        if pack is None or pack.sha256 is None:  # a kind without a pack (perf)
            raise BundleError(f"{self.layout.manifest}: names no pack")
        return pack.sha256

    def kind(self) -> str:
        """``eval``, ``perf`` or ``tools`` (SPEC §7b, §7c: ``bundle.json`` ``kind``; absent means
        ``eval``)."""
        kind = self.read_manifest().kind
        return kind if kind else "eval"

    def write_manifest(self, data: Manifest | dict[str, Any]) -> None:
        """Write a whole new ``bundle.json`` atomically (creating a bundle); changes to an
        existing one go through :meth:`edit_manifest`."""
        write_manifest(self.layout.manifest, data)

    @contextlib.contextmanager
    def edit_manifest(self) -> Iterator[Manifest]:
        """Read, modify, write atomically: ``with bundle.edit_manifest() as m: m.status = …``
        (:func:`~touchstone_ray.bundle.edit_manifest`, after :meth:`check_manifest`)."""
        with edit_manifest(self.layout.manifest) as manifest:
            self.check_manifest(manifest)
            yield manifest

    def update_manifest(self, **fields: Any) -> None:
        """Set top-level manifest fields atomically (:meth:`edit_manifest`)."""
        with self.edit_manifest() as manifest:
            for name, value in fields.items():
                setattr(manifest, name, value)

    def last_write(self) -> float | None:
        """Newest mtime (epoch s) of the files a live driver writes (:data:`LIVE_FILES`);
        ``None`` when none exists."""
        newest: float | None = None
        for path in self.layout.live_files():
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            newest = mtime if newest is None else max(newest, mtime)
        return newest

    def run_state(self, now: float | None = None, stale_after_s: float = STALE_AFTER_S) -> str:
        """``running``, ``crashed`` (the manifest says running but no file changed for
        ``stale_after_s`` seconds: no live driver), ``done``, ``failed`` or ``judged`` (done
        with a ``scorecard.json``). Raises :class:`BundleError` for an unreadable manifest."""
        status = str(self.read_manifest().status or "running")
        if status == "running":
            last = self.last_write()
            now = time.time() if now is None else now
            return "crashed" if last is None or now - last > stale_after_s else "running"
        if status == "done" and self.layout.scorecard_json.is_file():
            return "judged"
        return status

    def resume_command(self) -> str:
        """The exact command that resumes this bundle from its frozen pack and config."""
        import shlex

        root = shlex.quote(str(self.root))
        config = shlex.quote(str(self.layout.config))
        if self.kind() == "perf":
            return f"touchstone-ray perf --config {config} --resume {root}"
        pack = shlex.quote(str(self.layout.pack))
        if self.kind() == "tools":
            return f"touchstone-ray tools --pack {pack} --config {config} --resume {root}"
        return f"touchstone-ray eval --pack {pack} --config {config} --resume {root}"

    def pack(self) -> Pack:
        """The frozen pack; raises :class:`BundleError` if ``pack.yaml`` is not the pack the
        manifest names (:meth:`check_frozen_pack`)."""
        self.check_frozen_pack()
        return load_pack(self.layout.pack)

    def check_frozen_pack(self) -> None:
        """Raise :class:`BundleError` unless ``pack.yaml`` has the sha256 in ``bundle.json``
        (a pack replaced after the run would be judged or resumed against the wrong rubric)."""
        path = self.layout.pack
        want = self.pack_sha256()
        try:
            sha = pack_sha256(path)
        except OSError as exc:
            raise BundleError(f"{path}: unreadable ({exc.strerror or exc})") from None
        if sha != want:
            raise BundleError(
                f"{path} (sha256 {sha[:12]}) is not the pack bundle.json names (sha256 "
                f"{want[:12]}); the bundle was changed after its run"
            )

    # reading ----------------------------------------------------------------------------
    def scan_responses(
        self,
        repair: bool = False,
        key_set: Callable[[], MutableSet[str]] = set,
        warn: bool = True,
    ) -> ResponseScan:
        """Scan every shard: ok keys and error-only keys (:meth:`ResponseShards.scan`).

        With ``repair``, each torn last line is first cut into ``<shard>.torn``; ``key_set``
        makes the key sets (a compact set for a large resume); ``warn=False`` leaves the
        malformed-line warnings to :meth:`ResponseScan.warn_malformed`.
        """
        return self.shards.scan(repair, key_set, warn)

    def responses(self) -> list[dict[str, Any]]:
        """Every response record, de-duplicated by key (ok wins, first ok wins)."""
        return self.shards.records()

    def pack_responses(self, pack: Pack) -> tuple[list[EvalResponse], int]:
        """The de-duplicated responses of ``pack``'s prompts and variants, as typed records in
        bundle order (manifest model order, pack variant order, prompt order, repeat), and the
        count of records skipped (unreadable, or of a prompt or variant not in ``pack``)."""
        models = self.manifest().model_labels()
        variants = [v.id for v in pack.prompt_variants]
        prompts = [p.id for p in pack.prompts()]
        found: list[EvalResponse] = []
        skipped = 0
        for record in self.responses():
            try:
                response = EvalResponse.model_validate(record)
            except ValidationError:
                skipped += 1
                continue
            if response.variant not in variants or response.prompt_id not in prompts:
                skipped += 1
                continue
            found.append(response)

        def order(r: EvalResponse) -> tuple[int, str, int, int, int]:
            m = models.index(r.model) if r.model in models else len(models)
            return (m, r.model, variants.index(r.variant), prompts.index(r.prompt_id), r.repeat)

        return sorted(found, key=order), skipped

    # resume checks ------------------------------------------------------------------------
    def check_resume(self, pack_path: Path | None, config: FleetConfig) -> None:
        """Refuse a resume with a different pack or changed generation settings.

        Raises :class:`BundleError` naming the pack sha256s, or the model and the field that
        changed with its old and new value.
        """
        frozen_sha = self.pack_sha256()
        if pack_path is not None:
            sha = pack_sha256(pack_path)
            if sha != frozen_sha:
                raise BundleError(
                    f"{self.root}: pack {pack_path} (sha256 {sha[:12]}) differs from the "
                    f"bundle's pack.yaml (sha256 {frozen_sha[:12]}); resume needs the same pack"
                )
        self.check_frozen_pack()
        self.check_frozen_config(config)

    def check_frozen_config(self, config: FleetConfig) -> None:
        """Refuse a resume whose config has a model the bundle was not started with, or
        changed a model's generation settings (:data:`GENERATION_FIELDS`); raises
        :class:`BundleError` naming the new models and the bundle's, or the model, the field
        and its old and new value. A model left out of the config (or ``--models``) is
        simply not run."""
        frozen_path = self.layout.config
        try:
            old_cfg = FleetConfig.model_validate(yaml.safe_load(frozen_path.read_text("utf-8")))
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            raise BundleError(f"{frozen_path}: unreadable ({type(exc).__name__})") from None
        old = {old_cfg.model_label(m): m for m in old_cfg.models}
        added = [label for m in config.models if (label := config.model_label(m)) not in old]
        if added:
            raise BundleError(
                f"{self.root}: model {', '.join(added)} is not in this bundle (its models: "
                f"{', '.join(old)}); resume with the bundle's config.yaml, or start a new run "
                "without --resume"
            )
        for model in config.models:
            label = config.model_label(model)
            before = old[label]
            for name in GENERATION_FIELDS:
                a = redact(getattr(before, name))
                b = redact(getattr(model, name))
                if a != b:
                    raise BundleError(
                        f"{self.root}: model {label}: {name} changed since the bundle was "
                        f"started ({a!r} → {b!r}); resume needs the same generation settings"
                    )
