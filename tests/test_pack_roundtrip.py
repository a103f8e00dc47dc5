"""Property: any valid pack survives load → dump → load unchanged."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from touchstone_ray.pack import Pack, dump_pack, load_pack, pack_from_data

ids = st.from_regex(r"[A-Z][0-9]{1,2}", fullmatch=True)
text = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "")


@st.composite
def packs(draw: st.DrawFn) -> Pack:
    dim_ids = draw(st.lists(ids, min_size=1, max_size=5, unique=True))
    prompt_ids = draw(st.lists(ids, min_size=1, max_size=8, unique=True))
    cuts = sorted(draw(st.sets(st.integers(1, 7), max_size=3)) & set(range(1, len(prompt_ids))))
    groups = [prompt_ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(prompt_ids)], strict=True)]
    safety = {pid: draw(st.booleans()) for pid in prompt_ids}
    scope = draw(st.sampled_from(["all", "curated"]))
    curated = [p for p in prompt_ids if safety[p] or (scope == "all" and draw(st.booleans()))]
    data = {
        "id": draw(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,10}", fullmatch=True)),
        "title": draw(text),
        "version": draw(st.integers(1, 9)),
        "description": draw(st.text(max_size=40)),
        "language": draw(st.sampled_from(["de", "en"])),
        "scale": {k: draw(text) for k in range(1, 6)},
        "dimensions": [
            {"id": d, "name": draw(text), "weight": draw(st.integers(1, 5))} for d in dim_ids
        ],
        "ko_rule": {
            "dimension": draw(st.sampled_from(dim_ids)),
            "threshold": draw(st.integers(1, 4)),
            "red_flag_scope": scope,
            "red_flag_prompts": curated,
        },
        "prompt_variants": [
            {"id": v, "system_prompt": draw(st.none() | text)}
            for v in draw(st.lists(st.sampled_from(["a", "b", "none"]), min_size=1, unique=True))
        ],
        "sampling": {"temperature": draw(st.floats(0, 2)), "seed": draw(st.integers(0, 99))},
        "categories": [
            {
                "id": f"C{i}",
                "name": draw(text),
                "prompts": [
                    {
                        "id": pid,
                        "title": draw(text),
                        "prompt": draw(text),
                        "green_flags": draw(st.lists(text, max_size=3)),
                        "red_flags": draw(st.lists(text, max_size=3)),
                        "max_tokens": draw(st.none() | st.integers(1, 4096)),
                        "repeats": draw(st.integers(1, 3)),
                        "safety_critical": safety[pid],
                        "format_strict": draw(st.booleans()),
                    }
                    for pid in group
                ],
            }
            for i, group in enumerate(groups)
        ],
    }
    return pack_from_data(data, "<generated>")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pack=packs())
def test_load_dump_load_roundtrip(pack: Pack, tmp_path: Path) -> None:
    path = tmp_path / "roundtrip.yaml"
    path.write_text(dump_pack(pack))
    assert load_pack(path) == pack
