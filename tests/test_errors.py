"""The exception tree: the classes ``errors.py`` defines are the ones its docstring draws, with
the parents it draws, and each exits the CLI with its code. A judge that fails is not one of
them: an aborted judge is reported as data (its lines, exit code 1), never raised."""

from __future__ import annotations

import inspect
import re

from touchstone_ray import errors

TREE = {
    "TouchstoneError": None,
    "UsageError": "TouchstoneError",
    "PackError": "UsageError",
    "ConfigError": "UsageError",
    "BundleError": "UsageError",
    "EngineError": "TouchstoneError",
    "EngineTimeout": "EngineError",
    "EngineConnectError": "EngineError",
    "EngineRefused": "EngineConnectError",
    "EngineHTTPError": "EngineError",
    "EngineModelLoading": "EngineHTTPError",
    "EngineContextError": "EngineHTTPError",
    "EngineToolsRefused": "EngineHTTPError",
    "StreamProtocolError": "EngineError",
    "RunError": "TouchstoneError",
    "BundleWriteError": "RunError",
}
"""Class → its parent, as the module docstring draws it."""


def test_the_classes_are_the_drawn_tree() -> None:
    defined = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, errors.TouchstoneError)
    }
    assert set(defined) == set(TREE)
    for name, parent in TREE.items():
        bases = [b.__name__ for b in defined[name].__bases__]
        assert bases == [parent or "Exception"], name
    drawn = re.findall(r"[├└]── (\w+)", errors.__doc__ or "")
    assert sorted(drawn) == sorted(set(TREE) - {"TouchstoneError"})


def test_exit_codes() -> None:
    assert errors.TouchstoneError.exit_code == errors.RunError.exit_code == 1
    assert errors.BundleWriteError.exit_code == errors.EngineError.exit_code == 1
    for usage in (errors.UsageError, errors.PackError, errors.ConfigError, errors.BundleError):
        assert usage.exit_code == 2
    assert not hasattr(errors, "JudgeError")  # an aborted judge is data, not an exception
