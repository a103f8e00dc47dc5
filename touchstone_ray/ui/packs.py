"""The packs pages (issue item 6): the list of the packs folder, one pack's view, and the
validator of a pasted or uploaded pack.

Only ``*.yaml`` / ``*.yml`` files directly in the packs folder are listed and opened (by file
name, never by a path). A pasted pack is checked by the loader itself
(:func:`touchstone_ray.pack.load_pack`, from a private temp file named ``pasted.yaml``), so
the page shows exactly the one-line error ``validate`` prints, prefixed ``pasted.yaml``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from touchstone_ray.errors import TouchstoneError
from touchstone_ray.pack import Pack, load_pack
from touchstone_ray.ui._page import e

__all__ = ["MAX_PASTE_BYTES", "pack_files", "pack_view_html", "packs_html", "validate_text"]

MAX_PASTE_BYTES = 1024 * 1024
"""Largest pasted pack accepted (bytes); the app refuses bigger bodies with 413."""
PASTED = "pasted.yaml"


def pack_files(folder: Path) -> list[Path]:
    """The pack files directly in ``folder``, sorted by name (none when it is missing)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def validate_text(text: str | bytes) -> tuple[bool, str]:
    """``(ok, line)``: the pack summary (``id vN: P prompts, …``) or the loader's one-line
    error for the pasted YAML ``text`` (an uploaded file's bytes as they are, so the loader
    itself reports invalid UTF-8)."""
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="touchstone-ui-") as tmp:
        path = Path(tmp) / PASTED
        path.write_bytes(data)
        try:
            return True, load_pack(path).summary()
        except TouchstoneError as exc:
            return False, str(exc).replace(str(path), PASTED)


def _validator(text: str = "", result: tuple[bool, str] | None = None) -> str:
    out = ""
    if result is not None:
        cls = "ok" if result[0] else "err"
        out = f'<p id="validate-result" class="{cls}">{e(result[1])}</p>'
    return (
        '<h2>Validate a pack</h2><form method="post" action="/packs/validate" '
        'enctype="multipart/form-data">'
        f'<textarea name="yaml" id="pack-yaml" spellcheck="false">{e(text)}</textarea>'
        '<p><label>or upload a file <input type="file" name="file" id="pack-file"></label></p>'
        f'<p><button type="submit" id="validate">validate</button></p></form>{out}'
    )


def packs_html(folder: Path, text: str = "", result: tuple[bool, str] | None = None) -> str:
    """The packs page body: every pack file with its summary or error line, and the
    validator (with the last result when given)."""
    rows = []
    for path in pack_files(folder):
        try:
            line, cls = load_pack(path).summary(), "ok"
        except TouchstoneError as exc:
            line, cls = str(exc), "err"
        rows.append(
            f'<tr><td><a href="/packs/{e(path.name)}">{e(path.name)}</a></td>'
            f'<td class="{cls}">{e(line)}</td></tr>'
        )
    table = (
        f"<table><thead><tr><th>file</th><th>check</th></tr></thead><tbody>{''.join(rows)}"
        "</tbody></table>"
        if rows
        else f'<p class="muted">No packs in {e(folder)}.</p>'
    )
    return f'<h1>Packs <span class="muted">in {e(folder)}</span></h1>{table}' + _validator(
        text, result
    )


def _ko_words(pack: Pack) -> str:
    rule = pack.ko_rule
    flags = (
        "any red flag on any prompt"
        if rule.red_flag_scope == "all"
        else "a red flag on " + (", ".join(rule.red_flag_prompts) or "no prompt")
    )
    return f"knocked out when {rule.dimension} scores {rule.threshold} or less, or {flags}"


def pack_view_html(path: Path) -> str:
    """One pack: dimensions, the K.-o. rule in words, variants, prompts with their flags.
    Raises :class:`~touchstone_ray.errors.PackError` for an invalid pack."""
    pack = load_pack(path)
    dims = "".join(
        f"<tr><td>{e(d.id)}</td><td>{e(d.name)}</td><td>{e(d.weight)}</td></tr>"
        for d in pack.dimensions
    )
    variants = "".join(
        f"<li><code>{e(v.id)}</code> {e(v.system_prompt or '(no system prompt)')}</li>"
        for v in pack.prompt_variants
    )
    prompts = []
    for category, p in pack.all_prompts():
        green = "".join(f"<li>✓ {e(f)}</li>" for f in p.green_flags)
        red = "".join(f"<li>✗ {e(f)}</li>" for f in p.red_flags)
        safety = ' <span class="badge ko-fail">safety critical</span>' if p.safety_critical else ""
        prompts.append(
            f"<tr><td>{e(category.id)}</td><td>{e(p.id)}{safety}</td><td>{e(p.title)}</td>"
            f"<td><pre>{e(p.prompt)}</pre></td><td><ul>{green}{red}</ul></td></tr>"
        )
    return (
        f'<h1>{e(pack.title)} <span class="muted">{e(pack.summary())}</span></h1>'
        f"<h2>Dimensions</h2><table><thead><tr><th>id</th><th>name</th><th>weight</th></tr>"
        f"</thead><tbody>{dims}</tbody></table>"
        f'<h2>K.-o. rule</h2><p id="ko-rule">{e(_ko_words(pack))}</p>'
        f"<h2>Variants</h2><ul>{variants}</ul>"
        "<h2>Prompts</h2><table><thead><tr><th>category</th><th>id</th><th>title</th>"
        f"<th>prompt</th><th>flags</th></tr></thead><tbody>{''.join(prompts)}</tbody></table>"
    )
