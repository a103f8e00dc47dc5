"""Reading user-written YAML (packs, fleet and judge configs) safely, with one-line errors.

Everything goes through ``yaml.SafeLoader`` (packs and configs are data, never code). Before
the document is constructed, the composed node graph is measured with aliases expanded, so an
anchor/alias bomb ("billion laughs") is rejected instead of exploding in validation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from touchstone_ray.errors import UsageError

MAX_FILE_BYTES = 5 * 1024 * 1024
"""Largest YAML file accepted (bytes); packs and configs are far smaller."""

MAX_EXPANDED_NODES = 200_000
"""Largest node count of a document with every alias expanded."""


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Number of nodes under ``node`` if every alias were copied (memoised per node)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias counts once instead of looping
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[key] = min(size, MAX_EXPANDED_NODES + 1)
    return memo[key]


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (about seven times faster on a
multi-megabyte pack), else the pure-Python one; both compose the same nodes. A file it rejects
is read again by the pure-Python loader, so the error line is the same either way."""


def _compose_and_construct(text: str, loader_cls: Any) -> tuple[Any, int]:
    """The document of ``text`` and its expanded node count, composed once: a document over
    :data:`MAX_EXPANDED_NODES` is not constructed (``None`` returned with its size)."""
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, 0
        size = _expanded_size(node, {})
        if size > MAX_EXPANDED_NODES:
            return None, size
        return loader.construct_document(node), size
    finally:
        loader.dispose()


def load_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    """Read ``path`` as one YAML mapping.

    ``what`` names the kind of file in messages ("pack", "fleet config").
    Raises ``ValueError`` with a one-line message (without the file name; callers prefix it)
    for a missing or oversized file, invalid UTF-8, YAML syntax errors, alias bombs, nesting too
    deep to parse and a document that is not a mapping.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"no such {what} file") from None
    except OSError as exc:
        raise ValueError(f"cannot read {what}: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ValueError(f"{what} is {len(raw)} bytes, more than the {MAX_FILE_BYTES} allowed")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 at byte {exc.start}") from None
    try:
        try:
            data, size = _compose_and_construct(text, _LOADER)
        except yaml.YAMLError:  # the pure-Python loader's message and mark, as documented
            data, size = _compose_and_construct(text, yaml.SafeLoader)
        if size > MAX_EXPANDED_NODES:
            raise ValueError(
                f"{what} expands to more than {MAX_EXPANDED_NODES} YAML nodes (anchor/alias bomb?)"
            )
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ValueError(f"{where}YAML syntax error: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"YAML error: {exc}") from None
    except RecursionError:  # PyYAML composes and constructs recursively
        raise ValueError(f"{what} is nested too deeply (Python's recursion limit)") from None
    if not isinstance(data, dict):
        raise ValueError(f"the {what} must be a YAML mapping, got {_type_name(data)}")
    return data


def _type_name(value: object) -> str:
    if value is None:
        return "an empty document"
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def yaml_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic ``loc`` as a YAML path: ``categories[2].id``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def short_repr(value: object, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_validation_error(exc: ValidationError) -> str:
    """One line for the first error of a pydantic ``ValidationError``: path, message, value.

    Unknown keys read "unknown key". Later errors are often consequences of the first, so
    only the first is reported.
    """
    errors = exc.errors(include_url=False)
    err = errors[0]
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    elif err["type"] == "missing":
        message = "required key is missing"
    else:
        message = err["msg"].removeprefix("Value error, ")
    line = f"{yaml_path(loc)}: {message}"
    if err["type"] != "missing":
        line += f" (got {short_repr(err['input'])})"
    return line


class RuleError(Exception):
    """A cross-field rule broken at a YAML ``path`` (pack, fleet or judge config).

    Deliberately not a ``ValueError``, so pydantic lets it through a validator unchanged and
    :func:`validate_document` can report the exact path and value.
    """

    def __init__(self, path: str, message: str, value: object) -> None:
        super().__init__(f"{path}: {message} (got {short_repr(value)})")
        self.path = path
        self.value = value


ModelT = TypeVar("ModelT", bound=BaseModel)


def validate_document(
    model: type[ModelT], data: object, source: str, error: type[UsageError]
) -> ModelT:
    """``model`` validated from parsed ``data``; any rejection raises ``error`` with one line
    ``"<source>: <yaml path>: <message> (got <value>)"``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(f"{source}: {first_validation_error(exc)}") from None
    except (RuleError, error) as exc:
        raise error(f"{source}: {exc}") from None


def read_document(path: Path, what: str, error: type[UsageError]) -> dict[str, Any]:
    """:func:`load_yaml_mapping`, its ``ValueError`` raised as ``error`` prefixed by the file."""
    try:
        return load_yaml_mapping(path, what)
    except ValueError as exc:
        raise error(f"{path}: {exc}") from None
