"""Bucketed training batches (``data.bucket_ratio``, ``data.batch_multiple``): few shapes, the budget kept,
the same loss as unpadded batches, and the default (off) unchanged."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from ablate.config import load_config
from ablate.config.schema import hash_view
from ablate.data.batching import TokenBucketBatchSampler, batch_shapes, bucket, collate, ladder, padding_stats
from ablate.train.losses import linear_label_smoothed_loss
from ablate.train.run import system_kwargs
from ablate.train.system import TransformerSystem

MAX_LEN = 80


@pytest.fixture(scope="module")
def lengths() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    src = rng.integers(1, MAX_LEN, 6000)
    tgt = np.clip(src + rng.integers(-8, 9, 6000), 1, MAX_LEN)
    return src, tgt


def _epoch(lengths, max_tokens, bucket_ratio, multiple):
    src, tgt = lengths
    sampler = TokenBucketBatchSampler(
        src, tgt, max_tokens, seed=1, bucket_ratio=bucket_ratio, batch_multiple=multiple, max_len=MAX_LEN
    )
    batches = sampler.epoch_batches(0)
    return batches, batch_shapes(src, tgt, batches, bucket_ratio, MAX_LEN)


def test_lengths_go_up_a_ladder_about_ten_percent_apart_and_never_past_the_longest_pair():
    rungs = ladder(1.1, MAX_LEN + 1)
    assert rungs[:10].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] and rungs[-1] == MAX_LEN + 1
    steps = rungs[9:-1][1:] / rungs[9:-1][:-1]
    assert (steps <= 1.1 + 1 / 10).all() and (steps > 1.0).all() and len(rungs) < 40
    assert bucket(np.array([1, 8, 9, 45, 81]), 1.1, MAX_LEN).tolist() == [1, 8, 9, 46, 81]
    assert bucket(np.array([3, 5]), 0.0, MAX_LEN).tolist() == [3, 5]  # off


@pytest.mark.parametrize("max_tokens", [1024, 4096])
def test_bucketed_batches_take_few_shapes_within_the_budget(lengths, max_tokens):
    batches, shapes = _epoch(lengths, max_tokens, 1.1, 8)
    _, plain = _epoch(lengths, max_tokens, 0.0, 1)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths[0])))  # every pair once
    rungs = set(ladder(1.1, MAX_LEN + 1).tolist())
    assert all(s in rungs and t in rungs for _, s, t in shapes)
    assert all(n * max(s, t) <= max_tokens for n, s, t in shapes if n > 1)
    pairs = {(s, t) for _, s, t in shapes}  # the rung pairs met; a pair's full batches all hold as many pairs
    assert len(set(shapes)) <= len(pairs) + 2
    assert sum(1 for n, _, _ in shapes if n % 8 and n > 8) <= len(pairs) + 1  # at most a tail per length pair
    if max_tokens == 1024:  # 261 batches an epoch: today nearly every one has a shape of its own (241)
        assert len(set(shapes)) < len(set(plain)) / 2


def test_bucketing_costs_little_padding(lengths):
    src, tgt = lengths
    bucketed, _ = _epoch(lengths, 4096, 1.1, 8)
    plain, _ = _epoch(lengths, 4096, 0.0, 1)
    more = padding_stats(src, tgt, bucketed, 1.1, MAX_LEN)["total"] - padding_stats(src, tgt, plain)["total"]
    assert 0 < more < 0.05  # five points at most (real text: benchmarks/bench_shapes.py, in the README)


def test_a_padded_batch_gives_the_unpadded_loss():
    cfg = load_config(overrides=["model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.n_layers=1"])
    torch.manual_seed(0)
    system = TransformerSystem(**system_kwargs(cfg, 40)).eval()
    rng = np.random.default_rng(3)
    rows = [(rng.integers(4, 40, int(a)), rng.integers(4, 40, int(b))) for a, b in ((5, 7), (9, 4), (12, 11))]
    shard = SimpleNamespace(
        src_lengths=np.array([len(s) for s, _ in rows]),
        tgt_lengths=np.array([len(t) for _, t in rows]),
        src=lambda i: rows[i][0],
        tgt=lambda i: rows[i][1],
    )
    losses = []
    for ratio in (0.0, 1.5):
        batch = collate(shard, [0, 1, 2], bucket_ratio=ratio, max_len=MAX_LEN)
        assert batch["src"].shape[1] == (13 if ratio == 0.0 else 18)  # 13 -> the rung 18 (8, 12, 18, 27, ...)
        hidden, target = system._real_positions(batch)
        losses.append(linear_label_smoothed_loss(hidden, system.model.output_weight, target, 0.1).item())
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)


def test_off_by_default_and_the_ids_of_configs_without_it_hold():
    cfg = load_config()
    assert (cfg.data.bucket_ratio, cfg.data.batch_multiple) == (0.0, 1)
    plain = {"data": {"max_tokens": 4096}}
    assert hash_view({"data": {"max_tokens": 4096, "bucket_ratio": 0.0, "batch_multiple": 1}}) == hash_view(plain)
    assert hash_view({"data": {"max_tokens": 4096, "bucket_ratio": 1.1}}) != hash_view(plain)


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("data.bucket_ratio=1.0", "data.bucket_ratio: must be 0 (off) or above 1 (1.1: rungs ~10% apart), got 1.0"),
        ("data.bucket_ratio=-1", "data.bucket_ratio: must be >= 0, got -1.0"),
        ("data.batch_multiple=0", "data.batch_multiple: must be a positive number, got 0"),
    ],
)
def test_a_bad_bucketing_is_one_line(override, said):
    from ablate.config import ConfigError

    with pytest.raises(ConfigError) as err:
        load_config(overrides=[override])
    assert str(err.value) == f"command line: {said}"


def test_the_data_module_buckets_training_batches_only(tmp_path, monkeypatch):
    from ablate.data.datamodule import CorpusDataModule
    from ablate.data.prepare import prepare_data

    monkeypatch.setenv("ABLATE_CACHE", str(tmp_path))
    cfg = load_config(overrides=["data.corpus=builtin", "data.args.n_train=600", "data.vocab_size=200"]).data
    prepared = prepare_data(cfg, progress=False)
    dm = CorpusDataModule(prepared.dir, 512, seed=1, bucket_ratio=1.1, batch_multiple=8)
    dm.setup("fit")
    rungs = set(ladder(1.1, int(prepared.meta["max_len"]) + 1).tolist())
    widths = [(b["src"].shape[1], b["tgt_in"].shape[1]) for b in dm.train_dataloader()]
    assert widths and all(s in rungs and t in rungs for s, t in widths)
    valid = next(iter(dm.val_dataloader()))
    assert valid["src"].shape[1] == int(valid["src"].ne(0).sum(1).max())  # evaluation: exact widths


def test_off_the_batches_are_the_ones_trials_trained_on_before_bucketing():
    """The unbucketed sampler's epochs, against the order as it was written before bucketing existed
    (sorted by max(S, T), then T - S in a snake turning at each length's parity): a change here would
    retrain every finished trial on other batches under the same trial id. Lengths with gaps, where a
    snake turning at each distinct length instead would differ."""
    gen = np.random.default_rng(1)
    src = gen.choice([1, 2, 3, 5, 8, 13, 21, 34], 3000)
    tgt = np.clip(src + gen.integers(-2, 3, 3000), 1, 40)
    sampler = TokenBucketBatchSampler(src, tgt, 1000, seed=4)
    s, t = src + 1, tgt + 1
    rng = np.random.default_rng([4, 2])
    perm = rng.permutation(len(s))
    m = np.maximum(s[perm], t[perm])
    order = perm[np.lexsort((np.where(m % 2 == 0, t[perm] - s[perm], s[perm] - t[perm]), m))]
    cuts = sampler._cuts
    batches = [order[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    expected = [batches[j].tolist() for j in rng.permutation(len(batches))]
    assert [b.tolist() for b in sampler.epoch_batches(2)] == expected
