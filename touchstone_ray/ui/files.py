"""Bundles as files (issue 31, item 3): a bundle as a zip, a zip imported as a bundle, the
trash with its undo, and the single files of a bundle that can be downloaded.

- **Zip**: every regular file below the bundle (links are not followed, nor stored) as
  ``<folder name>/<relative path>``, sorted, deflated, each with its modification time and
  mode ``0644``. An import keeps those times, so zipping an imported bundle again gives the
  same bytes, and a bundle whose run crashed still reads as crashed, not as running.
- **Import**: a zip is a bundle when all its members lie in one folder whose name matches
  :data:`FOLDER_NAME` and that folder holds a ``bundle.json`` the manifest reader accepts
  with a ``schema_version``. Refused, with one line and nothing left behind: not a zip, an
  absolute path or ``..`` (a path leaving the folder), a backslash, a link, a name twice, an
  encrypted or damaged member, more than ``max_files`` files or ``max_bytes`` unpacked, a
  name already imported. It is unpacked into a hidden folder under ``--runs/imported`` and
  moved to ``--runs/imported/<folder>`` in one rename, so nothing lands outside ``--runs``.
- **Trash**: ``--runs/.trash/<id>/`` holds the bundle, ``--runs/.trash/<id>.json`` where it
  came from (``{"origin": <path under --runs>, "at": <epoch s>}``); dot folders are never
  listed as bundles. Restore moves it back to its origin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from touchstone_ray.bundle import Bundle, Layout
from touchstone_ray.errors import BundleError, UsageError

__all__ = [
    "CHUNK_BYTES",
    "DOWNLOADS",
    "FOLDER_NAME",
    "IMPORTED",
    "IMPORT_MAX_BYTES",
    "IMPORT_MAX_FILES",
    "TRASH",
    "Trashed",
    "download_path",
    "downloads",
    "import_bundle",
    "restore",
    "trash",
    "trashed",
    "zip_bundle",
]

IMPORT_MAX_BYTES = 1024**3
"""Largest import, as uploaded and as unpacked (bytes)."""
IMPORT_MAX_FILES = 10_000
"""Most entries (files and folders) an imported bundle's zip may hold."""
FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""What an imported bundle's folder may be called (bundle folders are
``<YYYY-MM-DD_HHMMSS>_<kind>_<id>``)."""
TRASH = ".trash"
"""The trash folder under ``--runs``."""
IMPORTED = "imported"
"""Where imported bundles go under ``--runs``."""
DOWNLOADS = ("report.html", "report.md", "scorecard.json", "rating-task.md")
"""Single files of a bundle offered for download, besides ``export/<table>.csv``."""
FILE_MODE = 0o644
"""Mode every file is stored with in a zip (the bytes, not the permissions, are the bundle)."""
DIR_MODE = 0o755
"""Mode every empty folder is stored with in a zip."""
ENCRYPTED = 0x1
"""Bit of a zip member's general purpose flags that marks it encrypted (APPNOTE 4.4.4)."""
CHUNK_BYTES = 1 << 20
"""Copy buffer while zipping and unpacking (bytes)."""


def _entries(root: Path) -> list[Path]:
    """Every regular file and every empty folder below ``root``, links neither followed nor
    listed, sorted by their path relative to ``root``."""
    found = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        if here != root and not dirs and not names:
            found.append(here)
        found += [here / n for n in names if stat.S_ISREG((here / n).lstat().st_mode)]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def zip_bundle(root: Path, dest: IO[bytes]) -> None:
    """Write the bundle folder ``root`` as a zip into the open binary file ``dest`` (module
    docstring: names, order, times, mode; an empty folder as a ``<name>/`` entry). Raises
    ``OSError`` from the file system."""
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in _entries(root):
            arcname = f"{root.name}/{path.relative_to(root).as_posix()}"
            info = zipfile.ZipInfo.from_file(path, arcname, strict_timestamps=False)
            if info.is_dir():
                info.external_attr = (stat.S_IFDIR | DIR_MODE) << 16 | 0x10
                archive.writestr(info, b"")
                continue
            info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as src, archive.open(info, "w") as out:
                shutil.copyfileobj(src, out, CHUNK_BYTES)


def _members(
    archive: zipfile.ZipFile, max_bytes: int, max_files: int
) -> tuple[str, list[zipfile.ZipInfo]]:
    """The zip's one folder and its members (files and folders), checked as the module
    docstring says; raises :class:`UsageError`."""
    members = archive.infolist()
    files = [m for m in members if not m.is_dir()]
    if not files:
        raise UsageError("import: the zip holds no file")
    if len(members) > max_files:
        raise UsageError(
            f"import: {len(members)} files and folders, more than the {max_files} allowed"
        )
    tops: set[str] = set()
    seen: set[str] = set()
    for member in members:
        name = member.filename
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or "\\" in name:
            raise UsageError(f"import: {name!r} leaves the bundle's folder")
        if stat.S_ISLNK(member.external_attr >> 16):
            raise UsageError(f"import: {name!r} is a link")
        if member.flag_bits & ENCRYPTED:
            raise UsageError(f"import: {name!r} is encrypted")
        if not parts or (len(parts) < 2 and not member.is_dir()):
            raise UsageError(f"import: {name!r} is not inside a bundle folder")
        if name in seen:
            raise UsageError(f"import: {name!r} is in the zip twice")
        seen.add(name)
        tops.add(parts[0])
    if len(tops) != 1:
        raise UsageError(f"import: the zip holds {len(tops)} folders, not one bundle")
    top = tops.pop()
    if not FOLDER_NAME.match(top):
        raise UsageError(f"import: the folder name {top!r} is not a bundle folder's")
    total = sum(m.file_size for m in files)
    if total > max_bytes:
        raise UsageError(f"import: {total} bytes unpacked, more than the {max_bytes} allowed")
    return top, members


def _unpack(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], staging: Path) -> None:
    """Write ``members`` below ``staging`` with their zip times (folders last, so writing
    their files does not change them); raises :class:`UsageError` for a member that cannot
    be read or written."""
    for member in sorted(members, key=zipfile.ZipInfo.is_dir):
        dest = staging / member.filename
        try:
            if member.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, dest.open("xb") as out:
                    shutil.copyfileobj(src, out, CHUNK_BYTES)
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError) as exc:
            raise UsageError(f"import: {member.filename!r} cannot be read ({exc})") from None
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise UsageError(f"import: {member.filename!r} cannot be unpacked ({why})") from None
        stamp = time.mktime((*member.date_time, 0, 0, -1))
        os.utime(dest, (stamp, stamp))


def _check_manifest(folder: Path, top: str) -> None:
    """Raise :class:`UsageError` unless ``folder`` holds a bundle manifest with a schema
    version (read by the one manifest reader)."""
    try:
        manifest = Bundle(folder).read_manifest()
    except BundleError:
        manifest = None
    if manifest is None or manifest.schema_version is None:
        raise UsageError(f"import: {top}/bundle.json is not a bundle manifest: not a bundle")


def import_bundle(
    runs: Path,
    upload: Path,
    max_bytes: int = IMPORT_MAX_BYTES,
    max_files: int = IMPORT_MAX_FILES,
) -> Path:
    """Unpack the zip file ``upload`` as ``runs/imported/<folder>`` and return that folder.

    Raises :class:`UsageError` with one line for anything but one bundle (module docstring);
    nothing is left under ``runs`` then."""
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise UsageError("import: not a zip file") from None
    with archive:
        top, members = _members(archive, max_bytes, max_files)
        manifest_name = f"{top}/{Layout(Path(top)).manifest.name}"
        if manifest_name not in {m.filename for m in members}:
            raise UsageError(f"import: {manifest_name} is missing: not a bundle")
        target = runs / IMPORTED / top
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.mkdir()  # claims the name: a second import of it fails here, not later
        except FileExistsError:
            raise UsageError(f"import: {IMPORTED}/{top} exists already under --runs") from None
        staging = Path(tempfile.mkdtemp(prefix=".import-", dir=target.parent))
        moved = False
        try:
            _unpack(archive, members, staging)
            _check_manifest(staging / top, top)
            os.replace(staging / top, target)  # onto the claimed, still empty folder
            moved = True
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            if not moved:
                target.rmdir()
    return target


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def downloads(root: Path) -> list[str]:
    """The names (relative to the bundle ``root``) of its files offered one by one: those of
    :data:`DOWNLOADS` present, then ``export/*.csv``; links (and a linked ``export/``) are
    left out, as the zip leaves them out."""
    names = [n for n in DOWNLOADS if _regular(root / n)]
    export = Layout(root).export_dir
    if export.is_symlink() or not export.is_dir():
        return names
    return names + sorted(f"{export.name}/{p.name}" for p in export.glob("*.csv") if _regular(p))


def download_path(root: Path, name: str) -> Path | None:
    """The file ``name`` of the bundle ``root`` when it is one of :func:`downloads`, else
    ``None`` (no other name, however spelled, reaches a file)."""
    return root / name if name in downloads(root) else None


@dataclass(frozen=True)
class Trashed:
    """A bundle in the trash."""

    id: str
    """Its folder name under ``--runs/.trash``: ``<YYYYMMDD-HHMMSS>_<bundle folder>`` (a
    ``-2``, ``-3`` … on a clash)."""
    origin: str
    """Where it came from, relative to ``--runs`` (POSIX separators)."""
    at: float
    """When it was moved (epoch s)."""


def trash(runs: Path, root: Path) -> Trashed:
    """Move the bundle folder ``root`` (below ``runs``) to the trash; returns its entry.

    Raises :class:`UsageError` for a bundle inside a hidden folder (the trash included) and
    :class:`BundleError` for one whose run is still going."""
    origin = root.relative_to(runs).as_posix()
    if any(part.startswith(".") for part in PurePosixPath(origin).parts):
        raise UsageError(f"trash: {origin} is in a hidden folder (the trash?), not a run")
    if Bundle(root).run_state() == "running":
        raise BundleError(f"trash: {origin} is still running; stop its run first")
    at = time.time()
    folder = runs / TRASH
    folder.mkdir(exist_ok=True)
    base = f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(at))}_{root.name}"
    item, n = base, 2
    while (folder / item).exists() or (folder / f"{item}.json").exists():
        item, n = f"{base}-{n}", n + 1
    # the sidecar first: a bundle in the trash always says where it came from (a sidecar
    # whose move failed is skipped by :func:`trashed`)
    (folder / f"{item}.json").write_text(json.dumps({"origin": origin, "at": at}))
    os.rename(root, folder / item)
    return Trashed(item, origin, at)


def _entry(sidecar: Path) -> Trashed | None:
    """The trash entry a sidecar file describes, or ``None`` when it is unreadable or its
    folder is gone."""
    try:
        facts = json.loads(sidecar.read_text(encoding="utf-8"))
        entry = Trashed(sidecar.stem, str(facts["origin"]), float(facts["at"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return entry if sidecar.with_suffix("").is_dir() else None


def trashed(runs: Path) -> list[Trashed]:
    """The trash's entries, newest first (unreadable sidecars are skipped)."""
    entries = [_entry(p) for p in (runs / TRASH).glob("*.json")]
    return sorted((t for t in entries if t is not None), key=lambda t: t.at, reverse=True)


def restore(runs: Path, item: str) -> Path:
    """Move the trash entry ``item`` back to where it came from; returns that folder.

    Raises :class:`UsageError` for an id not in the trash, an origin outside ``runs``, or an
    origin taken again meanwhile."""
    entry = next((t for t in trashed(runs) if t.id == item), None)
    if entry is None:
        raise UsageError(f"restore: {item!r} is not in the trash")
    target = (runs / entry.origin).resolve()
    if not target.is_relative_to(runs.resolve()) or target == runs.resolve():
        raise UsageError(f"restore: {entry.origin!r} is not a place under --runs")
    if target.exists():
        raise UsageError(f"restore: {entry.origin} exists again under --runs")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.rename(runs / TRASH / item, target)
    (runs / TRASH / f"{item}.json").unlink()
    return target
