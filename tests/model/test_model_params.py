"""Parameter counts (closed form == the built model, and the paper's Table 3 column) and FLOPs."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from ablate.config import model_section
from ablate.model import build_model, count_parameters, train_flops
from ablate.model.norm import LayerNorm
from ablate.model.slots import Slot
from ablate.report.paper import PAPER, PaperRow

# Table 3's columns that are model settings, as the model section names them (eps_ls and train_steps are
# training settings: those rows build base's model).
MODEL_COLUMNS = {"N": "n_layers", "d_model": "d_model", "d_ff": "d_ff", "h": "n_heads", "d_k": "d_k", "d_v": "d_v"}
MODEL_COLUMNS |= {"P_drop": "dropout", "positional": "positional"}


def model_overrides(row: PaperRow) -> dict[str, Any]:
    """A Table 3 row's changes to the base model (from ablate.report.paper, the one copy of the table)."""
    return {MODEL_COLUMNS[k]: v for k, v in row.changes.items() if k in MODEL_COLUMNS}


# row -> (model overrides on the base, the paper's params in millions or None where it prints none)
TABLE3: dict[str, tuple[dict[str, Any], float | None]] = {
    r.id: (model_overrides(r), r.params_m) for r in PAPER.values()
}
PAPER_VOCAB = 41000  # the embedding size the paper's params column is consistent with


@pytest.mark.parametrize("row", list(TABLE3))
def test_closed_form_equals_built_model(row: str) -> None:
    cfg = TABLE3[row][0]
    with torch.device("meta"):  # real size, nothing allocated
        model = build_model(model_section(cfg), vocab_size=37000)
    assert count_parameters(model_section(cfg), vocab_size=37000) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("row", [r for r, (_, paper) in TABLE3.items() if paper is not None])
def test_counts_match_the_papers_column(row: str) -> None:
    cfg, paper_millions = TABLE3[row]
    ours = count_parameters(model_section(cfg), vocab_size=PAPER_VOCAB) / 1e6
    assert abs(ours - paper_millions) / paper_millions < 0.03, f"{row}: {ours:.1f}M vs the paper's {paper_millions}M"


def test_untied_adds_two_embedding_matrices(tiny_model_cfg: dict[str, Any]) -> None:
    tied = count_parameters(model_section(tiny_model_cfg), vocab_size=32)
    assert (
        count_parameters(model_section({**tiny_model_cfg, "tie_embeddings": False}), vocab_size=32)
        == tied + 2 * 32 * 16
    )


def test_class_without_its_own_closed_form_is_counted_on_meta() -> None:
    class ScaledNorm(LayerNorm):  # inherits LayerNorm.num_params, which would miss `scale`
        def __init__(self, d_model: int) -> None:
            super().__init__(d_model)
            self.scale = nn.Parameter(torch.ones(1))

    assert Slot(ScaledNorm, {"d_model": 10}).num_params() == 21
    assert Slot(LayerNorm, {"d_model": 10}).num_params() == 20


@pytest.mark.parametrize("attention", ["mha", "gqa", "mqa"])
def test_train_flops_matches_a_flop_counter(attention: str) -> None:
    # FlopCounterMode counts every matmul of a real forward + backward. It counts causal attention as
    # the full T x T square, while train_flops counts the (T+1)/2 keys a causal query attends to on
    # average, so that difference is removed; what remains is the bias terms train_flops includes.
    # GQA / MQA: fewer key/value heads, so cheaper K/V projections (the scores are per query head).
    cfg = {
        "n_layers": 2,
        "d_model": 64,
        "d_ff": 128,
        "n_heads": 4,
        "d_k": 8,
        "d_v": 24,
        "dropout": 0.0,
        "attention": attention,
    }
    b, s, t, vocab = 4, 12, 9, 100
    model = build_model(model_section(cfg), vocab_size=vocab)
    src, tgt = torch.randint(4, vocab, (b, s)), torch.randint(4, vocab, (b, t))
    with FlopCounterMode(display=False) as counter:
        model(src, tgt).sum().backward()
    causal_saving = 3 * 2 * 4 * (8 + 24) * b * (t * t - t * (t + 1) / 2) * 2  # fwd+bwd, H(d_k+d_v), 2 layers
    expected = counter.get_total_flops() - causal_saving
    estimate = train_flops(model_section(cfg), vocab, src_tokens=b * s, tgt_tokens=b * t, src_len=s, tgt_len=t)
    assert estimate == pytest.approx(expected, rel=0.01)
    # linear in the number of tokens at fixed lengths
    double = train_flops(model_section(cfg), vocab, src_tokens=2 * b * s, tgt_tokens=2 * b * t, src_len=s, tgt_len=t)
    assert double == pytest.approx(2 * estimate)


def test_train_flops_of_the_base_model() -> None:
    # ~6 x non-embedding params x tokens plus the output projection and attention: order 1e13 per 25k-token step
    flops = train_flops(model_section({}), 37000, src_tokens=25000, tgt_tokens=25000, src_len=30, tgt_len=30)
    assert 6e12 < flops < 2e13
