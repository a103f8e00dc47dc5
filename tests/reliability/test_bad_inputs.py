"""The bad-input corpus (``bad/``): every broken pack, fleet config, judge config and bundle
exits 2 with one stderr line naming the file and the YAML path, no traceback, and leaves an
existing bundle byte for byte and mtime for mtime as it was.

Each YAML file of the corpus says what it breaks in its first comment line and what the error
line must contain in ``# expect: …``; each bundle case is a folder of files laid over a copy of
a good bundle, with ``expect.txt`` giving the expected text per command. The CLI runs in this
process through :func:`touchstone_ray.cli.main` (the console script's own entry point); a few
cases run as real subprocesses too. Nothing here starts Ray: reaching it fails the test.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from eval_helpers import cli, snapshot, tiny_pack, write_yaml

from touchstone_ray.bundle import Bundle
from touchstone_ray.cli import main
from touchstone_ray.config import load_config
from touchstone_ray.eval.matrix import plan_models
from touchstone_ray.pack import load_pack
from touchstone_ray.records import EvalResponse
from touchstone_ray.storage import JsonlWriter
from touchstone_ray.yamlio import MAX_FILE_BYTES

BAD = Path(__file__).resolve().parent / "bad"
UNSET_VAR = "TOUCHSTONE_REL_UNSET_KEY"


def _files(kind: str) -> list[Path]:
    return sorted((BAD / kind).glob("*.yaml"))


def _expect(path: Path) -> str:
    """The ``# expect: …`` line of a corpus file (read as bytes: some are not UTF-8)."""
    for line in path.read_bytes().splitlines():
        if line.startswith(b"# expect: "):
            return line.removeprefix(b"# expect: ").decode("ascii")
    raise AssertionError(f"{path}: no '# expect:' line")


@dataclass
class World:
    """A good pack, fleet config, judge config and a bundle made from them."""

    pack: Path
    config: Path
    judge_config: Path
    bundle: Path


def _good_world(tmp: Path) -> World:
    pack_path = write_yaml(tmp / "pack.yaml", tiny_pack(3, pack_id="relgood"))
    config_path = write_yaml(
        tmp / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "hosts": {"gpu-a": {"label": "gpu-a"}},
            "models": [{"id": "m1", "engine": "simulated", "host": "gpu-a"}],
        },
    )
    judge_path = write_yaml(
        tmp / "judge.yaml", {"judges": [{"id": "j1", "engine": "simulated", "model": "sj"}]}
    )
    pack, config = load_pack(pack_path), load_config(config_path)
    bundle = Bundle.create(tmp / "runs", pack, pack_path, config, {"version": "test"})
    plans = [p for host_plans in plan_models(pack, config).values() for p in host_plans]
    cells = [c for p in plans for c in p.cells(pack)]
    with JsonlWriter(bundle.layout.shard("m1")) as writer:
        for cell in cells[:-1]:
            writer.write(
                EvalResponse(
                    key=cell.key,
                    pack_id=pack.id,
                    pack_version=pack.version,
                    model=cell.model,
                    engine="simulated",
                    host="gpu-a",
                    variant=cell.variant,
                    category=cell.category,
                    prompt_id=cell.prompt_id,
                    repeat=cell.repeat,
                    ok=True,
                    response_text="Antwort.",
                )
            )
    # torn tails: a run that got past validation would cut them (eval resume, judge repair)
    with open(bundle.layout.shard("m1"), "ab") as fh:
        fh.write(b'{"key": "m1|none|E1|1", "o')
    verdicts = bundle.root / "judgements" / "j1" / "verdicts.jsonl"
    verdicts.parent.mkdir(parents=True)
    verdicts.write_bytes(b'{"key": "m1|baseline|A1|1", "sc')
    return World(pack_path, config_path, judge_path, bundle.root)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return _good_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(autouse=True)
def _no_ray(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail loudly instead of starting Ray when a bad input slips through validation."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a bad input reached Ray")

    monkeypatch.setattr("touchstone_ray.eval.run.ensure_ray", refuse)
    monkeypatch.setattr("touchstone_ray.fleet.session.ensure_ray", refuse)
    monkeypatch.delenv(UNSET_VAR, raising=False)
    yield


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    assert captured.out == "", captured.out
    return code, captured.err


def _assert_one_line(code: int, err: str, names: Path, expect: str) -> None:
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("error: ") and "Traceback" not in err, err
    assert str(names) in lines[0], lines[0]
    assert expect in lines[0], lines[0]


# --- packs -------------------------------------------------------------------------------
@pytest.mark.parametrize("path", _files("packs"), ids=lambda p: p.stem)
def test_bad_pack(
    path: Path, world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = snapshot(world.bundle)
    expect = _expect(path)
    code, err = _main(capsys, "validate", str(path))
    _assert_one_line(code, err, path, expect)
    args = ["--config", str(world.config), "--resume", str(world.bundle)]
    code, err = _main(capsys, "eval", "--pack", str(path), *args)
    _assert_one_line(code, err, path, expect)
    assert snapshot(world.bundle) == before


def test_huge_pack_generated_at_test_time(
    world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    huge = tmp_path / "huge.yaml"
    text = (BAD / "packs" / "weight_zero.yaml").read_text(encoding="utf-8")
    huge.write_text(text + "# " + "x" * (MAX_FILE_BYTES + 1000) + "\n", encoding="utf-8")
    size = huge.stat().st_size
    assert size > 5 * 1024 * 1024
    before = snapshot(world.bundle)
    code, err = _main(
        capsys, "eval", "--pack", str(huge), "--config", str(world.config), "--resume",
        str(world.bundle),
    )  # fmt: skip
    _assert_one_line(code, err, huge, f"pack is {size} bytes, more than the {MAX_FILE_BYTES}")
    assert snapshot(world.bundle) == before


@pytest.mark.parametrize("name", ["alias_bomb", "deep_nesting", "invalid_utf8"])
def test_bad_pack_in_a_real_process(name: str, world: World) -> None:
    """The console script in its own process: exit 2, one line, no traceback."""
    path = BAD / "packs" / f"{name}.yaml"
    before = snapshot(world.bundle)
    proc = cli("eval", "--pack", str(path), "--config", str(world.config), "--resume",
               str(world.bundle), timeout=60)  # fmt: skip
    _assert_one_line(proc.returncode, proc.stderr, path, _expect(path))
    assert proc.stdout == ""
    assert snapshot(world.bundle) == before


# --- fleet and judge configs -------------------------------------------------------------
@pytest.mark.parametrize("path", _files("configs"), ids=lambda p: p.stem)
def test_bad_fleet_config(path: Path, world: World, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(world.bundle)
    code, err = _main(
        capsys, "eval", "--pack", str(world.pack), "--config", str(path), "--resume",
        str(world.bundle),
    )  # fmt: skip
    _assert_one_line(code, err, path, _expect(path))
    assert snapshot(world.bundle) == before


@pytest.mark.parametrize("path", _files("judges"), ids=lambda p: p.stem)
def test_bad_judge_config(path: Path, world: World, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(world.bundle)
    code, err = _main(capsys, "judge", "--bundle", str(world.bundle), "--judge-config", str(path))
    _assert_one_line(code, err, path, _expect(path))
    assert snapshot(world.bundle) == before


# --- bundles -----------------------------------------------------------------------------
def _bundle_cases() -> list[Path]:
    return sorted(p for p in (BAD / "bundles").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", _bundle_cases(), ids=lambda p: p.name)
def test_bad_bundle(
    case: Path, world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bundle = tmp_path / world.bundle.name
    shutil.copytree(world.bundle, bundle)
    for layer in case.iterdir():
        if layer.name != "expect.txt":
            shutil.copyfile(layer, bundle / layer.name)
    expects = dict(
        line.split(": ", 1)
        for line in (case / "expect.txt").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )
    assert expects, case
    before = snapshot(bundle)
    commands = {
        "eval": ["eval", "--pack", str(world.pack), "--config", str(world.config), "--resume"],
        "judge": ["judge", "--judge-config", str(world.judge_config), "--bundle"],
    }
    for command, expect in expects.items():
        code, err = _main(capsys, *commands[command], str(bundle))
        _assert_one_line(code, err, bundle, expect)
        assert snapshot(bundle) == before, command


def test_corpus_size() -> None:
    """At least 30 files, each stating what it expects."""
    files = [p for p in BAD.rglob("*") if p.is_file()]
    assert len(files) >= 30
    for path in _files("packs") + _files("configs") + _files("judges"):
        assert _expect(path), path
