"""The README's "add a variant" example: a user module registers RoPE, a sweep file imports it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def test_rope_example_sweep_validates_and_dry_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", "examples/rope-sweep.yaml", "--dry-run", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    trials = json.loads(proc.stdout)
    trials = trials["trials"] if isinstance(trials, dict) else trials
    rows = {t["row"]: t for t in trials}
    assert set(rows) == {"sinusoidal", "learned", "rope"}
    # RoPE has no parameters; the learned table adds max_positions x d_model per stack.
    assert rows["rope"]["params"] == rows["sinusoidal"]["params"] < rows["learned"]["params"]


def test_rope_encodes_relative_positions(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import rope

    enc = rope.Rotary(d_k=8, max_positions=64)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    # the score of a query at i and a key at j depends only on i - j
    s1 = (enc.rotate(q, offset=5) * enc.rotate(k, offset=2)).sum()
    s2 = (enc.rotate(q, offset=20) * enc.rotate(k, offset=17)).sum()
    s3 = (enc.rotate(q, offset=20) * enc.rotate(k, offset=2)).sum()
    assert torch.allclose(s1, s2, atol=1e-5)
    assert not torch.allclose(s1, s3, atol=1e-3)
