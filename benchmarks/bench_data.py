"""Data preparation benchmark: prints numbers, asserts nothing.

    python benchmarks/bench_data.py            # everything (~3 minutes on 2 cores)
    python benchmarks/bench_data.py --quick    # skip the 1M-pair memory run

1. Multi30k (from ../shared/data/multi30k, skipped where absent) prepared from scratch into an empty
   cache (SentencePiece BPE 8000 + shards), then again (a cache hit). Targets: < 30 s and < 1 s.
2. The builtin corpus (defaults) from scratch.
3. Padding waste of the token-bucketed batches at several max_tokens (target <= 5%).
4. Peak resident memory of preparing a 100k-pair and a 1M-pair synthetic corpus, each in a fresh
   process with the same tokenizer sample: streaming preparation should not grow with the corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ablate.config import load_config
from ablate.data.batching import TokenBucketBatchSampler, padding_stats
from ablate.data.prepare import prepare_data

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def timed_prepare(overrides: list[str], cache: str) -> tuple[float, float, object]:
    cfg = load_config(overrides=[*overrides, f"data.cache_dir={cache}"]).data
    t0 = time.perf_counter()
    prepared = prepare_data(cfg, progress=False)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = prepare_data(cfg, progress=False)
    warm = time.perf_counter() - t0
    assert again.cache_hit
    return cold, warm, prepared


def padding_table(name: str, prepared) -> None:
    train = prepared.split("train")
    for max_tokens in (2048, 4096, 8192, 25000):
        sampler = TokenBucketBatchSampler(train.src_lengths, train.tgt_lengths, max_tokens, seed=1)
        w = padding_stats(train.src_lengths, train.tgt_lengths, sampler.epoch_batches(0))
        print(
            f"  padding {name:<9} max_tokens={max_tokens:<6} total {w['total']:6.2%}  src {w['src']:6.2%}  "
            f"tgt {w['tgt']:6.2%}  batches/epoch {sampler.num_batches()}"
        )


def child_peak_rss(n_train: int, cache: str) -> dict:
    """Prepare a builtin corpus of ``n_train`` pairs in a fresh process; its peak RSS and time."""
    code = (
        "import json, resource, time\n"
        "from ablate.config import load_config\n"
        "from ablate.data.prepare import prepare_data\n"
        f"cfg = load_config(overrides=['data.args.n_train={n_train}', 'data.vocab_size=8000',\n"
        f"    'data.tokenizer_sample=200000', 'data.cache_dir={cache}']).data\n"
        "t = time.perf_counter(); p = prepare_data(cfg, progress=False)\n"
        "print(json.dumps({'s': time.perf_counter() - t, 'rss_mb': resource.getrusage(resource.RUSAGE_SELF)"
        ".ru_maxrss / 1024, 'pairs': p.split('train').n, 'tokens': sum(p.split('train').tokens)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_rss() -> float:
    code = "import resource; import ablate.data.prepare; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)"
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 1M-pair memory run")
    args = ap.parse_args()
    print(f"bench_data: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as cache:
        if (MULTI30K / "train.en").is_file():
            cold, warm, m30k = timed_prepare(
                ["data.corpus=multi30k", f"data.root={MULTI30K}", "data.vocab_size=8000"], cache
            )
            print(f"multi30k  from scratch {cold:6.2f} s (target < 30 s)   cached {warm * 1000:6.1f} ms (target < 1 s)")
            padding_table("multi30k", m30k)
        else:
            print(f"multi30k  skipped: {MULTI30K} not found")
        cold, warm, bi = timed_prepare(["data.vocab_size=8000"], cache)
        n = bi.split("train").n
        print(f"builtin   from scratch {cold:6.2f} s ({n:,} train pairs)   cached {warm * 1000:6.1f} ms")
        padding_table("builtin", bi)
    if args.quick:
        return
    print(f"memory    python + ablate.data imported: {baseline_rss():.0f} MB peak RSS")
    for n_train in (100_000, 1_000_000):
        with tempfile.TemporaryDirectory() as cache:
            r = child_peak_rss(n_train, cache)
        print(
            f"memory    builtin {r['pairs']:>9,} pairs ({r['tokens']:,} tokens): peak RSS {r['rss_mb']:7.0f} MB, "
            f"{r['s']:6.1f} s"
        )


if __name__ == "__main__":
    main()
