"""How an argument value meets the accepted values of a ``calls`` expectation: JSON equality,
or BFCL's AST checker's rules (``compare: bfcl``), so BFCL's own packs judge as BFCL does."""

from __future__ import annotations

import re
from typing import Any

from touchstone_ray.checks._cell import json_equal

_BFCL_DROP = re.compile(r"[ ,./\-_*^]")


def bfcl_standard(text: str) -> str:
    """A string as BFCL compares it: spaces and ``,./-_*^`` removed, lower case, ``'`` → ``"``
    (``standardize_string`` of its AST checker)."""
    return _BFCL_DROP.sub("", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return bfcl_standard(value) if isinstance(value, str) else value


def _bfcl_dict_fits(value: dict[str, Any], accepted: dict[str, Any]) -> bool:
    """BFCL's ``dict_checker`` for one accepted object: each key given is accepted and its
    value (a string standardised) is among that key's accepted values; each key left out
    accepts ``""``."""
    for key, given in value.items():
        if key not in accepted:
            return False
        options = accepted[key] if isinstance(accepted[key], list) else [accepted[key]]
        if not any(json_equal(_std(given), _std(option)) for option in options):
            return False
    return all(
        key in value or (isinstance(options, list) and "" in options)
        for key, options in accepted.items()
    )


def fits(value: Any, accepted: list[Any], compare: str) -> bool:
    """``value`` is one of ``accepted`` under ``compare`` (``json`` or ``bfcl``; see
    :class:`~touchstone_ray.toolpack.Calls`)."""
    if compare != "bfcl":
        return any(json_equal(value, option) for option in accepted)
    if isinstance(value, str):
        return any(
            isinstance(o, str) and bfcl_standard(o) == bfcl_standard(value) for o in accepted
        )
    if isinstance(value, dict):
        return any(isinstance(o, dict) and _bfcl_dict_fits(value, o) for o in accepted)
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            for option in accepted:
                if (
                    isinstance(option, list)
                    and len(option) == len(value)
                    and all(isinstance(o, dict) for o in option)
                    and all(_bfcl_dict_fits(v, o) for v, o in zip(value, option, strict=True))
                ):
                    return True
        mine = [_std(v) for v in value]
        return any(isinstance(o, list) and json_equal(mine, [_std(x) for x in o]) for o in accepted)
    return any(json_equal(value, option) for option in accepted)
