"""A typed JSON object that writes back what it read: the base of the manifest's models and of
the stored judge records.

Keys it does not declare are kept (``extra="allow"``); a dump lists the keys in the order they
were read, then the keys set since in the order they were first set, then any other key with a
value (a default mutated in place); a declared field never read or set and still at its
default is left out. So a record read and dumped again gives the same JSON, key order
included, and a new key lands where a mapping would have put it.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = ["KeptObject", "Number"]

Number = int | float
"""A JSON number kept as written (an int stays an int, so a round trip keeps the bytes)."""


_DEFAULTS: dict[type[BaseModel], dict[str, Any]] = {}
"""Each model class's field defaults (its default factories called once): pydantic inspects a
factory's signature on every call, which made a manifest edit cost milliseconds."""


def _defaults(cls: type[BaseModel]) -> dict[str, Any]:
    """``cls``'s declared field → its default (compared, never handed out)."""
    found = _DEFAULTS.get(cls)
    if found is None:
        fields = cls.model_fields.items()
        found = _DEFAULTS[cls] = {k: f.get_default(call_default_factory=True) for k, f in fields}
    return found


class KeptObject(BaseModel):
    """A JSON object with typed fields that dumps the keys it was read with, in their order
    (module docstring). Assignments are checked when the object is validated again (as
    :func:`~touchstone_ray.bundle.edit_manifest` does before it writes), not at once."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    _order: list[str] | None = PrivateAttr(default=None)
    """The keys in dump order; None until one is read or set (a plain default: pydantic
    inspects a default factory's signature on every instance)."""

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, KeptObject):
            model._order = [str(k) for k in data]
        return model

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name.startswith("_"):
            return
        if self._order is None:
            self._order = [name]
        elif name not in self._order:
            self._order.append(name)

    def update(self, values: dict[str, Any]) -> None:
        """Set every key of ``values`` (declared fields and unknown keys alike), in its order."""
        for name, value in values.items():
            setattr(self, name, value)

    @model_serializer(mode="wrap")
    def _ordered(self, handler: SerializerFunctionWrapHandler) -> Any:
        if not isinstance(self, KeptObject):  # a mapping assigned in an edit, not yet validated
            return self
        data: dict[str, Any] = handler(self)
        defaults = _defaults(type(self))
        keep = {
            k: v
            for k, v in data.items()
            if k in self.model_fields_set or k not in defaults or v != defaults[k]
        }
        ordered = {k: keep[k] for k in self._order or () if k in keep}
        ordered.update((k, v) for k, v in keep.items() if k not in ordered)
        return ordered

    def to_dict(self) -> dict[str, Any]:
        """The object as a JSON mapping (module docstring: the keys read, in their order)."""
        return self.model_dump(mode="json", warnings=False)
