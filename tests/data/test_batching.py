"""The token-bucketed batch sampler: budget, coverage, DDP split, seed determinism, resuming, padding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ablate.config import load_config
from ablate.data.batching import TokenBucketBatchSampler, padding_stats
from ablate.data.prepare import prepare_data


@pytest.fixture(scope="module")
def lengths() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    src = rng.integers(1, 60, 5000)
    tgt = np.clip(src + rng.integers(-6, 7, 5000), 1, 70)
    return src, tgt


def _cost(src, tgt, batch) -> int:
    return len(batch) * max(int(src[batch].max()) + 1, int(tgt[batch].max()) + 1)


def test_every_batch_fits_max_tokens_with_padding(lengths) -> None:
    src, tgt = lengths
    for max_tokens in (200, 1000, 4096):
        sampler = TokenBucketBatchSampler(src, tgt, max_tokens, seed=3)
        batches = list(sampler)
        assert batches and all(_cost(src, tgt, b) <= max_tokens for b in batches)
        assert max(_cost(src, tgt, b) for b in batches) > 0.8 * max_tokens  # batches are actually filled


def test_every_sentence_once_per_epoch_and_order_changes(lengths) -> None:
    src, tgt = lengths
    sampler = TokenBucketBatchSampler(src, tgt, 1000, seed=3)
    epochs = []
    for _ in range(2):
        flat = [i for b in sampler for i in b]
        assert sorted(flat) == list(range(len(src)))
        epochs.append(flat)
    assert epochs[0] != epochs[1]  # a finished epoch moves on to a new shuffle
    assert len(sampler) == sampler.num_batches()


def test_same_seed_same_batches_other_seed_other_order(lengths) -> None:
    src, tgt = lengths
    a = [list(b) for b in TokenBucketBatchSampler(src, tgt, 1000, seed=5)]
    b = [list(b) for b in TokenBucketBatchSampler(src, tgt, 1000, seed=5)]
    c = [list(b) for b in TokenBucketBatchSampler(src, tgt, 1000, seed=6)]
    assert a == b and a != c


def test_ddp_ranks_are_disjoint_with_equal_counts(lengths) -> None:
    src, tgt = lengths
    for world in (2, 3):
        per_rank = [
            list(TokenBucketBatchSampler(src, tgt, 1000, seed=1, rank=r, world_size=world)) for r in range(world)
        ]
        counts = {len(batches) for batches in per_rank}
        assert len(counts) == 1
        seen = [i for batches in per_rank for b in batches for i in b]
        assert len(seen) == len(set(seen))  # no sentence on two ranks
        total = TokenBucketBatchSampler(src, tgt, 1000, seed=1).num_batches()
        assert counts.pop() == total // world == len(TokenBucketBatchSampler(src, tgt, 1000, rank=0, world_size=world))


def test_resume_mid_epoch_continues_where_it_stopped(lengths) -> None:
    src, tgt = lengths
    reference = TokenBucketBatchSampler(src, tgt, 1000, seed=2)
    full = [list(reference) for _ in range(2)]
    first = TokenBucketBatchSampler(src, tgt, 1000, seed=2)
    it = iter(first)
    consumed = [next(it) for _ in range(7)]
    state = first.state_dict()
    assert state == {"epoch": 0, "position": 7}
    resumed = TokenBucketBatchSampler(src, tgt, 1000, seed=2)
    resumed.load_state_dict(state)
    resumed.set_epoch(0)  # Lightning sets the same epoch again on restart: the position survives
    rest = list(resumed)
    assert consumed + rest == full[0]
    assert list(resumed) == full[1]  # and the next epoch is the one an uninterrupted run would see
    resumed.set_epoch(5)
    assert resumed.state_dict() == {"epoch": 5, "position": 0}


def test_eval_order_is_deterministic_sorted_and_complete(lengths) -> None:
    src, tgt = lengths
    sampler = TokenBucketBatchSampler(src, tgt, 1000, shuffle=False)
    a, b = list(sampler), list(sampler)
    assert a == b
    flat = [i for batch in a for i in batch]
    assert sorted(flat) == list(range(len(src)))
    assert np.all(np.diff(src[flat]) >= 0)  # by source length
    assert all(_cost(src, tgt, batch) <= 1000 for batch in a)


def test_padding_waste_is_low_on_builtin(cache: Path) -> None:
    cfg = load_config(overrides=["data.args.n_train=20000", "data.vocab_size=4000"]).data
    train = prepare_data(cfg, progress=False).split("train")
    sampler = TokenBucketBatchSampler(train.src_lengths, train.tgt_lengths, 4096, seed=1)
    waste = padding_stats(train.src_lengths, train.tgt_lengths, sampler.epoch_batches(0))
    print(f"builtin 20k padding at 4096: {waste}")
    assert waste["total"] <= 0.05 and waste["tgt"] <= 0.05


def test_padding_waste_is_low_on_multi30k(multi30k_root: Path, cache: Path) -> None:
    cfg = load_config(overrides=["data.corpus=multi30k", f"data.root={multi30k_root}", "data.vocab_size=8000"]).data
    train = prepare_data(cfg, progress=False).split("train")
    for max_tokens in (2048, 4096):
        sampler = TokenBucketBatchSampler(train.src_lengths, train.tgt_lengths, max_tokens, seed=1)
        waste = padding_stats(train.src_lengths, train.tgt_lengths, sampler.epoch_batches(0))
        print(f"multi30k padding at {max_tokens}: {waste}")
        assert waste["total"] <= 0.05 and waste["tgt"] <= 0.05


def test_eval_sampler_restarts_every_pass_even_when_not_exhausted() -> None:
    # Lightning stops after len(loader) batches without exhausting the generator; the next pass
    # must still yield every batch (a remembered position once made every second validation empty).

    lens = np.arange(1, 41)
    sampler = TokenBucketBatchSampler(lens, lens, max_tokens=64, shuffle=False)
    first = list(sampler)
    it = iter(sampler)
    for _ in range(len(sampler)):
        next(it)  # consumed like Lightning does, generator left suspended at its end
    assert list(sampler) == first and len(first) == len(sampler) > 1


def test_a_pass_stopped_at_its_last_batch_moves_to_the_next_epoch(lengths) -> None:
    """Lightning stops a pass after len(loader) batches without exhausting the sampler's generator; the
    next pass must be the next epoch's batches. It was empty, and Lightning counted an empty epoch after
    every real one (metrics.json: epoch 21 for 10.9 passes; train.max_epochs gave half its passes)."""
    import itertools

    src, tgt = lengths
    sampler = TokenBucketBatchSampler(src, tgt, max_tokens=400, seed=3)
    n = len(sampler)
    for epoch in range(3):
        got = list(itertools.islice(iter(sampler), n))  # as Lightning takes them
        assert got == [b.tolist() for b in sampler.epoch_batches(epoch)], epoch
    resumed = TokenBucketBatchSampler(src, tgt, max_tokens=400, seed=3)
    resumed.load_state_dict({"epoch": 2, "position": n})  # saved after an epoch's last batch
    assert next(iter(resumed)) == sampler.epoch_batches(3)[0].tolist()
