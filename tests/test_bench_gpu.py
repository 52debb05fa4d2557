"""benchmarks/bench_gpu.py measures GPUs only: without CUDA it refuses in one line, before measuring."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here: the benchmark would run")
def test_bench_gpu_refuses_on_a_cpu_in_one_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--out", str(tmp_path / "b.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "no CUDA device" in out.stderr
    assert not (tmp_path / "b.json").exists()


@pytest.mark.slow
def test_bench_gpu_runs_its_three_modes_on_a_cpu_when_allowed(tmp_path: Path) -> None:
    """The GPU script tried on CPU as far as it goes: every mode's code path, the JSON and the lines."""
    import json

    tiny = ["model.n_layers=1", "model.d_model=32", "model.d_ff=64", "model.n_heads=2"]
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--allow-cpu", "--models", "base.yaml"]
    cmd += ["gpt2-small.yaml"]  # the language model: whole 1,024-token blocks, no source
    cmd += ["--tokens", "600", "--steps", "2", "--warmup", "3", "--vocab", "300", "--out", str(tmp_path / "b.json")]
    out = subprocess.run([*cmd, "--experiment-overrides", *tiny], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads((tmp_path / "b.json").read_text())
    assert [(r["model"], r["mode"]) for r in results] == [
        (m, mode) for mode in ("eager", "graphs", "compiled") for m in ("base", "gpt2-small")
    ]
    assert all(r["tgt_tokens_per_s"] > 0 and r["tokens_per_side"] == 600 for r in results)
    assert out.stdout.count("tgt tok/s") == 6
