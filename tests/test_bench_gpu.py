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
