"""BFCL v4 categories as tools packs (``--pack bfcl:<category>``)."""

from __future__ import annotations

from touchstone_ray.errors import PackError
from touchstone_ray.toolpack._model import ToolsPack


def load_bfcl(category: str) -> ToolsPack:
    """The BFCL category ``category`` as a tools pack; raises :class:`PackError`."""
    raise PackError(f"bfcl:{category}: BFCL packs are not built yet")
