"""The queue file: a night of runs as data (YAML, strict, one-line errors).

::

    out: night-runs              # the queue's folder (relative to this file); default <stem>-queue
    stall_timeout_s: 900         # an entry whose bundle gets no new line this long is stopped
    notify_command: "notify-send touchstone"   # optional: gets summary.md's path when it ends
    hosts:
      gpu-a: {reset_command: "systemctl --user restart ollama", settle_s: 10,
              settle_memory_mb: 512, settle_timeout_s: 120}
    entries:
      - {name: buero-qwen, kind: eval, pack: packs/buero.yaml, config: fleet.yaml,
         models: [qwen3-8b], variants: [baseline], limit: 2, judge_config: judges.yaml}
      - {name: speed, kind: perf, config: fleet.yaml}

Paths are relative to the queue file's folder. Every rule broken raises
:class:`~touchstone_ray.errors.ConfigError` with ``<file>: <yaml path>: <message> (got <value>)``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from touchstone_ray.errors import ConfigError
from touchstone_ray.yamlio import RuleError, read_document, validate_document

__all__ = ["EntrySpec", "HostReset", "QueueSpec", "load_queue"]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""An entry's name: also its folder under the queue's ``out``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class HostReset(_Strict):
    """What happens on one host before each entry that uses it."""

    reset_command: str | None = None
    """A shell command run on the host's node (a Ray task pinned there) before the entry,
    e.g. a service restart, with ``TOUCHSTONE_HOST`` and ``TOUCHSTONE_NODE_ID`` set; a
    non-zero exit fails the entry."""
    settle_s: float = Field(default=0.0, ge=0)
    """Pause after the reset (s)."""
    settle_memory_mb: float | None = Field(default=None, gt=0)
    """Wait until the host's used memory is within this of its level before the previous entry
    (MB), checked every second; ``None``: not waited for."""
    settle_timeout_s: float = Field(default=300.0, ge=0)
    """Longest wait for ``settle_memory_mb`` (s); past it the entry starts with a warning."""


class EntrySpec(_Strict):
    """One run of the queue: a stage chain eval (or perf, or tools) → judge → report."""

    name: str = Field(pattern=NAME_PATTERN)
    """Unique in the queue; the entry's folder under ``out``."""
    kind: Literal["eval", "perf", "tools"]
    """``eval`` (needs ``pack``), ``perf`` or ``tools`` (needs ``pack``)."""
    pack: Path | None = None
    """The pack YAML (eval, tools; tools also ``bfcl:<category>``)."""
    config: Path
    """The fleet config YAML."""
    models: tuple[str, ...] | None = None
    """Only these model ids (``--models``)."""
    variants: tuple[str, ...] | None = None
    """Only these variants (eval ``--variants``)."""
    limit: int | None = Field(default=None, ge=1)
    """The first N prompts of each category (eval ``--limit``)."""
    judge_config: Path | None = None
    """Judge the eval with this judge config after it (eval only)."""
    report: bool = True
    """Write the bundle's report after the last stage."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Longest time the entry may run, all stages (s); past it it is stopped and ``failed``
    (reason ``timeout: …``)."""

    def kind_problem(self) -> tuple[str, str, object] | None:
        """``(key, message, value)`` of the first key that does not fit the entry's kind."""
        if self.kind in ("eval", "tools") and self.pack is None:
            article = "an" if self.kind == "eval" else "a"
            return "pack", f"{article} {self.kind} entry needs a pack", None
        if self.kind == "tools":
            for key in ("variants", "judge_config"):
                value = getattr(self, key)
                if value is not None:
                    shown = str(value) if isinstance(value, Path) else value
                    return key, "not used by a tools entry", shown
        if self.kind == "perf":
            for key in ("pack", "variants", "limit", "judge_config"):
                value = getattr(self, key)
                if value is not None:
                    return (
                        key,
                        "not used by a perf entry",
                        str(value) if isinstance(value, Path) else value,
                    )
        return None


class QueueSpec(_Strict):
    """A validated queue file; paths resolved against the file's folder."""

    out: Path | None = None
    """The queue's folder: one folder per entry, ``queue-state.jsonl``, ``summary.md``."""
    stall_timeout_s: float = Field(default=900.0, gt=0)
    """An entry whose bundle gets no new line for this long is stopped as ``stalled`` (s)."""
    notify_command: str | None = None
    """Run when the queue ends, with ``summary.md``'s path as its last argument."""
    hosts: dict[str, HostReset] = {}
    """Host name (as in the fleet configs) → its reset and settle settings."""
    entries: tuple[EntrySpec, ...] = Field(min_length=1)
    """The runs, in file order: entries sharing a host run in this order."""

    @model_validator(mode="after")
    def _entry_rules(self) -> QueueSpec:
        seen: set[str] = set()
        for i, entry in enumerate(self.entries):
            problem = entry.kind_problem()
            if problem is not None:
                key, message, value = problem
                raise RuleError(f"entries[{i}].{key}", f"{message} (entry {entry.name!r})", value)
            if entry.name in seen:
                raise RuleError(f"entries[{i}].name", "two entries have this name", entry.name)
            seen.add(entry.name)
        return self

    def entry(self, name: str) -> EntrySpec:
        """The entry called ``name``; raises ``KeyError``."""
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(name)


def is_bfcl(path: Path | None) -> bool:
    """Whether a tools entry's ``pack`` names a BFCL category (``bfcl:<category>``), not a
    file."""
    return path is not None and str(path).startswith("bfcl:")


def _resolve(base: Path, path: Path | None) -> Path | None:
    if path is None or is_bfcl(path):
        return path
    return (base / path).resolve()


def load_queue(path: str | Path) -> QueueSpec:
    """Load and validate the queue file at ``path``, every path in it made relative to the
    file's folder (``out`` defaults to ``<stem>-queue`` beside it) and every entry's pack,
    config and judge config checked to exist. Raises :class:`ConfigError` (one line)."""
    path = Path(path)
    spec = validate_document(
        QueueSpec, read_document(path, "queue", ConfigError), str(path), ConfigError
    )
    base = path.parent.resolve()
    entries = []
    for i, entry in enumerate(spec.entries):
        files = {k: _resolve(base, getattr(entry, k)) for k in ("pack", "config", "judge_config")}
        for key, file in files.items():
            if file is not None and not is_bfcl(file) and not file.is_file():
                raise ConfigError(
                    f"{path}: entries[{i}].{key}: no such file (entry {entry.name!r}, got {file})"
                )
        entries.append(entry.model_copy(update=files))
    out = _resolve(base, spec.out) or base / f"{path.stem}-queue"
    return spec.model_copy(update={"entries": tuple(entries), "out": out})


def entry_fingerprint(entry: EntrySpec) -> str:
    """``sha256`` of the entry's settings and the bytes of its pack, config and judge config:
    a finished entry whose fingerprint changed runs again."""
    digest = hashlib.sha256(json.dumps(entry.model_dump(mode="json"), sort_keys=True).encode())
    for file in (entry.pack, entry.config, entry.judge_config):
        if file is None or is_bfcl(file):
            digest.update(b"\0" if file is None else str(file).encode())
        else:
            digest.update(file.read_bytes())
    return digest.hexdigest()
