"""Fixtures for the training tests: quiet offline W&B and a private data cache, tiny run configs."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "experiments" / "mini.yaml"

# A run small enough for a test: a 1+1-layer d_model 32 model on a 1,500-pair builtin corpus.
TINY_RUN = [
    "model.n_layers=1", "model.d_model=32", "model.d_ff=64", "model.n_heads=2", "model.dropout=0.1",
    "data.args.n_train=1500", "data.args.n_valid=40", "data.args.n_test=30", "data.vocab_size=300",
    "data.max_tokens=600", "train.warmup_steps=10", "train.log_every_steps=1", "train.val_every_steps=4",
    "eval.beam_size=2", "eval.max_len_b=4", "eval.batch_size=16", "logging.progress_bar=false",
]


@pytest.fixture(autouse=True)
def quiet_offline_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """W&B offline and silent, its files in tmp; prepared data cached once per session in tmp."""
    root = tmp_path_factory.getbasetemp()
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(root / "wandb"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(root / "wandb-cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(root / "wandb-config"))
    monkeypatch.setenv("ABLATE_CACHE", str(root / "ablate-cache"))
