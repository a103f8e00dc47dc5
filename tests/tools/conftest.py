"""The tools tests reuse the eval test helpers (``eval_helpers``): their folder goes on
``sys.path`` like pytest puts a test's own folder there."""

from __future__ import annotations

import sys
from pathlib import Path

_PATH = str(Path(__file__).resolve().parents[1] / "eval")
if _PATH not in sys.path:
    sys.path.insert(0, _PATH)
