"""The checks of a tools cell (SPEC §3b): what the model called and answered, judged without a
judge.

:func:`run_checks` runs each check of an item on a finished cell (its turns), in pack order,
one small function per check type (:data:`CHECKS`; each function's docstring states its exact
semantics); :func:`verdict` turns the outcomes into the cell's ``passed`` and
``not_measured``. A check that could not run (no sandbox, no ``node``, no call to validate)
has ``ok`` ``None`` and the reason in ``detail``: it is never a pass. Code runs in
:mod:`touchstone_ray.checks.sandbox`.
"""

from __future__ import annotations

from touchstone_ray.checks._run import CHECKS, run_checks, verdict
from touchstone_ray.checks.sandbox import (
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    run_sandboxed,
)

__all__ = [
    "CHECKS",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "run_checks",
    "run_sandboxed",
    "verdict",
]
