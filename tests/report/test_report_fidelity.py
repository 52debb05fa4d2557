"""The fidelity summary on hand-made data: Spearman by hand, sign agreement, exclusions, n."""

from __future__ import annotations

import math

import pytest
from scipy.stats import spearmanr

from ablate.report.fidelity import fidelity, spearman
from ablate.report.table import build_table


def test_ranks_average_ties() -> None:
    assert spearman([4.92, 5.29, 6.11, 4.67, 4.92], [1, 2, 3, 0, 1]) == pytest.approx(1.0)  # ties averaged


def test_spearman_against_hand_computation_and_scipy() -> None:
    # Ranks x = [2.5, 4, 5, 1, 2.5], y = [3, 4, 2, 1, 5]: sum dx*dy = 2, sum dx^2 = 9.5, sum dy^2 = 10.
    x, y = [4.92, 5.29, 6.11, 4.67, 4.92], [10.0, 11.0, 9.5, 9.0, 12.0]
    assert spearman(x, y) == pytest.approx(2 / math.sqrt(95))
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2], [1, 2]) is None  # two points always correlate perfectly: not reported
    assert spearman([1, 1, 1], [1, 2, 3]) is None  # all tied: undefined


def test_fidelity_summary_by_hand(make_trial) -> None:
    # paper PPL:  base 4.92, A1 5.29 (+0.37), C1 6.11 (+1.19), D3 4.67 (-0.25), E 4.92 (0.00: not counted)
    # paper BLEU: base 25.8, A1 24.9 (-0.9),  C1 23.7 (-2.1),  D3 25.3 (-0.5),  E 25.7 (-0.1)
    rows = [
        make_trial("base", "base", "base", ppl=10.0, bleu=20.0),
        make_trial("h=1", "A", "A1", ppl=11.0, bleu=19.0, **{"model.n_heads": 1}),  # PPL +1 agree; BLEU -1 agree
        make_trial("N=1", "C", "C1", ppl=9.5, bleu=20.0, **{"model.n_layers": 1}),  # PPL -0.5 disagree; BLEU 0 disagree
        make_trial("ls0", "D", "D3", ppl=9.0, bleu=21.0, **{"train.label_smoothing": 0.0}),  # agree; BLEU +1 disagree
        make_trial("pos", "E", "E", ppl=12.0, bleu=19.5, **{"model.positional": "learned"}),  # PPL n/c; BLEU agree
        make_trial("rope", "E", None, ppl=1.0, bleu=99.0, **{"model.positional": "rope"}),  # no paper row: ignored
        make_trial("d_k=2", "B", "B1", state="running", **{"model.d_k": 2}),  # no result yet: ignored
    ]
    fid = fidelity(build_table(rows))
    assert (fid.n_ppl, fid.n_bleu) == (5, 5)
    assert fid.spearman_ppl == pytest.approx(2 / math.sqrt(95))
    # BLEU ranks: paper [5, 2, 1, 3, 4], ours [3.5, 1, 3.5, 5, 2] -> sum dx*dy = 1, 10, 9.5
    assert fid.spearman_bleu == pytest.approx(1 / math.sqrt(95))
    assert fid.sign_ppl == (2, 3)
    assert fid.sign_bleu == (2, 4)
    lines = fid.lines()
    assert lines[0] == "Spearman rank correlation with the paper: PPL +0.21 (n=5), BLEU +0.10 (n=5)"
    assert lines[1].startswith("Delta vs base has the paper's sign: PPL 2/3 (67%), BLEU 2/4 (50%)")


def test_fidelity_with_too_few_rows_says_so(make_trial) -> None:
    rows = [
        make_trial("base", "base", "base", ppl=10.0, bleu=20.0),
        make_trial("h=1", "A", "A1", ppl=11.0, bleu=19.0, **{"model.n_heads": 1}),
    ]
    fid = fidelity(build_table(rows))
    assert fid.spearman_ppl is None and fid.n_ppl == 2
    assert "PPL n/a (n=2, needs 3+)" in fid.lines()[0]
    assert fid.sign_ppl == (1, 1)


def test_spearman_is_scipys_with_ties_averaged() -> None:
    import numpy as np
    from scipy.stats import spearmanr

    from ablate.report.fidelity import spearman

    rng = np.random.default_rng(0)
    for n in (3, 5, 8, 20):
        for _ in range(50):
            x = rng.integers(0, 4, n).astype(float).tolist()  # many ties
            y = (rng.normal(size=n) + np.array(x)).round(1).tolist()
            if len(set(x)) < 2 or len(set(y)) < 2:
                assert spearman(x, y) is None
                continue
            assert spearman(x, y) == pytest.approx(float(spearmanr(x, y).statistic), abs=1e-12)
