"""BFCL's own side of ``bench_bfcl_agreement.py``: run inside the bench's venv, where
``bfcl-eval`` is installed with its dependencies (not a test module, imports nothing of
touchstone-ray).

``python _bfcl_reference.py IN.json OUT.json``. ``IN.json``: ``{"model": <a BFCL model key>,
"categories": {category: [{"id", "outputs": [{"label", "result"}]}]}}`` where ``result`` is
what BFCL's OpenAI chat-completions handler records for an answer: a list of ``{name:
arguments-as-a-JSON-string}`` when the model called tools, else the answer text.

Each output is scored the way ``bfcl_eval.eval_checker.eval_runner`` scores a result file:
``_evaluate_single_ast_entry`` (``decode_ast`` of the FC handler, the format check, then
``ast_checker``) for categories with possible answers, ``_evaluate_single_relevance_entry``
for ``irrelevance``; the prompts without the language hint, as the runner loads them.

``OUT.json``: per category ``{"verdicts": {id: [[valid, error_type], ...]}, "tools": {id:
[the tools BFCL's handler sends]}, "messages": {id: the first turn's messages}}``; the tools
are ``convert_to_tool`` of the prompt with the language hint, as at generation, in the
chat-completions shape (``ModelStyle.OPENAI_COMPLETIONS``). ``model`` must be an FC model
whose names BFCL turns from ``.`` to ``_`` (``underscore_to_dot``), e.g.
``gpt-4o-2024-11-20-FC``: its handler's ``decode_ast`` is the chat-completions one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    # The handler builds an OpenAI client it never uses here; it wants a key to exist.
    os.environ.setdefault("OPENAI_API_KEY", "unused-no-request-is-made")
    from bfcl_eval.constants.enums import Language, ModelStyle, ReturnFormat
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.eval_checker import eval_runner
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import (
        is_relevance_or_irrelevance,
        load_dataset_entry,
        load_ground_truth_entry,
    )

    with open(src, encoding="utf-8") as f:
        request = json.load(f)
    model = request["model"]
    handler = eval_runner.get_handler(model)
    out: dict[str, Any] = {}
    for category, entries in request["categories"].items():
        prompts = {
            e["id"]: e
            for e in load_dataset_entry(
                category, include_prereq=False, include_language_specific_hint=False
            )
        }
        hinted = {e["id"]: e for e in load_dataset_entry(category, include_prereq=False)}
        answers: dict[str, Any] = {}
        if not is_relevance_or_irrelevance(category):
            answers = {e["id"]: e["ground_truth"] for e in load_ground_truth_entry(category)}
        verdicts: dict[str, list[list[Any]]] = {}
        tools: dict[str, Any] = {}
        messages: dict[str, Any] = {}
        for entry in entries:
            item_id = entry["id"]
            prompt = prompts[item_id]
            tools[item_id] = convert_to_tool(
                hinted[item_id]["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS
            )
            messages[item_id] = prompt["question"][0]
            rows = []
            for output in entry["outputs"]:
                if is_relevance_or_irrelevance(category):
                    res = eval_runner._evaluate_single_relevance_entry(
                        handler, item_id, output["result"], prompt, model, category
                    )
                else:
                    res = eval_runner._evaluate_single_ast_entry(
                        handler,
                        item_id,
                        output["result"],
                        answers[item_id],
                        prompt,
                        model,
                        category,
                        language=Language.PYTHON,
                        return_format=ReturnFormat.PYTHON,
                        has_tool_call_tag=False,
                    )
                rows.append([bool(res["valid"]), res.get("error_type", "")])
            verdicts[item_id] = rows
        out[category] = {"verdicts": verdicts, "tools": tools, "messages": messages}
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
