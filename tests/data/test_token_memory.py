"""A trial's memory does not grow with its corpus: the same trial on llm.c shards of 1M and of 50M training
tokens (made here), each in its own process, peaks within 100 MB of the other (with the corpus's id scan
cached beforehand, as a sweep's dry run leaves it). Blocks are index arithmetic over the mapped files; a
copy of the training split (the way the language model's data was read before) would add ~100 MB of uint16
tokens and ~400 MB as int64."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ablate.data.token_files import write_tokens

pytestmark = pytest.mark.integration
VOCAB, EOS = 512, 511
MEASURE = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"  # KiB on Linux
)


def _corpus(root: Path, train_tokens: int) -> Path:
    root.mkdir()
    rng = np.random.default_rng(0)
    per_shard = 10_000_000  # several files, as FineWeb's 100M-token shards are, at a tenth of their size
    for i, start in enumerate(range(0, train_tokens, per_shard)):
        tokens = rng.integers(4, EOS, min(per_shard, train_tokens - start), dtype=np.uint16)
        tokens[::200] = EOS  # documents of 200 tokens
        write_tokens(root / f"fw_train_{i:06d}.bin", tokens)
    write_tokens(root / "fw_val_000000.bin", rng.integers(4, EOS, 20_000, dtype=np.uint16))
    return root


def _peak_rss_mb(tmp: Path, train_tokens: int) -> float:
    root = _corpus(tmp / f"data{train_tokens}", train_tokens)
    data = {
        "corpus": "shards",
        "root": str(root),
        "args": {"train": "fw_train_*.bin", "valid": "fw_val_*.bin"},
        "vocab_size": VOCAB,
        "eos_id": EOS,
        "block_size": 256,
        "max_tokens": 2048,
        "max_len": 64,
        "test_split": "valid",
        "cache_dir": str(tmp / "cache"),
    }
    cfg = {
        "model": {"arch": "decoder", "n_layers": 1, "d_model": 32, "d_ff": 64, "n_heads": 2, "max_positions": 256},
        "data": data,
        "train": {"max_steps": 20, "warmup_steps": 5, "val_every_steps": 20, "label_smoothing": 0.0},
        "trainer": {"accelerator": "cpu"},
        "eval": {"test": False},
        "logging": {"wandb": "disabled", "progress_bar": False},
    }
    exp = tmp / f"exp{train_tokens}.yaml"
    exp.write_text(yaml.safe_dump(cfg))
    from ablate.config import load_config
    from ablate.data.prepare import prepare_data

    prepare_data(load_config(str(exp)).data, progress=False)  # the id scan, once, cached (as a dry run does)
    run = [sys.executable, "-m", "ablate", "train", str(exp), "--output", str(tmp / f"run{train_tokens}")]
    out = subprocess.run([sys.executable, "-c", MEASURE, *run], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def test_a_trials_memory_is_flat_in_the_corpus_size(tmp_path) -> None:
    small, large = _peak_rss_mb(tmp_path, 1_000_000), _peak_rss_mb(tmp_path, 50_000_000)
    print(f"peak RSS of the trial: {small:.0f} MB on 1M training tokens, {large:.0f} MB on 50M")
    assert abs(large - small) < 100, (small, large)
