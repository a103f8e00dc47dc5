"""BFCL agreement: the ``bfcl:`` packs' checks against BFCL's own AST checker, same outputs.

For every item of each ``bfcl:<category>`` pack this builds a fixed set of model outputs from
BFCL's possible answers (below), scores each one twice — with BFCL's own checker
(``bfcl_eval.eval_checker.eval_runner``, run by ``_bfcl_reference.py`` in a separate venv
where ``bfcl-eval`` is installed with its dependencies) and with
:func:`touchstone_ray.checks.run_checks` on the item — and prints the agreement per category
and every disagreement with both sides' reasons. It also compares what the pack sends with
what BFCL's OpenAI handler sends: each item's tools (``convert_to_tool``, chat-completions
shape, language hint) and messages. Goal: agreement ≥ 99.5 % per category.

Outputs per item (labels in the JSON; each is one first answer as an OpenAI chat-completions
reply: tool calls with arguments as a JSON string, or a text answer):

* categories with possible answers — ``answer`` (each ground-truth call, the first accepted
  value per argument, an argument whose only accepted value is ``""`` left out),
  ``answer_alt`` (the last accepted value, every optional argument left out), ``reordered``
  (the calls reversed; parallel only), ``normalised`` (strings upper-cased with ``_`` for
  spaces, an integral float written as an int), ``ints`` (every integral float an int, inside
  arrays and objects too), ``empty_optional`` (each argument that may be left out given as
  ``""``), ``wrong_value``, ``wrong_type`` (first
  argument of the first call), ``missing_required``, ``extra_param``, ``extra_call`` (the
  first call twice), ``missing_call`` (the last call dropped; parallel only),
  ``wrong_function`` (another offered function, else a name not offered), ``no_call`` (a
  text answer), ``malformed_json`` (the first call's arguments cut by one character);
* ``irrelevance`` — ``no_call``, ``call`` (the first function, required arguments filled by
  type), ``empty_args`` (``{}``), ``two_calls``, ``malformed_json``, ``non_object_args``
  (``[]``).

The venv (default ``~/.cache/touchstone-bench/bfcl-venv``) is made on first use with ``python
-m venv`` and ``pip install bfcl-eval==<the installed version> soundfile`` (from the
configured package index; about 6 GB, CUDA torch included). ``soundfile`` is imported by
``qwen-agent`` (a dependency of bfcl-eval) but declared by neither.

    python bench/bench_bfcl_agreement.py [--categories a,b] [--limit N] [--venv PATH]

Prints one JSON summary on stdout, the table and the disagreements on stderr (~1 min once the
venv exists).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from touchstone_ray.records import ToolCall  # noqa: E402
from touchstone_ray.tool_records import ToolTurn  # noqa: E402
from touchstone_ray.toolpack.bfcl import (  # noqa: E402
    CATEGORIES,
    NO_ANSWER,
    bfcl_data_dir,
    load_bfcl,
    tool_name,
)

DEFAULT_VENV = Path.home() / ".cache" / "touchstone-bench" / "bfcl-venv"
"""Where the venv with bfcl-eval and its dependencies lives."""
BFCL_MODEL = "gpt-4o-2024-11-20-FC"
"""The BFCL model key the reference scores as: an FC model whose dotted names BFCL sends with
``_`` (``underscore_to_dot``), chat-completions decoding."""
GOAL_PCT = 99.5
"""Agreement goal per category (%)."""

Call = tuple[str, Any]
"""One call of an output: the name, and the arguments (a JSON value, or a raw text sent as is
when it is a ``str`` marked by :data:`RAW`)."""
RAW = "\x00raw:"
"""Prefix of an argument text sent verbatim (malformed JSON)."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- the venv -----------------------------------------------------------------------------


def ensure_venv(path: Path) -> Path:
    """The venv's python, made and filled on first use; exits with one line when that fails."""
    import importlib.metadata

    python = path / "bin" / "python"
    version = importlib.metadata.version("bfcl-eval")
    if not python.exists():
        log(f"making {path} (bfcl-eval {version} with its dependencies; several minutes)")
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", f"bfcl-eval=={version}", "soundfile"]
        done = subprocess.run(pip, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            sys.exit(f"pip install in {path} failed: {' '.join(tail)}")
    probe = subprocess.run(
        [str(python), "-c", "import bfcl_eval.eval_checker.eval_runner"],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": "unused-no-request-is-made"},
    )
    if probe.returncode != 0:
        tail = probe.stderr.strip().splitlines()[-1:]
        sys.exit(f"bfcl-eval's checker does not import in {path}: {' '.join(tail)}")
    return python


# --- outputs --------------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _accepted(values: list[Any], last: bool) -> tuple[bool, Any]:
    picks = [v for v in values if v != ""]
    if not picks:
        return False, None
    return True, picks[-1] if last else picks[0]


def _concrete(value: Any, schema: dict[str, Any], last: bool) -> Any:
    """An accepted value as a model would send it: a ``dict`` parameter's accepted entry maps
    each key to its accepted values (so one is picked per key, a key whose only accepted value
    is ``""`` left out), likewise each element of an array of ``dict``."""
    kind = schema.get("type")
    if kind == "dict" and isinstance(value, dict):
        out = {}
        for key, values in value.items():
            ok, picked = _accepted(values, last) if isinstance(values, list) else (True, values)
            if ok:
                out[key] = picked
        return out
    items = schema.get("items", {})
    if kind in ("array", "tuple") and items.get("type") == "dict" and isinstance(value, list):
        return [_concrete(v, items, last) for v in value]
    return value


def _answer(ground_truth: list[dict[str, Any]], docs: dict[str, Any], alt: bool) -> list[Call]:
    calls: list[Call] = []
    for entry in ground_truth:
        ((name, accepted),) = entry.items()
        required = docs[name]["parameters"].get("required", [])
        props = docs[name]["parameters"].get("properties", {})
        args: dict[str, Any] = {}
        for param, values in accepted.items():
            if alt and "" in values and param not in required:
                continue
            ok, value = _accepted(values, last=alt)
            if ok:
                args[param] = _concrete(value, props.get(param, {}), last=alt)
            elif param in required:
                args[param] = ""
        calls.append((tool_name(name), args))
    return calls


def _shout(value: Any) -> Any:
    if isinstance(value, str):
        return value.upper().replace(" ", "_")
    return value


def _normalised(calls: list[Call], docs: dict[str, Any]) -> list[Call]:
    by_name = {tool_name(n): d for n, d in docs.items()}
    out: list[Call] = []
    for name, args in calls:
        props = by_name[name]["parameters"].get("properties", {})
        new: dict[str, Any] = {}
        for key, value in args.items():
            kind = props.get(key, {}).get("type")
            if kind == "float" and isinstance(value, float) and value.is_integer():
                value = int(value)
            elif isinstance(value, list):
                value = [_shout(v) for v in value]
            elif isinstance(value, dict):
                value = {k: _shout(v) for k, v in value.items()}
            else:
                value = _shout(value)
            new[key] = value
        out.append((name, new))
    return out


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    return value


def _empty_optional(calls: list[Call], truth: list[dict[str, Any]]) -> list[Call] | None:
    """Every argument that may be left out given as ``""`` instead (``None``: none may)."""
    out: list[Call] = []
    changed = False
    for (name, args), entry in zip(calls, truth, strict=True):
        ((_, accepted),) = entry.items()
        new = dict(args)
        for param, values in accepted.items():
            if "" in values:
                new[param] = ""
                changed = True
        out.append((name, new))
    return out if changed else None


def _different(value: Any, accepted: list[Any]) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        new = value + 1
        while new in accepted:
            new += 1
        return new
    if isinstance(value, float):
        return value + 1.5 if value + 1.5 not in accepted else value + 2.75
    if isinstance(value, str):
        return value + " zzz"
    if isinstance(value, list):
        return [*value, value[-1]] if value else ["zzz"]
    if isinstance(value, dict):
        return {**value, "zz_extra_key": 1}
    return "zzz"


def _other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return 12345
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return 0


def _first_arg(calls: list[Call]) -> str | None:
    args = calls[0][1] if calls else {}
    return next(iter(args), None) if isinstance(args, dict) else None


def _with_first(calls: list[Call], args: dict[str, Any]) -> list[Call]:
    return [(calls[0][0], args), *calls[1:]]


def ast_outputs(
    question: dict[str, Any], answer: dict[str, Any], parallel: bool
) -> list[tuple[str, list[Call] | None]]:
    """The labelled outputs of one item with possible answers (``None``: a text answer)."""
    docs = {f["name"]: f for f in question["function"]}
    truth = answer["ground_truth"]
    calls = _answer(truth, docs, alt=False)
    outs: list[tuple[str, list[Call] | None]] = [
        ("answer", calls),
        ("answer_alt", _answer(truth, docs, alt=True)),
    ]
    if parallel and len(calls) > 1:
        outs.append(("reordered", calls[::-1]))
    outs.append(("normalised", _normalised(calls, docs)))
    outs.append(("ints", [(name, _ints(args)) for name, args in calls]))
    empty = _empty_optional(calls, truth)
    if empty is not None:
        outs.append(("empty_optional", empty))
    first = _first_arg(calls)
    name0, args0 = calls[0]
    ((raw0, accepted0),) = truth[0].items()
    if first is not None:
        outs.append(
            (
                "wrong_value",
                _with_first(
                    calls, {**args0, first: _different(args0[first], accepted0.get(first, []))}
                ),
            )
        )
        outs.append(("wrong_type", _with_first(calls, {**args0, first: _other_type(args0[first])})))
    required = [p for p in docs[raw0]["parameters"].get("required", []) if p in args0]
    if required:
        outs.append(
            (
                "missing_required",
                _with_first(calls, {k: v for k, v in args0.items() if k != required[0]}),
            )
        )
    outs.append(("extra_param", _with_first(calls, {**args0, "zz_unknown": 1})))
    outs.append(("extra_call", [*calls, calls[0]]))
    if parallel and len(calls) > 1:
        outs.append(("missing_call", calls[:-1]))
    others = [tool_name(n) for n in docs if tool_name(n) != name0]
    outs.append(
        ("wrong_function", [(others[0] if others else name0 + "_other", args0), *calls[1:]])
    )
    outs.append(("no_call", None))
    outs.append(("malformed_json", [(name0, RAW + json.dumps(args0)[:-1]), *calls[1:]]))
    return outs


_DUMMY = {"integer": 1, "float": 1.5, "boolean": True, "array": [], "tuple": [], "dict": {}}


def irrelevance_outputs(question: dict[str, Any]) -> list[tuple[str, list[Call] | None]]:
    """The labelled outputs of one ``irrelevance`` item."""
    doc = question["function"][0]
    props = doc["parameters"].get("properties", {})
    args = {
        p: _DUMMY.get(props.get(p, {}).get("type", ""), "x")
        for p in doc["parameters"].get("required", [])
    }
    name = tool_name(doc["name"])
    return [
        ("no_call", None),
        ("call", [(name, args)]),
        ("empty_args", [(name, {})]),
        ("two_calls", [(name, args), (name, args)]),
        ("malformed_json", [(name, RAW + json.dumps(args)[:-1])]),
        ("non_object_args", [(name, [])]),
    ]


NO_CALL_TEXT = "I cannot do that with the functions I have."
"""The text answer of a ``no_call`` output."""


def _arguments_text(args: Any) -> str:
    if isinstance(args, str) and args.startswith(RAW):
        return args.removeprefix(RAW)
    return json.dumps(args)


def bfcl_result(calls: list[Call] | None) -> Any:
    """What BFCL's chat-completions FC handler records for this answer."""
    if calls is None:
        return NO_CALL_TEXT
    return [{name: _arguments_text(args)} for name, args in calls]


def our_turn(calls: list[Call] | None) -> ToolTurn:
    """The same answer as the agent loop records it (arguments parsed as an engine does)."""
    if calls is None:
        return ToolTurn(content=NO_CALL_TEXT, finish_reason="stop")
    parsed, raw = [], []
    for i, (name, args) in enumerate(calls):
        text = _arguments_text(args)
        try:
            value, valid = json.loads(text), True
        except json.JSONDecodeError:
            value, valid = text, False
        parsed.append(
            ToolCall(id=f"call_{i}", name=name, arguments=value, arguments_valid_json=valid)
        )
        raw.append(
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": text},
            }
        )
    return ToolTurn(tool_calls=parsed, tool_calls_raw=raw, finish_reason="tool_calls")


# --- the run -------------------------------------------------------------------------------


def build(categories: list[str], limit: int | None) -> dict[str, list[dict[str, Any]]]:
    """Per category: ``[{id, outputs: [(label, calls)]}]`` in BFCL's order."""
    data = bfcl_data_dir()
    out: dict[str, list[dict[str, Any]]] = {}
    for category in categories:
        questions = _rows(data / f"BFCL_v4_{category}.json")[:limit]
        answers: dict[str, Any] = {}
        if category not in NO_ANSWER:
            answers = {
                a["id"]: a for a in _rows(data / "possible_answer" / f"BFCL_v4_{category}.json")
            }
        entries = []
        for q in questions:
            if category in NO_ANSWER:
                outs = irrelevance_outputs(q)
            else:
                outs = ast_outputs(q, answers[q["id"]], parallel="parallel" in category)
            entries.append({"id": q["id"], "outputs": outs})
        out[category] = entries
    return out


def run_reference(python: Path, built: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """BFCL's verdicts, tools and messages from the venv."""
    request = {
        "model": BFCL_MODEL,
        "categories": {
            cat: [
                {
                    "id": e["id"],
                    "outputs": [
                        {"label": lab, "result": bfcl_result(c)} for lab, c in e["outputs"]
                    ],
                }
                for e in entries
            ]
            for cat, entries in built.items()
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(request), encoding="utf-8")
        done = subprocess.run(
            [str(python), str(ROOT / "bench" / "_bfcl_reference.py"), str(src), str(dst)],
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        if done.returncode != 0:
            sys.exit(f"BFCL's checker failed: {done.stderr.strip()[-2000:]}")
        result: dict[str, Any] = json.loads(dst.read_text(encoding="utf-8"))
    return result


def compare(built: dict[str, list[dict[str, Any]]], reference: dict[str, Any]) -> dict[str, Any]:
    """Our verdicts beside BFCL's, per category."""
    from touchstone_ray.checks import run_checks, verdict

    summary: dict[str, Any] = {}
    for category, entries in built.items():
        pack = load_bfcl(category)
        ref = reference[category]
        n = agree = 0
        by_label: dict[str, dict[str, int]] = {}
        disagreements = []
        tools_differ, messages_differ = [], []
        for entry in entries:
            item = pack.item(entry["id"])
            sent = [t.as_openai() for t in pack.offered(item)]
            if sent != ref["tools"][item.id]:
                tools_differ.append(item.id)
            messages = (
                [{"role": "system", "content": item.system}] if item.system is not None else []
            ) + [{"role": "user", "content": item.prompt}]
            if messages != ref["messages"][item.id]:
                messages_differ.append(item.id)
            for (label, calls), (bfcl_ok, bfcl_why) in zip(
                entry["outputs"], ref["verdicts"][item.id], strict=True
            ):
                outcomes = run_checks(pack, item, [our_turn(calls)])
                ours, _ = verdict(outcomes)
                row = by_label.setdefault(
                    label, {"n": 0, "bfcl_pass": 0, "ours_pass": 0, "agree": 0}
                )
                row["n"] += 1
                row["bfcl_pass"] += bool(bfcl_ok)
                row["ours_pass"] += ours is True
                n += 1
                if ours is bfcl_ok:
                    agree += 1
                    row["agree"] += 1
                else:
                    disagreements.append(
                        {
                            "id": item.id,
                            "output": label,
                            "bfcl": "pass" if bfcl_ok else f"fail ({bfcl_why})",
                            "ours": {True: "pass", False: "fail", None: "not measured"}[ours],
                            "our_detail": "; ".join(o.detail for o in outcomes if o.ok is not True),
                            "calls": bfcl_result(calls),
                        }
                    )
        summary[category] = {
            "items": len(entries),
            "outputs": n,
            "agree": agree,
            "agreement_pct": round(100 * agree / n, 2) if n else None,
            "goal_met": n > 0 and 100 * agree / n >= GOAL_PCT,
            "by_output": by_label,
            "tools_differ": tools_differ,
            "messages_differ": messages_differ,
            "disagreements": disagreements,
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", default=",".join(CATEGORIES), help="comma-separated")
    parser.add_argument("--limit", type=int, default=None, help="first N items per category")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    args = parser.parse_args()
    categories = [c for c in args.categories.split(",") if c]
    started = time.perf_counter()
    python = ensure_venv(args.venv)
    built = build(categories, args.limit)
    log(f"{sum(len(e['outputs']) for v in built.values() for e in v)} outputs; BFCL's checker …")
    reference = run_reference(python, built)
    log("our checks …")
    summary = compare(built, reference)
    log(f"{'category':<24}{'items':>6}{'outputs':>9}{'agree':>7}{'%':>8}  tools≠  msgs≠")
    for cat, row in summary.items():
        log(
            f"{cat:<24}{row['items']:>6}{row['outputs']:>9}{row['agree']:>7}"
            f"{row['agreement_pct']:>8}  {len(row['tools_differ']):>6}"
            f" {len(row['messages_differ']):>6}"
        )
    for cat, row in summary.items():
        for d in row["disagreements"]:
            log(
                f"  {cat} {d['id']} {d['output']}: BFCL {d['bfcl']}, ours {d['ours']}"
                f" — {d['our_detail']}"
            )
    import importlib.metadata

    print(
        json.dumps(
            {
                "bench": "bfcl_agreement",
                "bfcl_eval": importlib.metadata.version("bfcl-eval"),
                "bfcl_model": BFCL_MODEL,
                "goal_pct": GOAL_PCT,
                "seconds": round(time.perf_counter() - started, 1),
                "categories": summary,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
