"""One entry point for a tools pack: a YAML file or ``bfcl:<category>``."""

from __future__ import annotations

from pathlib import Path

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack._model import ToolsPack, tools_pack_from_data
from touchstone_ray.toolpack.bfcl import load_bfcl
from touchstone_ray.yamlio import read_document


def load_tools_pack(path: str | Path) -> ToolsPack:
    """Load and validate the tools pack YAML at ``path`` (or ``bfcl:<category>``, read from
    the installed ``bfcl-eval`` package by :func:`touchstone_ray.toolpack.bfcl.load_bfcl`).

    Raises :class:`PackError` with one line naming the file, the YAML path and the value for:
    a non-mapping document, unknown keys, an unknown check type, duplicate tool / item /
    check ids, an item offering an unknown tool, a check naming a tool the item does not
    offer, a JSON path the tool's schema cannot match, a context or edit file missing from
    ``world.files``, an asserts file that cannot be read, an unknown ``bfcl:`` category.
    """
    text = str(path)
    if text.startswith("bfcl:"):
        return load_bfcl(text.removeprefix("bfcl:"))
    file = Path(path)
    data = read_document(file, "tools pack", PackError)
    return tools_pack_from_data(data, str(file), file.parent)
