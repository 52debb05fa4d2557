"""Shared pytest fixtures (generic only; each test directory keeps its own specifics)."""

from __future__ import annotations

from typing import Any

import pytest

TINY_VOCAB = 32  # vocabulary size that goes with tiny_model_cfg (4 special ids + 28 "words")


@pytest.fixture
def tiny_model_cfg() -> dict[str, Any]:
    """A ``model`` section small enough for any test: d_model 16, 2 heads, 1+1 layers (vocab: TINY_VOCAB).

    A fresh plain dict per test: change it freely, pass it to ablate.build_model(cfg, vocab_size=32).
    """
    return {
        "n_layers": 1,
        "d_model": 16,
        "d_ff": 32,
        "n_heads": 2,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "max_positions": 64,
    }


# A quiet one-process CPU Trainer: no logger, checkpoints, progress bar, model summary or sanity check.
CPU_TRAINER = {
    "accelerator": "cpu",
    "devices": 1,
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "num_sanity_val_steps": 0,
}


@pytest.fixture
def cpu_trainer() -> Any:
    """cpu_trainer(**overrides) -> a Lightning Trainer with :data:`CPU_TRAINER` and the overrides."""
    import lightning.pytorch as pl

    return lambda **kw: pl.Trainer(**{**CPU_TRAINER, **kw})
