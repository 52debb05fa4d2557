"""A language model's trial memory against the size of its token corpus: prints measured peak RSS, asserts nothing.

    python benchmarks/bench_token_memory.py --sizes 1e6 5e7 1e9 --out /tmp/token-memory

For each size it writes llm.c shards of that many training tokens (100M a file, as FineWeb's; random ids
below 512 with a separator every 1,000 tokens) and a 1M-token validation file under ``--out``, checks
them once (the id scan a sweep's dry run does, cached), then runs the same 50-step tiny
trial (``ablate train``, block 1,024, 8 blocks a step) in a fresh process and reads its peak RSS. The first
size is the reference: each line prints the peak and its difference and ratio to it. Disk: 2 bytes a token.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
# a small vocabulary: the output layer's logits (tokens a step x vocabulary) would otherwise dwarf what is
# measured here, the data's share of memory, and their allocations make the peak noisy (8,192 ids at 8K
# tokens a step: peaks of 1,763 MB, 2,284 MB and 1,819 MB at 1M, 50M and 1B tokens, measured)
VOCAB, EOS, PER_FILE = 512, 511, 100_000_000


def make_corpus(folder: Path, tokens: int) -> None:
    from ablate.data.token_files import write_tokens

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i, start in enumerate(range(0, tokens, PER_FILE)):
        path = folder / f"bench_train_{i:06d}.bin"
        if not path.is_file():
            chunk = rng.integers(0, EOS, min(PER_FILE, tokens - start), dtype=np.uint16)
            chunk[::1000] = EOS
            write_tokens(path, chunk)
    if not (folder / "bench_val_000000.bin").is_file():
        write_tokens(folder / "bench_val_000000.bin", rng.integers(0, EOS, 1_000_000, dtype=np.uint16))


def experiment(folder: Path, cache: Path) -> dict:
    data = {"corpus": "shards", "root": str(folder), "args": {"train": "bench_train_*.bin", "valid": "bench_val_*.bin"}}
    data.update(vocab_size=VOCAB, eos_id=EOS, block_size=1024, max_tokens=8 * 1024, max_len=64)
    data.update(test_split="valid", cache_dir=str(cache))
    return {
        "model": {"arch": "decoder", "n_layers": 1, "d_model": 64, "d_ff": 128, "n_heads": 2, "max_positions": 1024},
        "data": data,
        "train": {"max_steps": 50, "warmup_steps": 10, "val_every_steps": 50, "label_smoothing": 0.0},
        "trainer": {"accelerator": "cpu"},
        "eval": {"test": False},
        "logging": {"wandb": "disabled", "progress_bar": False},
    }


MEASURE = (  # a parent per trial: its children's peak is that one trial's (KiB on Linux)
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def peak_rss_mb(exp: Path, out: Path) -> float:
    """The peak resident memory of ``ablate train exp`` in a fresh process."""
    cmd = [sys.executable, "-m", "ablate", "train", str(exp), "--output", str(out)]
    done = subprocess.run([sys.executable, "-c", MEASURE, *cmd], check=True, capture_output=True, text=True)
    return int(done.stdout.split()[-1]) / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", type=float, default=[1e6, 5e7])
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    from ablate.config import load_config
    from ablate.data.prepare import prepare_data

    reference = None
    for size in sorted(int(s) for s in args.sizes):
        folder, t0 = args.out / f"tokens-{size}", time.perf_counter()
        make_corpus(folder, size)
        exp = args.out / f"exp-{size}.yaml"
        exp.write_text(yaml.safe_dump(experiment(folder, args.out / "cache")))
        prepare_data(load_config(str(exp)).data, progress=False)  # the id scan, once
        made = time.perf_counter() - t0
        peak = peak_rss_mb(exp, args.out / f"run-{size}")
        reference = reference or peak
        print(
            f"{size:>14,} training tokens: peak RSS {peak:7.0f} MB, {peak - reference:+6.0f} MB "
            f"({peak / reference:.3f}x the {int(min(args.sizes)):,}-token trial); corpus made, checked: {made:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
