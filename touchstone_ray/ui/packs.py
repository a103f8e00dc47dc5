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
from touchstone_ray.lang import labels, ui_labels
from touchstone_ray.pack import load_pack
from touchstone_ray.report import ko_rule_lines
from touchstone_ray.ui._page import e, th

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


def _validator(u: dict[str, str], text: str = "", result: tuple[bool, str] | None = None) -> str:
    out = ""
    if result is not None:
        cls = "ok" if result[0] else "err"
        out = f'<p id="validate-result" class="{cls}">{e(result[1])}</p>'
    return (
        f'<h2>{e(u["validate_title"])}</h2><form method="post" action="/packs/validate" '
        'enctype="multipart/form-data">'
        f'<textarea name="yaml" id="pack-yaml" spellcheck="false">{e(text)}</textarea>'
        f'<p><label>{e(u["upload"])} <input type="file" name="file" id="pack-file"></label></p>'
        f'<p><button type="submit" id="validate">{e(u["validate"])}</button></p></form>{out}'
    )


def packs_html(
    folder: Path, text: str = "", result: tuple[bool, str] | None = None, lang: str = "en"
) -> str:
    """The packs page body in ``lang``: every pack file with its summary or error line, and
    the validator (with the last result when given)."""
    u = ui_labels(lang)
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
    head = f"<tr>{th(lang, u['h_file'])}{th(lang, u['h_check'])}</tr>"
    table = (
        f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else f'<p class="muted">{e(u["no_packs"].format(path=folder))}</p>'
    )
    title = f'{e(u["packs_title"])} <span class="muted">{e(u["packs_in"].format(path=folder))}'
    return f"<h1>{title}</span></h1>{table}" + _validator(u, text, result)


def pack_view_html(path: Path) -> tuple[str, str]:
    """``(language, body HTML)`` of one pack's page, in the pack's ``language``: dimensions,
    the K.-o. rule in the report's words, variants, prompts with their flags. Raises
    :class:`~touchstone_ray.errors.PackError` for an invalid pack."""
    pack = load_pack(path)
    lang = pack.language
    t, u = labels(lang), ui_labels(lang)
    dims = "".join(
        f"<tr><td>{e(d.id)}</td><td>{e(d.name)}</td><td>{e(d.weight)}</td></tr>"
        for d in pack.dimensions
    )
    variants = "".join(
        f"<li><code>{e(v.id)}</code> {e(v.system_prompt or t['no_system_prompt'])}</li>"
        for v in pack.prompt_variants
    )
    prompts = []
    for category, p in pack.all_prompts():
        green = "".join(f"<li>✓ {e(f)}</li>" for f in p.green_flags)
        red = "".join(f"<li>✗ {e(f)}</li>" for f in p.red_flags)
        safety = (
            f' <span class="badge ko-fail">{e(t["safety_critical"])}</span>'
            if p.safety_critical
            else ""
        )
        prompts.append(
            f"<tr><td>{e(category.id)}</td><td>{e(p.id)}{safety}</td><td>{e(p.title)}</td>"
            f"<td><pre>{e(p.prompt)}</pre></td><td><ul>{green}{red}</ul></td></tr>"
        )
    rule = "".join(f"<li>{e(line)}</li>" for line in ko_rule_lines(pack, t))

    def heads(*keys: str) -> str:
        return "<tr>" + "".join(th(lang, u[k]) for k in keys) + "</tr>"

    return lang, (
        f'<h1>{e(pack.title)} <span class="muted">{e(pack.summary())}</span></h1>'
        f"<h2>{e(u['pack_dimensions'])}</h2><table><thead>{heads('h_id', 'h_name', 'h_weight')}"
        f"</thead><tbody>{dims}</tbody></table>"
        f'<h2>{e(t["ko_rule"])}</h2><ol id="ko-rule">{rule}</ol>'
        f"<h2>{e(u['variants'])}</h2><ul>{variants}</ul>"
        f"<h2>{e(u['prompts'])}</h2><table><thead>"
        f"{heads('h_category', 'h_id', 'h_title', 'h_prompt', 'h_flags')}</thead>"
        f"<tbody>{''.join(prompts)}</tbody></table>"
    )
