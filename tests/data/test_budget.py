"""A training budget in epochs or target tokens: its arithmetic, its checks at load, and the dry run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ablate.config import load_config
from ablate.data.batching import TokenBucketBatchSampler
from ablate.data.budget import EpochStats, epoch_stats, resolve
from ablate.errors import ConfigError

MINI = Path(__file__).resolve().parents[2] / "experiments" / "mini.yaml"
STATS = EpochStats(pairs=1000, target_tokens=30_000, batches=40)


def test_epochs_and_tokens_become_steps_and_steps_become_epochs():
    assert resolve({"max_steps": 100, "epochs": 2.5, "target_tokens": None}, STATS).steps == 100  # 2.5 x 40
    by_tokens = resolve({"max_steps": 7, "epochs": None, "target_tokens": 90_000}, STATS)
    assert (by_tokens.rule, by_tokens.steps, by_tokens.epochs) == ("train.target_tokens", 120, 3.0)
    by_steps = resolve({"max_steps": 60, "epochs": None, "target_tokens": None}, STATS)
    assert (by_steps.rule, by_steps.epochs, by_steps.target_tokens) == ("train.max_steps", 1.5, 45_000)
    # two devices read half the batches each; two batches per step halve it again
    assert resolve({"max_steps": 1, "epochs": 2.0, "target_tokens": None}, STATS, devices=2, accumulate=2).steps == 20
    unknown = resolve({"max_steps": 60, "epochs": 3.0, "target_tokens": None}, None)
    assert (unknown.steps, unknown.epochs, unknown.target_tokens) == (None, 3.0, None)
    assert resolve({"max_steps": 60, "epochs": None, "target_tokens": None}, None).steps == 60


def test_epoch_stats_batch_as_the_training_sampler_does():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, 40, 500), rng.integers(3, 40, 500)
    stats = epoch_stats(src, tgt, 256)
    sampler = TokenBucketBatchSampler(src, tgt, 256, seed=5)
    assert stats.batches == len(sampler.epoch_batches(3)) == sampler.num_batches()
    assert (stats.pairs, stats.target_tokens) == (500, int(tgt.sum()) + 500)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.epochs=0"], "train.epochs: must be a positive number"),
        (["train.epochs=nan"], "train.epochs: must be a positive number"),
        (["train.target_tokens=.inf"], "train.target_tokens: must be a finite number"),
        (["train.epochs=2", "train.target_tokens=1e6"], "set one budget"),
        (["train.epochs=2", "train.max_steps=50"], "train.max_steps: 50 would be ignored: train.epochs=2.0 decides"),
    ],
)
def test_bad_budgets_are_refused_at_load(overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config(None, overrides)


def test_an_earlier_layers_max_steps_gives_way_to_a_later_budget():
    cfg = load_config(MINI, ["train.epochs=2"])  # the experiment file sets train.max_steps
    assert cfg.train.epochs == 2.0 and cfg.train.max_steps == 600


def test_a_language_models_epoch_is_its_whole_batches_of_blocks():
    from ablate.data.budget import lm_epoch_stats

    # 10 sentences of 9 tokens + EOS: a stream of 100, 99 predicted tokens, 6 blocks of 16; 2 a batch
    assert lm_epoch_stats([100], 16, 32) == EpochStats(pairs=6, target_tokens=6 * 16, batches=3)
    assert lm_epoch_stats([100], 16, 80) == EpochStats(pairs=6, target_tokens=5 * 16, batches=1)  # 1 left out
    assert lm_epoch_stats([100], 16, 160) == EpochStats(pairs=6, target_tokens=6 * 16, batches=1)  # one short
    # token shards: each file its own stream, no block across two (6 + 3 blocks)
    assert lm_epoch_stats([100, 50], 16, 32) == EpochStats(pairs=9, target_tokens=8 * 16, batches=4)
