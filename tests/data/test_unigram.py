"""The unigram floor: add-k unigram dev perplexity of the training targets (EOS counted), and ``learned``."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ablate.data.shards import Shard, ShardWriter
from ablate.data.special import EOS_ID
from ablate.data.unigram import learned, unigram_floor, unigram_ppl, unigram_ppl_from_arrays


def test_hand_computed_example() -> None:
    # V = 5, EOS = 3; training targets [4] and [4, 4] -> counts: 4 x3, EOS x2, others 0; N = 5.
    # Add-one: p(4) = 4/10, p(EOS) = 3/10, p(0) = 1/10. Dev [4, 0] + EOS costs -log(.4 * .1 * .3).
    ppl = unigram_ppl([[4], [4, 4]], [[4, 0]], vocab_size=5, eos_id=3)
    assert ppl == pytest.approx((0.4 * 0.1 * 0.3) ** (-1 / 3), rel=1e-12)
    # Add-k with k = 0.5: p = (c + .5) / (5 + 2.5).
    ppl_half = unigram_ppl([[4], [4, 4]], [[4, 0]], vocab_size=5, eos_id=3, k=0.5)
    assert ppl_half == pytest.approx((3.5 / 7.5 * 0.5 / 7.5 * 2.5 / 7.5) ** (-1 / 3), rel=1e-12)


@pytest.mark.parametrize("k", [1.0, 0.5, 3.0])
def test_uniform_data_gives_the_vocabulary_size(k: float) -> None:
    vocab = 8
    train = [list(range(vocab))] * 10  # every id equally often: smoothing keeps the model uniform
    rng = np.random.default_rng(0)
    dev = [list(rng.integers(0, vocab, 7)) for _ in range(5)]
    assert unigram_ppl(train, dev, vocab, eos_id=None, k=k) == pytest.approx(vocab, rel=1e-12)


def test_eos_is_one_token_per_sentence_on_both_sides() -> None:
    rng = np.random.default_rng(1)
    train = [list(rng.integers(4, 20, rng.integers(1, 9))) for _ in range(50)]
    dev = [list(rng.integers(4, 22, rng.integers(1, 9))) for _ in range(10)]
    with_eos = unigram_ppl(train, dev, 24, eos_id=EOS_ID)
    appended = unigram_ppl([t + [EOS_ID] for t in train], [d + [EOS_ID] for d in dev], 24, eos_id=None)
    assert with_eos == pytest.approx(appended, rel=1e-12)
    assert with_eos != pytest.approx(unigram_ppl(train, dev, 24, eos_id=None), rel=1e-3)


def test_matches_a_counter_based_computation() -> None:
    rng = np.random.default_rng(2)
    vocab = 300
    p = rng.dirichlet(np.full(vocab, 0.3))
    train = [list(rng.choice(vocab, rng.integers(1, 30), p=p)) for _ in range(400)]
    dev = [list(rng.choice(vocab, rng.integers(1, 30), p=p)) for _ in range(50)]
    counts = Counter(i for t in train for i in [*t, EOS_ID])
    n = sum(counts.values())
    dev_tokens = [i for d in dev for i in [*d, EOS_ID]]
    nll = -sum(math.log((counts[i] + 1) / (n + vocab)) for i in dev_tokens) / len(dev_tokens)
    assert unigram_ppl(train, dev, vocab, eos_id=EOS_ID) == pytest.approx(math.exp(nll), rel=1e-10)


def test_arrays_and_numpy_sequences_agree_with_lists() -> None:
    rng = np.random.default_rng(3)
    train = [rng.integers(0, 50, rng.integers(1, 12)).astype(np.uint16) for _ in range(100)]
    dev = [rng.integers(0, 50, rng.integers(1, 12)).astype(np.uint16) for _ in range(20)]
    lists = unigram_ppl([list(map(int, t)) for t in train], [list(map(int, d)) for d in dev], 50, EOS_ID)
    assert unigram_ppl(train, dev, 50, EOS_ID) == pytest.approx(lists, rel=1e-12)
    flat = unigram_ppl_from_arrays(np.concatenate(train), np.concatenate(dev), 50, len(train), len(dev), EOS_ID)
    assert flat == pytest.approx(lists, rel=1e-12)


def test_floor_of_prepared_shards(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    shards = {}
    targets = {}
    for split, n in (("train", 200), ("valid", 30)):
        tgt = [list(rng.integers(4, 40, rng.integers(1, 15))) for _ in range(n)]
        src = [list(rng.integers(4, 40, 3)) for _ in range(n)]
        writer = ShardWriter(tmp_path / split, vocab_size=40, max_len=None)
        writer.add(list(range(n)), src, tgt)
        writer.close()
        shards[split], targets[split] = Shard(tmp_path / split), tgt
    expected = unigram_ppl(targets["train"], targets["valid"], 40, eos_id=EOS_ID)
    assert unigram_floor(shards["train"], shards["valid"], 40) == pytest.approx(expected, rel=1e-12)


def test_a_million_tokens() -> None:
    # Scale check (no timing assertion): one flat array of 1M ids, against a direct computation.
    rng = np.random.default_rng(5)
    vocab = 37000
    train = rng.zipf(1.3, 1_000_000) % vocab
    dev = rng.zipf(1.3, 50_000) % vocab
    ppl = unigram_ppl_from_arrays(train, dev, vocab, 40_000, 2_000, EOS_ID)
    counts = np.bincount(train, minlength=vocab).astype(float)
    counts[EOS_ID] += 40_000
    logp = np.log((counts + 1) / (counts.sum() + vocab))
    nll = -(logp[dev].sum() + 2_000 * logp[EOS_ID]) / (50_000 + 2_000)
    assert ppl == pytest.approx(math.exp(nll), rel=1e-9)
    assert 1 < ppl < vocab


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        unigram_ppl([[5]], [[1]], vocab_size=5, eos_id=None)
    with pytest.raises(ValueError, match="dev_ids"):
        unigram_ppl([[1]], [[-1]], vocab_size=5, eos_id=None)
    with pytest.raises(ValueError, match="k must be > 0"):
        unigram_ppl([[1]], [[1]], vocab_size=5, eos_id=None, k=0)
    with pytest.raises(ValueError, match="no dev tokens"):
        unigram_ppl([[1]], [], vocab_size=5, eos_id=3)
    with pytest.raises(ValueError, match="eos_id"):
        unigram_ppl([[1]], [[1]], vocab_size=5, eos_id=7)


def test_learned() -> None:
    assert learned(50.0, floor=100.0)
    assert not learned(85.0, floor=100.0)
    assert not learned(80.0, floor=100.0)  # strictly below ratio x floor
    assert learned(85.0, floor=100.0, ratio=0.9)
    assert not learned(math.nan, floor=100.0) and not learned(math.inf, floor=100.0)
    with pytest.raises(ValueError, match="ratio"):
        learned(50.0, floor=100.0, ratio=1.5)
    with pytest.raises(ValueError, match="floor"):
        learned(50.0, floor=0.0)
