"""Tools packs (SPEC §3b, a Contract): a judge-free tool-calling and code bench as data.

A tools pack offers tool schemas (JSON Schema parameters), a stand-in ``world`` (fixture files
and canned tool results) and ``items``: a prompt, the tools it offers and deterministic
``checks`` of what the model did. :func:`load_tools_pack` reads one YAML file (strict, like
:func:`touchstone_ray.pack.load_pack`); every rejection is one :class:`PackError` line naming
the file, the YAML path and the value. ``bfcl:<category>`` names a BFCL v4 category
(:mod:`touchstone_ray.toolpack.bfcl`).
"""

from __future__ import annotations

from touchstone_ray.toolpack._checks import (
    CHECK_TYPES,
    AnswerContains,
    AnswerRegex,
    ArgEquals,
    ArgRegex,
    Calls,
    Check,
    EditApplies,
    EditedPython,
    ExpectedCall,
    FinishReason,
    JsonEquals,
    NoCall,
    NodeAsserts,
    NoEmptyArgs,
    PythonAsserts,
    SchemaValid,
)
from touchstone_ray.toolpack._load import load_tools_pack
from touchstone_ray.toolpack._model import (
    CannedResult,
    ToolItem,
    ToolsPack,
    ToolSpec,
    World,
    dump_tools_pack,
    tools_pack_from_data,
)

__all__ = [
    "CHECK_TYPES",
    "AnswerContains",
    "AnswerRegex",
    "ArgEquals",
    "ArgRegex",
    "Calls",
    "CannedResult",
    "Check",
    "EditApplies",
    "EditedPython",
    "ExpectedCall",
    "FinishReason",
    "JsonEquals",
    "NoCall",
    "NoEmptyArgs",
    "NodeAsserts",
    "PythonAsserts",
    "SchemaValid",
    "ToolItem",
    "ToolSpec",
    "ToolsPack",
    "World",
    "dump_tools_pack",
    "load_tools_pack",
    "tools_pack_from_data",
]
