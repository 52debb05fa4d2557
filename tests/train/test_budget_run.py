"""A run with its budget in epochs trains the steps those epochs come to, and records them."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from ablate.cli import main
from ablate.config import load_config
from ablate.data.prepare import prepare_data

from .conftest import MINI, TINY_RUN


def test_train_epochs_sets_the_steps_from_the_prepared_data(tmp_path, capsys):
    run = [*TINY_RUN, "train.epochs=0.1", "eval.bleu_max_sentences=5", "eval.test=false"]
    cfg = load_config(MINI, run)
    stats = prepare_data(cfg.data, progress=False).epoch_stats(int(cfg.data.max_tokens))
    expected = max(1, round(0.1 * stats.batches))
    assert expected != cfg.train.max_steps  # the experiment file's steps would give another length
    assert main(["train", str(MINI), *run, "--output", str(tmp_path / "run")]) == 0
    assert f"[train] budget train.epochs -> {expected:,} steps, 0.1 epochs" in capsys.readouterr().err
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["step"] == expected and metrics["budget"] == "train.epochs"
    assert metrics["epoch"] == 0  # a tenth of a pass completes none (Lightning's current_epoch said 1)
    assert metrics["budget_epochs"] == pytest.approx(expected / stats.batches)
    assert metrics["budget_target_tokens"] == pytest.approx(expected * stats.target_tokens / stats.batches)
    assert OmegaConf.load(tmp_path / "run" / "config.yaml").train.max_steps == cfg.train.max_steps  # as declared


def test_epoch_counts_whole_passes_trained_on(tmp_path):
    """One pass is 1; one step short of it is 0, although Lightning's prefetch has drawn the pass's last
    batch from the sampler by then (the count is of batches trained on)."""
    run = [*TINY_RUN, "train.val_every_steps=1000", "eval.bleu_max_sentences=2", "eval.test=false"]
    batches = prepare_data(load_config(MINI, run).data, progress=False).epoch_stats(600).batches
    for steps, passes in ((batches, 1), (batches - 1, 0)):
        out = tmp_path / f"run{steps}"
        assert main(["train", str(MINI), *run, f"train.max_steps={steps}", "--output", str(out)]) == 0
        assert json.loads((out / "metrics.json").read_text())["epoch"] == passes, steps
