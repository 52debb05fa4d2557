"""The README's "add a variant" example: a user module registers a positional encoding, a sweep file
imports it, and the variant contract passes on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def test_variant_example_sweep_validates_and_dry_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", "examples/variant-sweep.yaml", "--dry-run", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    trials = json.loads(proc.stdout)
    trials = trials["trials"] if isinstance(trials, dict) else trials
    rows = {t["row"]: t for t in trials}
    assert set(rows) == {"sinusoidal", "learned", "rope", "scaled sinusoids"}
    # RoPE has no parameters; the plugin adds one scalar per stack; the learned table max_positions x d_model.
    assert rows["rope"]["params"] == rows["sinusoidal"]["params"] == rows["scaled sinusoids"]["params"] - 2
    assert rows["sinusoidal"]["params"] < rows["learned"]["params"]


def test_the_plugin_keeps_the_contract(monkeypatch, isolated_registries) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import scaled_sinusoidal

    from ablate.model.contract import run_contract

    results = run_contract([("positional", "scaled_sinusoidal")])
    assert [r.line() for r in results if not r.ok] == []
    enc = scaled_sinusoidal.ScaledSinusoidal(d_model=8, max_positions=16)
    with torch.no_grad():
        enc.scale.fill_(0.0)
    assert torch.equal(enc(torch.ones(1, 3, 8)), torch.ones(1, 3, 8))  # scale 0: positions switched off
