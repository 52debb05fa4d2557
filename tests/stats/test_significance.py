"""Paired bootstraps (BLEU through sacreBLEU's test, PPL), Welch over seeds, degenerate output."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

from ablate.stats.degeneracy import degenerate, degenerate_share, is_degenerate
from ablate.stats.significance import Comparison, paired_bleu, paired_ppl

WORDS = (
    "der die das und ist ein eine nicht mit von zu den im auf für sich es auch dem Haus Katze Hund "
    "Stadt heute morgen sehr gut schnell Regierung Menschen Jahr"
).split()


def sentences(n: int, seed: int) -> list[str]:
    """Detokenized German-looking sentences ("... Haus.", no space before the period)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
        out.append(" ".join(words).capitalize() + ".")
    return out


def corrupt(refs: list[str], p: float, seed: int) -> list[str]:
    """Each word replaced by a random one with probability ``p``."""
    rng = random.Random(seed)
    return [" ".join(w if rng.random() > p else rng.choice(WORDS) for w in r.split()) for r in refs]


@pytest.fixture(scope="module")
def refs() -> list[str]:
    return sentences(120, seed=1)


@pytest.fixture(scope="module")
def base(refs: list[str]) -> list[str]:
    return corrupt(refs, 0.5, seed=2)


# ----------------------------------------------------------------------------------------- BLEU


def test_bleu_identical_systems_are_not_different(refs: list[str], base: list[str]) -> None:
    c = paired_bleu(refs, base, list(base))
    assert c.delta == 0.0 and c.low == 0.0 and c.high == 0.0
    # sacreBLEU alone says 1 / (B + 1) here; a system is never significantly different from itself.
    assert c.p_value == 1.0
    assert not c.significant()
    assert c.method == "sacrebleu-paired-bs" and c.n == len(refs) and c.n_resamples == 1000


def test_bleu_clearly_better_system_is_significant(refs: list[str], base: list[str]) -> None:
    better = [r if i % 5 else b for i, (r, b) in enumerate(zip(refs, base))]  # 80% copied references
    c = paired_bleu(refs, base, better)
    assert c.delta > 20
    assert 0 < c.low <= c.delta <= c.high
    assert c.p_value < 0.01 and c.significant()
    # The p-value is sacreBLEU's own, for the same seed and number of resamples.
    bleu = BLEU(references=[refs])
    _, scores = PairedTest([("b", base), ("s", better)], {"BLEU": bleu}, None, test_type="bs", n_samples=1000)()
    assert c.p_value == scores["BLEU"][1].p_value


def test_bleu_scores_are_sacrebleu_corpus_bleu(refs: list[str], base: list[str]) -> None:
    system = corrupt(refs, 0.3, seed=3)
    c = paired_bleu(refs, base, system, n_resamples=200, seed=7)
    assert c.base == pytest.approx(BLEU().corpus_score(base, [refs]).score, abs=1e-12)
    assert c.system == pytest.approx(BLEU().corpus_score(system, [refs]).score, abs=1e-12)
    assert c.delta == pytest.approx(c.system - c.base, abs=1e-12)
    assert "bs:200" in c.signature and "seed:7" in c.signature and "tok:13a" in c.signature


def test_bleu_is_deterministic_and_paired(refs: list[str], base: list[str]) -> None:
    system = corrupt(refs, 0.45, seed=4)
    first = paired_bleu(refs, base, system, n_resamples=300)
    assert paired_bleu(refs, base, system, n_resamples=300) == first
    # Same resamples for both systems: swapping them mirrors the interval exactly.
    swapped = paired_bleu(refs, system, base, n_resamples=300)
    assert swapped.delta == pytest.approx(-first.delta, abs=1e-12)
    assert (swapped.low, swapped.high) == pytest.approx((-first.high, -first.low), abs=1e-9)
    other_seed = paired_bleu(refs, base, system, n_resamples=300, seed=99)
    assert other_seed.delta == first.delta and (other_seed.low, other_seed.high) != (first.low, first.high)


def test_bleu_interval_is_of_the_paired_difference(refs: list[str], base: list[str]) -> None:
    # One sentence differs. About 37% of resamples leave it out, and there the two systems are the same
    # sentences, so the difference is exactly 0: the lower bound is 0. Each system's own BLEU moves by
    # several points; an interval from two unpaired CIs would be about twice as wide as the bound here.
    system = list(base)
    system[0] = refs[0]
    c = paired_bleu(refs, base, system, n_resamples=300)
    assert c.delta > 0 and c.low == 0.0 and c.high > c.delta
    _, scores = PairedTest(
        [("b", base), ("s", system)], {"BLEU": BLEU(references=[refs])}, None, test_type="bs", n_samples=300
    )()
    base_ci, sys_ci = scores["BLEU"][0].ci, scores["BLEU"][1].ci  # sacreBLEU's 95% half-widths, per system
    assert c.high - c.low < math.hypot(base_ci, sys_ci)


def test_bleu_restores_the_sacrebleu_seed_variable(
    refs: list[str], base: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setenv("SACREBLEU_SEED", "none")
    paired_bleu(refs[:20], base[:20], refs[:20], n_resamples=50)
    assert os.environ["SACREBLEU_SEED"] == "none"
    monkeypatch.delenv("SACREBLEU_SEED")
    paired_bleu(refs[:20], base[:20], refs[:20], n_resamples=50)
    assert "SACREBLEU_SEED" not in os.environ


def test_bleu_rejects_bad_input(refs: list[str], base: list[str]) -> None:
    with pytest.raises(ValueError, match="not aligned"):
        paired_bleu(refs, base[:-1], base)
    with pytest.raises(ValueError, match="or empty: 0 references"):
        paired_bleu([], [], [])
    with pytest.raises(ValueError, match="seed"):
        paired_bleu(refs, base, base, seed=0)
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bleu(refs, base, base, n_resamples=10)


# ------------------------------------------------------------------------------------------ PPL


def nll_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(5, 40, n)  # target length + EOS
    nll = tokens * rng.gamma(4.0, 0.5, n)  # about 2 nats a token, varying by sentence
    return nll, tokens


def test_ppl_point_values_are_corpus_perplexities() -> None:
    base_nll, tokens = [2.0, 3.0, 4.0], [1, 2, 3]
    sys_nll = [1.0, 1.0, 1.0]
    c = paired_ppl(base_nll, tokens, sys_nll, tokens, n_resamples=100)
    assert c.base == pytest.approx(math.exp(9 / 6))
    assert c.system == pytest.approx(math.exp(3 / 6))
    assert c.delta == pytest.approx(math.exp(3 / 6) - math.exp(9 / 6))
    assert c.n == 3 and c.method == "paired-bootstrap-shifted-null"


def test_ppl_matches_a_naive_bootstrap() -> None:
    base_nll, tokens = nll_data(50, seed=0)
    sys_nll = base_nll * np.random.default_rng(1).uniform(0.9, 1.05, 50)
    c = paired_ppl(base_nll, tokens, sys_nll, tokens, n_resamples=80, seed=5)
    idx = np.random.default_rng(5).choice(50, size=(80, 50), replace=True)  # the draws, as documented
    d = np.array(
        [math.exp(sys_nll[i].sum() / tokens[i].sum()) - math.exp(base_nll[i].sum() / tokens[i].sum()) for i in idx]
    )
    v = np.sort(d)
    assert (c.low, c.high) == pytest.approx((v[2], v[77]), rel=1e-12)  # 80 // 40 = 2
    assert c.p_value == pytest.approx((1 + np.sum(np.abs(d - c.delta) >= abs(c.delta))) / 81)


def test_ppl_lower_nll_is_significant() -> None:
    base_nll, tokens = nll_data(400, seed=2)
    noise = np.random.default_rng(3).normal(0, 0.5, 400)
    sys_nll = np.maximum(base_nll - 0.1 * tokens + noise, 0)  # 0.1 nats a token better
    c = paired_ppl(base_nll, tokens, sys_nll, tokens)
    assert c.delta < 0 and c.high < 0
    assert c.p_value < 0.01 and c.significant()
    worse = paired_ppl(sys_nll, tokens, base_nll, tokens)
    assert worse.delta > 0 and worse.low > 0 and worse.significant()


def test_ppl_identical_and_noise_only_are_not_significant() -> None:
    base_nll, tokens = nll_data(300, seed=4)
    same = paired_ppl(base_nll, tokens, base_nll.copy(), tokens)
    assert same.delta == 0 and same.p_value == 1.0 and not same.significant()
    # Zero-mean noise per sentence: no real difference; the interval covers 0.
    noisy = np.maximum(base_nll + np.random.default_rng(5).normal(0, 1.0, 300), 0)
    c = paired_ppl(base_nll, tokens, noisy, tokens)
    assert c.low < 0 < c.high and c.p_value > 0.05


def test_ppl_is_deterministic() -> None:
    base_nll, tokens = nll_data(100, seed=6)
    sys_nll = base_nll * 0.98
    a = paired_ppl(base_nll, tokens, sys_nll, tokens, seed=3)
    assert a == paired_ppl(list(base_nll), list(tokens), list(sys_nll), list(tokens), seed=3)
    assert isinstance(a, Comparison)


def test_ppl_rejects_bad_input() -> None:
    base_nll, tokens = nll_data(10, seed=7)
    with pytest.raises(ValueError, match="not aligned"):
        paired_ppl(base_nll, tokens, base_nll[:-1], tokens[:-1])
    with pytest.raises(ValueError, match="not aligned"):
        paired_ppl(base_nll, tokens[:-1], base_nll, tokens)
    with pytest.raises(ValueError, match="token counts"):
        paired_ppl(base_nll, tokens * 0, base_nll, tokens)
    with pytest.raises(ValueError, match="finite"):
        paired_ppl(np.full(10, np.nan), tokens, base_nll, tokens)
    with pytest.raises(ValueError, match="no sentences"):
        paired_ppl([], [], [], [])


# ----------------------------------------------------------------------------------- degeneracy


@pytest.mark.parametrize(
    "hyp",
    [
        "",
        "   ",
        "die die die die",
        "die die die die die die die die die die die die",
        "der , der , der",
        "ich bin ich bin",  # exactly half: the bound is inclusive
        "ich bin ich bin ich bin ich bin",
        "das ist gut das ist gut das ist gut das ist gut",
    ],
)
def test_degenerate_hypotheses(hyp: str) -> None:
    assert degenerate(hyp)


@pytest.mark.parametrize(
    "hyp",
    [
        "Ja.",
        "Danke schön !",
        "Die Katze, die auf der Matte sitzt, ist die schönste im ganzen Haus.",
        "Das Parlament hat heute über den Haushalt für das kommende Jahr abgestimmt.",
        "Er sagte, dass er es nicht wisse, und dass es ihm auch egal sei.",
    ],
)
def test_normal_sentences_are_not_degenerate(hyp: str) -> None:
    assert not degenerate(hyp)


def test_degenerate_share_and_row_verdict() -> None:
    good = ["Das Parlament hat heute abgestimmt.", "Die Katze sitzt auf der Matte."]
    bad = ["die die die die die", ""]
    assert degenerate_share(good) == 0.0
    assert degenerate_share(good + bad) == 0.5
    assert degenerate_share(bad) == 1.0
    assert is_degenerate(good + bad) and not is_degenerate(good + bad, threshold=0.6)
    assert not is_degenerate(good)
    assert math.isnan(degenerate_share([])) and is_degenerate([])
