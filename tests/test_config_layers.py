"""What a layer of config means beyond its keys: a path an experiment file names is read from that
file's folder (as a sweep file's ``experiment:`` and ``runs:`` are), and a layer that names another
corpus starts the corpus's options afresh, in the full load and in a sweep's fast composition alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.config import load_config
from ablate.config.compose import Experiment
from ablate.config.load import to_dict
from ablate.errors import ConfigError

TEXT = "{train: [train.en, train.de], valid: [valid.en, valid.de], test: [test.en, test.de]}"  # a translator's pairs


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_paths_a_file_names_are_read_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = _write(tmp_path / "a" / "parent.yaml", "data: {cache_dir: cache}\nlogging: {output_dir: ~/runs}\n")
    child = _write(tmp_path / "a" / "b" / "child.yaml", f"extends: {parent}\ndata: {{root: ../corpus}}\n")
    monkeypatch.chdir(tmp_path)
    cfg = load_config(child)
    assert Path(cfg.data.root) == tmp_path / "a" / "b" / ".." / "corpus"  # the child's folder
    assert Path(cfg.data.cache_dir) == tmp_path / "a" / "cache"  # the parent's folder
    assert cfg.logging.output_dir == str(Path("~/runs").expanduser())
    # the command line keeps the shell's meaning: the current directory
    assert load_config(child, ["data.root=here"]).data.root == "here"


def test_an_absolute_path_or_an_interpolation_is_left_as_written(tmp_path: Path) -> None:
    exp = _write(tmp_path / "e.yaml", f"data: {{root: {tmp_path / 'x'}, cache_dir: '${{data.root}}'}}\n")
    cfg = load_config(exp)
    assert cfg.data.root == str(tmp_path / "x") and cfg.data.cache_dir == str(tmp_path / "x")


def test_another_corpus_starts_its_options_afresh_and_the_same_corpus_keeps_them(tmp_path: Path) -> None:
    parent = _write(tmp_path / "p.yaml", "data: {corpus: builtin, args: {n_train: 300, n_valid: 20}}\n")
    child = _write(tmp_path / "c.yaml", f"extends: p.yaml\ndata: {{corpus: textfiles, args: {TEXT}}}\n")
    assert set(load_config(child).data.args) == {"train", "valid", "test"}
    same = _write(tmp_path / "s.yaml", "extends: p.yaml\ndata: {corpus: builtin, args: {n_test: 10}}\n")
    assert dict(load_config(same).data.args) == {"n_train": 300, "n_valid": 20, "n_test": 10}
    # an override naming another corpus and no options of its own: the new corpus's own error, one line
    with pytest.raises(ConfigError, match=r"^command line: data\.args\.train: the textfiles corpus needs this"):
        load_config(parent, ["data.corpus=textfiles"])


def test_a_sweep_row_that_changes_the_corpus_composes_as_the_full_load(tmp_path: Path) -> None:
    exp = _write(tmp_path / "p.yaml", "data: {corpus: builtin, args: {n_train: 300}}\n")
    row = ("row", ["data.corpus=textfiles", f"data.args={TEXT}", f"data.root={tmp_path}"])
    same = ("row", ["data.args.n_valid=20"])
    for layer in (row, same):
        assert Experiment(exp).config([layer]) == to_dict(load_config(exp, layers=[layer]))
    assert set(Experiment(exp).config([row])["data"]["args"]) == {"train", "valid", "test"}
