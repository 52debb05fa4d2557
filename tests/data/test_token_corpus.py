"""Token files read in place: the llm.c shard and nanoGPT layouts, the ``shards`` corpus (globs under
data.root, a manifest, ids checked once), its blocks (index arithmetic over the mapped files, never across
two), a trial's batches (one order per seed for every row, disjoint per rank) and every bad input as one
line with exit 2 from the dry run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from ablate.cli import main
from ablate.data.errors import DataError
from ablate.data.lm_blocks import Blocks
from ablate.data.token_files import HEADER_BYTES, MAGIC, inspect_file, write_tokens

VOCAB, EOS = 96, 95
LM = {
    "model": {"arch": "decoder", "n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 32},
    "train": {"max_steps": 4, "warmup_steps": 2, "val_every_steps": 4, "log_every_steps": 1, "label_smoothing": 0.0},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
    "eval": {"test": False},
}


def _stream(n: int, seed: int) -> np.ndarray:
    """Documents of 5-30 tokens in 4..VOCAB-2, each followed by EOS."""
    rng, out = np.random.default_rng(seed), []
    while sum(len(d) for d in out) < n:
        out.append(np.append(rng.integers(4, VOCAB - 1, rng.integers(5, 30)), EOS))
    return np.concatenate(out)[:n].astype(np.uint16)


def _shards(root: Path, manifest: bool = True) -> Path:
    root.mkdir()
    for i in range(2):
        write_tokens(root / f"lm_train_{i:06d}.bin", _stream(3000, i))
    write_tokens(root / "lm_val_000000.bin", _stream(800, 9))
    if manifest:
        (root / "manifest.json").write_text(json.dumps({"vocab_size": VOCAB - 1, "eos_id": EOS}))
    return root


def _experiment(root: Path, tmp: Path, **data) -> Path:
    shards = {"corpus": "shards", "root": str(root), "vocab_size": VOCAB, "block_size": 16, "max_tokens": 64}
    where = {"cache_dir": str(tmp / "cache"), "test_split": "valid", "max_len": 32}
    files = {"args": {"train": "lm_train_*.bin", "valid": "lm_val_*.bin"}}
    cfg = {**LM, "data": {**shards, **where, **files, **data}}
    path = tmp / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_shard_reads_back_what_was_written_and_a_bin_file_reads_raw(tmp_path) -> None:
    tokens = _stream(1000, 1)
    found = inspect_file(write_tokens(tmp_path / "a.bin", tokens))
    assert (found.layout, found.n_tokens, found.offset) == ("llmc", 1000, HEADER_BYTES)
    assert np.array_equal(found.tokens(), tokens)
    tokens.tofile(tmp_path / "train.bin")  # nanoGPT: raw uint16, no header
    raw = inspect_file(tmp_path / "train.bin")
    assert raw.layout == "nanogpt" and np.array_equal(raw.tokens(), tokens)
    assert not list(tmp_path.glob(".*tmp*"))  # the atomic write left no temporary file


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[:-2], "truncated llm.c shard: its header says 1,000 tokens"),
        (lambda b: b[:100], "truncated llm.c shard (100 bytes"),
        (lambda b: b[:4] + np.int32(7).tobytes() + b[8:], "llm.c shard version 7"),
        (lambda b: b"x" + b[4:], "is not a whole number of uint16 tokens"),
    ],
)
def test_a_damaged_shard_is_one_line(tmp_path, damage, message) -> None:
    good = write_tokens(tmp_path / "a.bin", _stream(1000, 1)).read_bytes()
    (tmp_path / "b.bin").write_bytes(damage(good))
    with pytest.raises(DataError, match=re.escape(message)) as exc:
        inspect_file(tmp_path / "b.bin")
    assert "\n" not in str(exc.value) and int(np.frombuffer(good[:4], np.int32)[0]) == MAGIC


def test_blocks_are_index_arithmetic_and_never_span_two_files() -> None:
    a, b = np.arange(0, 21, dtype=np.uint16), np.arange(100, 110, dtype=np.uint16)
    blocks = Blocks([a, b], 4)  # (21 - 1) // 4 = 5 blocks, then (10 - 1) // 4 = 2
    assert len(blocks) == 7 and blocks.left_out == 0 + 1
    rows = blocks.take([4, 5, 6])
    assert rows.tolist() == [[16, 17, 18, 19, 20], [100, 101, 102, 103, 104], [104, 105, 106, 107, 108]]


def test_the_shards_corpus_trains_a_language_model(tmp_path, capsys) -> None:
    exp = _experiment(_shards(tmp_path / "data"), tmp_path)
    out = tmp_path / "run"
    assert main(["train", str(exp), "--output", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["val/ppl"] > 1 and metrics["val/bpc"] is None  # no text behind the tokens: no bpc
    assert (out / "outputs" / "valid.nll").is_file()


def test_batches_follow_the_seed_not_the_row_and_split_over_ranks(tmp_path) -> None:
    from ablate.config import load_config
    from ablate.data.lm_datamodule import LanguageModelDataModule
    from ablate.data.prepare import prepare_data

    exp = _experiment(_shards(tmp_path / "data"), tmp_path)
    data = prepare_data(load_config(str(exp)).data, progress=False)

    def order(seed: int, rank: int = 0, world: int = 1) -> list[int]:
        dm = LanguageModelDataModule(data, block_size=16, max_tokens=64, seed=seed, test_split="valid")
        dm._rank_world = lambda: (rank, world)  # what a DDP trainer would say
        return [i for b in dm.train_dataloader() for i in b["index"].tolist()]

    assert order(1) == order(1) != order(2)  # every row of a sweep draws seed s's order
    zero, one = order(1, 0, 2), order(1, 1, 2)
    assert zero and one and not set(zero) & set(one)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"args": {"train": "nothing_*.bin", "valid": "lm_val_*.bin"}}, "data.args.train: no file matches"),
        ({"vocab_size": 64}, "data.vocab_size=64 is below the tokenizer's 95"),
        ({"eos_id": 3}, "data.eos_id=3 but"),
    ],
)
def test_a_bad_shards_input_is_one_line_from_the_dry_run(tmp_path, capsys, data, message) -> None:
    exp = _experiment(_shards(tmp_path / "data"), tmp_path, **data)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"name": "s", "experiment": str(exp), "seeds": [1], "rows": [{"name": "base"}]}))
    assert main(["sweep", str(sweep), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err
    assert not (tmp_path / ".ablate").exists()


def test_an_id_beyond_the_vocabulary_is_found_once_and_cached(tmp_path, capsys) -> None:
    root = _shards(tmp_path / "data", manifest=False)
    write_tokens(root / "lm_train_000002.bin", np.array([5, VOCAB + 3, EOS], np.uint16))
    exp = _experiment(root, tmp_path, eos_id=EOS)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"name": "s", "experiment": str(exp), "seeds": [1], "rows": [{"name": "base"}]}))
    assert main(["sweep", str(sweep), "--dry-run"]) == 2
    assert f"token id {VOCAB + 3} >= data.vocab_size={VOCAB}" in capsys.readouterr().err
    assert len(list((tmp_path / "cache" / "tokens").glob("*.json"))) == 3  # each file scanned once, kept


@pytest.mark.integration  # three short trainings: the resume tier
def test_a_trial_on_shards_killed_mid_epoch_resumes_exactly(tmp_path, monkeypatch) -> None:
    """Killed as step 5 starts (last.ckpt at step 4, a few batches into an epoch of 93) and run again in its
    directory, a trial on token shards logs the same losses and ends with the same numbers as a straight run."""
    import csv

    from ablate.config import load_config
    from ablate.train.monitor import RunMonitor
    from ablate.train.run import train

    exp = _experiment(_shards(tmp_path / "data"), tmp_path)
    overrides = ["train.max_steps=8", "train.val_every_steps=8", "train.checkpoint_every_steps=2"]

    def losses(run_dir: Path) -> dict[int, float]:
        with open(run_dir / "metrics.csv", newline="") as f:
            return {int(r["step"]): float(r["train/loss"]) for r in csv.DictReader(f) if r.get("train/loss")}

    straight = train(load_config(str(exp), overrides=overrides), tmp_path / "straight")

    class Killed(Exception):
        pass

    def boom(self, trainer, *args):
        if trainer.global_step == 5:
            raise Killed

    with monkeypatch.context() as mp:
        mp.setattr(RunMonitor, "on_train_batch_start", boom)
        with pytest.raises(Killed):
            train(load_config(str(exp), overrides=overrides), tmp_path / "killed")
    resumed = train(load_config(str(exp), overrides=overrides), tmp_path / "killed")
    assert resumed["val/ppl"] == pytest.approx(straight["val/ppl"], rel=1e-6)
    assert losses(tmp_path / "killed") == pytest.approx(losses(tmp_path / "straight"), rel=1e-5)
