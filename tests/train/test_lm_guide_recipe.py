"""The language-model guide's own-text recipe, composed as a reader composes it: the guide's block copied
into an experiment file beside ``lm-mini.yaml`` (so it extends it), the text in a folder beside that
file, and every command run from another directory. The builtin corpus's options must not leak into the
textfiles corpus, and ``data.root`` must be read from the file that names it."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from ablate.cli import main

from .conftest import REPO

GUIDE = REPO / "docs" / "guides" / "language-models.md"
# Only what makes the run a test's size; the corpus, its folder and its files are the guide's as written.
SMALL = [
    "data.vocab_size=64",  # 60 words: the guide's 8000 pieces are for a real corpus
    "train.max_steps=2",
    "train.val_every_steps=2",
    "train.log_every_steps=1",
    "logging.progress_bar=false",
]


def guide_block() -> str:
    """The YAML block the guide marks ``<!-- recipe:own-text -->``."""
    found = re.search(r"<!-- recipe:own-text -->\s*```yaml\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    assert found, "the guide's own-text block is not marked <!-- recipe:own-text -->"
    return found.group(1)


def write_text_corpus(folder: Path) -> None:
    """Plain text, one line a document: enough tokens for a 256-token evaluation window of each split."""
    rng = random.Random(0)
    words = [f"w{i}" for i in range(60)]
    folder.mkdir(parents=True)
    for split, n in (("train", 400), ("valid", 120), ("test", 120)):
        lines = (" ".join(rng.choices(words, k=rng.randint(4, 12))) for _ in range(n))
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def reader_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of experiments/ with the guide's block as my-lm.yaml and its corpus in my-corpus/ beside it;
    the current directory elsewhere. Returns the experiment file."""
    experiments = tmp_path / "project" / "experiments"
    shutil.copytree(REPO / "experiments", experiments)
    block = guide_block()
    assert "extends: lm-mini.yaml" in block and "root: my-corpus" in block
    (experiments / "my-lm.yaml").write_text(block, encoding="utf-8")
    write_text_corpus(experiments / "my-corpus")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return experiments / "my-lm.yaml"


def test_the_guide_block_loads_with_only_its_own_corpus_options(reader_tree: Path) -> None:
    from ablate.config import load_config

    cfg = load_config(reader_tree)
    assert cfg.data.corpus == "textfiles"
    assert set(cfg.data.args) == {"train", "valid", "test"}  # none of lm-mini's builtin options
    assert Path(cfg.data.root) == reader_tree.parent / "my-corpus"  # the file's folder, not the cwd
    assert cfg.model.arch == "decoder" and cfg.data.block_size == 64  # the rest is lm-mini's


def test_the_guide_block_dry_runs_in_a_sweep_and_trains_from_another_directory(
    reader_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "project" / "my-sweep.yaml"
    sweep.write_text(
        "name: my-lm\nexperiment: experiments/my-lm.yaml\nseeds: [1]\nstore: sqlite\n"
        f"overrides: [{', '.join(SMALL)}]\n"
        "rows:\n  - {name: sinusoidal, group: base}\n  - {name: alibi, group: positions, "
        "overrides: [model.positional=alibi]}\n",
        encoding="utf-8",
    )
    assert main(["sweep", str(sweep), "--dry-run"]) == 0, capsys.readouterr().err
    assert not (tmp_path / "project" / "runs").exists()  # a dry run stores nothing
    out = tmp_path / "run"
    assert main(["train", str(reader_tree), *SMALL, "--output", str(out)]) == 0, capsys.readouterr().err
    assert (out / "metrics.json").is_file()
