"""The tools tests reuse the eval test helpers (``eval_helpers``) and the engine tests' replay
server (``engine_helpers``): their folders go on ``sys.path`` like pytest puts a test's own
folder there."""

from __future__ import annotations

import sys
from pathlib import Path

for _name in ("eval", "engines"):
    _path = str(Path(__file__).resolve().parents[1] / _name)
    if _path not in sys.path:
        sys.path.insert(0, _path)
