"""The reliability tests reuse the eval and judging test helpers (``eval_helpers``,
``judging_factories``): their folders go on ``sys.path`` like pytest puts a test's own folder
there."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _folder in ("eval", "judging"):
    _path = str(_TESTS / _folder)
    if _path not in sys.path:
        sys.path.insert(0, _path)
