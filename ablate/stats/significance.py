"""How sure a Table 3 row is over dev sentences: paired bootstraps against base, a degeneracy measure.

These compare two trained models on one dev set; the test over seeds, which speaks about the
architectures, is :mod:`ablate.stats.seeds`. Pure functions over numbers and strings (numpy; sacreBLEU
for BLEU; no torch), called by the report (docs/trust.md):

- :func:`paired_bleu`: sacreBLEU's own paired bootstrap test (``sacrebleu.significance.PairedTest``,
  ``test_type="bs"``, the Moses ``bootstrap-hypothesis-difference-significance.pl`` test of Koehn,
  2004) for the p-value, plus a 95% interval of the BLEU *difference* from the very same resamples.
- :func:`paired_ppl`: a paired bootstrap over dev sentences of the corpus perplexity
  ``exp(sum NLL / sum tokens)`` from per-sentence summed NLL (``ablate.eval.nll``; EOS counted).
Beside them, :mod:`ablate.stats.degeneracy` (``degenerate_share`` / ``is_degenerate``: hypotheses
collapsed into repetition or nothing, one of the two "learned nothing" signals; the other is the
unigram floor, :mod:`ablate.data.unigram`) and :mod:`ablate.stats.seeds` (the tests over seeds).

All intervals are 95%. Bootstrap intervals use sacreBLEU's order-statistic rule (``estimate_ci``):
with B sorted resample values ``v``, the interval is ``[v[B // 40], v[B - B // 40 - 1]]``, so the
BLEU and PPL columns are read the same way.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ablate.stack_private import bleu_from_stats, recording_bleu

DEFAULT_RESAMPLES = 1000  # sacreBLEU's default for its paired bootstrap
DEFAULT_SEED = 12345  # sacreBLEU's default SACREBLEU_SEED


@dataclass(frozen=True)
class Comparison:
    """A system against base on the same sentences, by a paired bootstrap over those sentences."""

    base: float  # base's corpus score on all sentences (BLEU or PPL)
    system: float  # the system's corpus score on all sentences
    delta: float  # system - base (BLEU: > 0 is better; PPL: < 0 is better)
    low: float  # lower bound of the 95% bootstrap interval of delta
    high: float  # upper bound of the 95% bootstrap interval of delta
    p_value: float  # two-sided p-value of "no difference" (definition: see the function that made it)
    n: int  # number of sentences
    n_resamples: int  # number of bootstrap resamples
    method: str  # which test: "sacrebleu-paired-bs" or "paired-bootstrap-shifted-null"
    signature: str = ""  # sacreBLEU signature (BLEU only), e.g. nrefs:1|bs:1000|seed:12345|...|tok:13a|...

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha


# --------------------------------------------------------------------------------------------------
# Bootstrap helpers
# --------------------------------------------------------------------------------------------------


def _check_resampling(n_resamples: int, seed: int) -> None:
    if int(n_resamples) < 40:
        raise ValueError(f"n_resamples must be at least 40 for a 95% interval, got {n_resamples}")
    if int(seed) < 1:
        # sacreBLEU treats seed 0 as "no seed" (its PairedTest passes `seed if seed else None`).
        raise ValueError(f"seed must be a positive integer (sacreBLEU reads 0 as 'unseeded'), got {seed}")


def _interval(samples: np.ndarray) -> tuple[float, float]:
    """95% interval by sacreBLEU's rule: the (B // 40)-th smallest and largest of B values."""
    v = np.sort(samples)
    k = len(v) // 40
    return float(v[k]), float(v[len(v) - k - 1])


def _resample_counts(rng: np.random.Generator, n: int, n_resamples: int) -> np.ndarray:
    """B x n matrix: how often each sentence is drawn in each resample, drawn as sacreBLEU draws them
    (``rng.choice(n, size=(B, n), replace=True)``), so the same seed gives sacreBLEU's resamples."""
    idx = rng.choice(n, size=(n_resamples, n), replace=True)
    flat = (idx + n * np.arange(n_resamples)[:, None]).ravel()
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)


# --------------------------------------------------------------------------------------------------
# BLEU: sacreBLEU's paired bootstrap
# --------------------------------------------------------------------------------------------------


@contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    # PairedTest takes its seed only from $SACREBLEU_SEED (its documented knob), read when it is built.
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(int(seed))
    try:
        yield
    finally:
        if old is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = old


def _bleu_delta_interval(
    metric: Any, base_stats: np.ndarray, sys_stats: np.ndarray, sys_mean: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    """The paired resamples sacreBLEU drew, again, for a 95% interval of the BLEU difference.

    sacreBLEU reports, per system, the mean and a 95% half-width of its resampled BLEU, not an
    interval of the difference, and two unpaired intervals would ignore the pairing. So the interval
    of ``delta`` is taken from the same B paired resamples that sacreBLEU draws (same seed, same
    ``rng.choice`` call, scored by the metric itself from summed sentence statistics:
    :func:`ablate.stack_private.bleu_from_stats`), with sacreBLEU's order-statistic 95% rule. As a
    guard against a future sacreBLEU drawing differently, the mean of our resampled system BLEU must
    equal the mean sacreBLEU reports, or a RuntimeError says so.
    """
    counts = _resample_counts(np.random.default_rng(int(seed)), len(base_stats), n_resamples)
    # Sufficient statistics are integer counts: the float64 sums are exact, as sacreBLEU's float32 ones are.
    summed = counts @ np.concatenate([base_stats, sys_stats], axis=1)
    k = base_stats.shape[1]
    bl = np.array([bleu_from_stats(metric, s).score for s in summed[:, :k]])
    sy = np.array([bleu_from_stats(metric, s).score for s in summed[:, k:]])
    # sacreBLEU sums the statistics in float32 and scores in float64: agreement to ~1e-9 relative is not
    # guaranteed (3.58619966382 vs 3.58619966021 seen); a different resampling differs by far more.
    if not math.isclose(float(sy.mean()), sys_mean, rel_tol=1e-6, abs_tol=1e-6):
        raise RuntimeError(
            f"sacreBLEU's bootstrap resamples differ from ours (mean system BLEU {sys_mean} vs "
            f"{sy.mean()}): its sampling changed; update ablate.stats.significance"
        )
    return _interval(sy - bl)


def paired_bleu(
    refs: Sequence[str],
    base_hyps: Sequence[str],
    sys_hyps: Sequence[str],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    tokenize: str = "13a",
    tokenized: bool = False,
) -> Comparison:
    """sacreBLEU corpus BLEU of ``sys_hyps`` minus that of ``base_hyps``, with sacreBLEU's paired bootstrap.

    The p-value is sacreBLEU's own (``PairedTest(..., test_type="bs")``, sacreBLEU >= 2.0): over B
    resamples of the sentences (the same resamples for both systems), with d_b the BLEU difference in
    resample b and d the observed difference, ``p = (1 + #{b : |d_b| - mean_b |d_b| > |d|}) / (B + 1)``
    (Koehn, 2004; the "shifted" null of Clark et al., 2011 / multeval, on absolute differences).
    One deviation: when the two systems have identical per-sentence BLEU statistics (e.g. identical
    output), every d_b is 0 and sacreBLEU's strict ``>`` returns ``1 / (B + 1)`` - "significant" for
    a system compared with itself; we report p = 1 there, as no resample can show a difference.

    The interval of ``delta`` comes from the same paired resamples (:func:`_bleu_delta_interval`).

    ``refs``: one reference per sentence; ``tokenize``: sacreBLEU's tokenizer (13a); ``tokenized``: the caller
    says the references are tokenized (sacreBLEU's ``force``). Deterministic for a fixed ``seed`` (> 0).
    """
    from sacrebleu.significance import PairedTest

    refs, base_hyps, sys_hyps = list(refs), list(base_hyps), list(sys_hyps)
    if not (len(refs) == len(base_hyps) == len(sys_hyps)) or not refs:
        raise ValueError(
            f"not aligned or empty: {len(refs)} references, {len(base_hyps)} base and {len(sys_hyps)} system hypotheses"
        )
    _check_resampling(n_resamples, seed)
    n, n_resamples = len(refs), int(n_resamples)
    # References given to the metric are tokenized and counted once, then reused for every system.
    metric = recording_bleu()(tokenize=tokenize, references=[refs], force=tokenized)
    with _sacrebleu_seed(seed):
        test = PairedTest(
            [("base", base_hyps), ("system", sys_hyps)], {"BLEU": metric}, None, test_type="bs", n_samples=n_resamples
        )
    signatures, scores = test()
    (name,) = signatures
    base_res, sys_res = scores[name]

    base_stats = np.asarray(metric.statistics(base_hyps), dtype=np.float64)
    sys_stats = np.asarray(metric.statistics(sys_hyps), dtype=np.float64)
    low, high = _bleu_delta_interval(metric, base_stats, sys_stats, float(sys_res.mean), n_resamples, seed)
    p = 1.0 if np.array_equal(base_stats, sys_stats) else float(sys_res.p_value)
    return Comparison(
        base=float(base_res.score),
        system=float(sys_res.score),
        delta=float(sys_res.score) - float(base_res.score),
        low=low,
        high=high,
        p_value=p,
        n=n,
        n_resamples=n_resamples,
        method="sacrebleu-paired-bs",
        signature=str(signatures[name]),
    )


# --------------------------------------------------------------------------------------------------
# Perplexity: paired bootstrap over per-sentence NLL
# --------------------------------------------------------------------------------------------------


def _as_vector(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{what}: expected one value per sentence, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: not all finite")
    return v


def _ppl(nll: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # an untrained model: inf, as ablate.eval.nll.perplexity saturates
        return np.exp(nll / tokens)


def _nll_inputs(*values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, ...]:
    """Checked vectors (base NLL, base tokens, system NLL, system tokens), one entry per dev sentence."""
    bn, bt, sn, st = (_as_vector(v, w) for v, w in zip(values, ("base_nll", "base_tokens", "sys_nll", "sys_tokens")))
    n = len(bn)
    if not (len(bt) == len(sn) == len(st) == n):
        raise ValueError(
            f"not aligned: base has {n} NLLs and {len(bt)} token counts, "
            f"the system {len(sn)} NLLs and {len(st)} token counts (one each per dev sentence)"
        )
    if n == 0:
        raise ValueError("no sentences to compare")
    if np.any(bt <= 0) or np.any(st <= 0):
        raise ValueError("token counts must be positive (every target holds at least EOS)")
    if np.any(bn < 0) or np.any(sn < 0):
        raise ValueError("summed NLLs must be >= 0 (nats)")
    return bn, bt, sn, st


def paired_ppl(
    base_nll: Sequence[float] | np.ndarray,
    base_tokens: Sequence[int] | np.ndarray,
    sys_nll: Sequence[float] | np.ndarray,
    sys_tokens: Sequence[int] | np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Corpus PPL of the system minus base's on the same dev sentences, with a paired bootstrap.

    Inputs, one entry per dev sentence in the same order for both: the summed NLL in nats of the
    sentence's target (EOS included, padding not: ``SplitNLL.sentences``) and its token count (target
    length + 1). Corpus PPL = ``exp(sum NLL / sum tokens)``, as ``val/ppl``. The token counts are
    passed for each side so that a model with another vocabulary is still read correctly.

    Each of B resamples draws n sentences with replacement (numpy ``default_rng(seed)``; the same
    draws for both systems) and recomputes both corpus PPLs; d_b is the difference in resample b and
    d the observed one. Interval: sacreBLEU's 95% order-statistic rule over the d_b. p-value: the
    two-sided "shifted null" bootstrap test (Efron & Tibshirani, 1993, section 16.4; the two-sided
    form of Berg-Kirkpatrick et al., 2012): centre the resampled differences on 0 and count those at
    least as far from 0 as the observed one, ``p = (1 + #{b : |d_b - d| >= |d|}) / (B + 1)``.
    Identical inputs give d_b = d = 0 and p = 1.
    """
    bn, bt, sn, st = _nll_inputs(base_nll, base_tokens, sys_nll, sys_tokens)
    n = len(bn)
    _check_resampling(n_resamples, seed)
    n_resamples = int(n_resamples)

    base_ppl = float(_ppl(bn.sum(), bt.sum()))
    sys_ppl = float(_ppl(sn.sum(), st.sum()))
    delta = sys_ppl - base_ppl

    counts = _resample_counts(np.random.default_rng(int(seed)), n, n_resamples)
    sums = counts @ np.stack([bn, bt, sn, st], axis=1)  # B x 4: resampled NLL and tokens of both
    d = _ppl(sums[:, 2], sums[:, 3]) - _ppl(sums[:, 0], sums[:, 1])
    low, high = _interval(d)
    p = (1 + int(np.sum(np.abs(d - delta) >= abs(delta)))) / (n_resamples + 1)
    return Comparison(
        base=base_ppl,
        system=sys_ppl,
        delta=delta,
        low=low,
        high=high,
        p_value=float(p),
        n=n,
        n_resamples=n_resamples,
        method="paired-bootstrap-shifted-null",
    )
