"""`ablate tokenize` on 1 thread against N threads: prints medians, tokens per second and the ratio,
asserts nothing.

    python benchmarks/bench_tokenize.py                    # the shared corpora's text, x8, 1 vs 2 threads
    python benchmarks/bench_tokenize.py --repeat 16 --jobs 1 2 --runs 5

The text is every English and German line of the shared data folder (Multi30k and newstest, next to
the repository; the benchmark says so and stops where it is absent), repeated ``--repeat`` times into
one ``.txt`` (a line a document). A byte-level BPE of 8,192 pieces is trained on it once; each timed
run then encodes the whole file with that ``tokenizer.json`` into a fresh folder, as a user runs it
(a fresh ``python -m ablate`` process, imports included), the thread counts alternating run by run.
Every run must write the same shards, byte for byte: the thread count changes how fast, never what.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def build_text(folder: Path, repeat: int) -> tuple[Path, int]:
    lines = [
        line
        for path in sorted(SHARED.rglob("*"))
        if path.is_file() and path.suffix in (".en", ".de")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    text = folder / "text.txt"
    text.write_text("\n".join(lines * repeat) + "\n", encoding="utf-8")
    return text, len(lines) * repeat


def run(args: list[str]) -> float:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ablate", "tokenize", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ablate tokenize {' '.join(args)} failed:\n{done.stdout[-1500:]}{done.stderr[-1500:]}")
    return time.perf_counter() - t


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.bin")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:16]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=8, help="copies of the shared text (8: about 46 MB)")
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="thread counts; the first is the reference")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"no shared data folder beside the repository ({SHARED.name}/): nothing to tokenize")
    tmp = Path(tempfile.mkdtemp(prefix="bench-tokenize-"))
    try:
        text, docs = build_text(tmp, args.repeat)
        common = ["--valid-docs", "1000", "--shard-tokens", "10000000"]
        run([str(text), "--train-bpe", "8192", "--out", str(tmp / "bpe"), *common])
        tokenizer = tmp / "bpe" / "tokenizer.json"
        times: dict[int, list[float]] = {j: [] for j in args.jobs}
        digests: set[str] = set()
        for i in range(args.runs):
            for jobs in args.jobs:
                out = tmp / f"out-{jobs}-{i}"
                times[jobs].append(
                    run([str(text), "--tokenizer", str(tokenizer), "--out", str(out), "--jobs", str(jobs), *common])
                )
                digests.add(digest(out))
                shutil.rmtree(out)
        n_tokens = int(json.loads((tmp / "bpe" / "manifest.json").read_text(encoding="utf-8"))["total_tokens"])
        mb = text.stat().st_size / 1e6
        print(
            f"{docs:,} documents, {mb:.1f} MB, {n_tokens:,} tokens; {args.runs} runs each, fresh processes, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end"
        )
        ref = statistics.median(times[args.jobs[0]])
        for jobs in args.jobs:
            med = statistics.median(times[jobs])
            print(
                f"  --jobs {jobs}: {med:6.2f} s (min {min(times[jobs]):.2f}, max {max(times[jobs]):.2f}), "
                f"{n_tokens / med / 1e6:.2f} M tokens/s, {ref / med:.2f}x against --jobs {args.jobs[0]}"
            )
        print(
            f"  shards identical across every run: {'yes' if len(digests) == 1 else f'NO ({len(digests)} different)'}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
