"""How an argument value meets the accepted values of a ``calls`` expectation: JSON equality,
or BFCL's AST checker's rules (``compare: bfcl``), so BFCL's own packs judge as BFCL does."""

from __future__ import annotations

import re
from typing import Any

from touchstone_ray.checks._cell import json_equal, show

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


# --- BFCL's simple_function_checker, per call ----------------------------------------------

_BFCL_TYPE: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
"""A JSON Schema type → the Python type BFCL's checker wants (its ``float`` is sent as
``number``, ``tuple`` as ``array``, ``dict`` as ``object``, ``any`` as ``string``)."""


def _answer_type(accepted: list[Any]) -> type | None:
    """The type of the first accepted value that is not ``""`` (BFCL's
    ``get_possible_answer_type``)."""
    for option in accepted:
        if option != "":
            return type(option)
    return None


def _bfcl_type_ok(
    value: Any, accepted: list[Any], want: type, inner: type | None
) -> tuple[bool, bool]:
    """``(ok, is_variable)`` of BFCL's ``type_checker``: the value has the schema's type (an
    array's elements the items' type, for some accepted array), or the accepted values' type
    (a "variable": compared by plain equality afterwards)."""
    answer = _answer_type(accepted)
    variable = answer is not None and answer is not want
    if type(value) is want:
        if inner is None:
            return True, variable
        elements: list[Any] = value if isinstance(value, list) else []
        for option in accepted:
            if not isinstance(option, list):
                return True, variable
            element = _answer_type(option)
            if all(type(v) is inner or type(v) is element for v in elements):
                return True, variable
        return False, variable
    if answer is not None and type(value) is answer:
        return True, True
    return False, variable


def _bfcl_in(value: Any, accepted: list[Any]) -> bool:
    """Python's ``value in accepted`` (``1 == 1.0 == True``), as BFCL compares."""
    return any(value == option for option in accepted)


def _bfcl_list_fits(value: list[Any], accepted: list[Any]) -> bool:
    mine = [_std(v) for v in value]
    for option in accepted:
        if isinstance(option, list | str) and mine == [_std(x) for x in option]:
            return True
    return False


def _bfcl_dict_rule(value: dict[str, Any], accepted: list[Any]) -> bool:
    for option in accepted:
        if option == "" or not isinstance(option, dict):
            continue
        ok = True
        for key, given in value.items():
            if key not in option:
                ok = False
                break
            options = option[key] if isinstance(option[key], list) else [option[key]]
            if not _bfcl_in(_std(given), [_std(o) for o in options]):
                ok = False
                break
        if ok and all(k in value or "" in v for k, v in option.items() if isinstance(v, list)):
            return True
    return False


def _bfcl_list_dict_rule(value: list[Any], accepted: list[Any]) -> bool:
    for option in accepted:
        if not isinstance(option, list | str) or len(option) != len(value):
            continue
        if all(
            isinstance(v, dict) and _bfcl_dict_rule(v, [o])
            for v, o in zip(value, option, strict=True)
        ):
            return True
    return False


def bfcl_args_mismatch(
    args: dict[str, Any], accepted: dict[str, list[Any]], schema: dict[str, Any] | None
) -> str | None:
    """Why ``args`` fail BFCL's ``simple_function_checker`` against the accepted values and
    the tool's parameters ``schema`` (``None``: the reason; see the rules in the module):
    every schema-required argument given (even where ``""`` is accepted), no argument that is
    not both a property of the schema and accepted, each value of the schema's type (an int
    counts as a float for ``number``) or of the accepted values' type, then equal to an
    accepted value (strings, strings in an array and an object's values compared normalised;
    a value of the accepted values' type other than the schema's: plain equality), and every
    accepted argument left out accepting ``""``."""
    schema = schema or {}
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in args:
            return f"required argument {key} missing"
    for key, value in args.items():
        if key not in props or key not in accepted:
            return f"unexpected argument {key}"
        prop = props[key] if isinstance(props[key], dict) else {}
        kind = prop.get("type")
        want = _BFCL_TYPE.get(kind, str) if isinstance(kind, str) else str
        inner = None
        if want is list:
            items = prop.get("items")
            item_kind = items.get("type") if isinstance(items, dict) else None
            inner = _BFCL_TYPE.get(item_kind, str) if isinstance(item_kind, str) else None
        if kind == "number" and type(value) is int:
            value = float(value)
        ok, variable = _bfcl_type_ok(value, accepted[key], want, inner)
        if not ok:
            return f"{key}={show(value)}: not of type {kind}"
        if variable:
            fits_ = _bfcl_in(value, accepted[key])
        elif want is dict:
            fits_ = _bfcl_dict_rule(value, accepted[key])
        elif want is list and inner is dict:
            fits_ = _bfcl_list_dict_rule(value, accepted[key])
        elif want is str:
            fits_ = bfcl_standard(value) in [
                bfcl_standard(o) for o in accepted[key] if isinstance(o, str)
            ]
        elif want is list:
            fits_ = _bfcl_list_fits(value, accepted[key])
        else:
            fits_ = _bfcl_in(value, accepted[key])
        if not fits_:
            return f"{key}={show(value)}, accepted {show(accepted[key])}"
    for key, options in accepted.items():
        if key not in args and "" not in options:
            return f"argument {key} missing"
    return None
