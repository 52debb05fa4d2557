"""Perplexity from summed NLL (and per sentence), sacreBLEU corpus BLEU and paper-style tokenized BLEU."""

from __future__ import annotations

import math

import pytest
import torch

from ablate.eval.bleu import corpus_bleu, split_compounds, tokenized_bleu
from ablate.eval.nll import NLLMeter, corpus_nll, perplexity

PAD = 0


def test_ppl_is_exp_of_the_token_weighted_mean_not_a_mean_of_batch_means():
    meter = NLLMeter()
    meter.update(10.0, 5)  # batch mean 2.0
    meter.update(1.0, 1)  # batch mean 1.0
    assert meter.nll == pytest.approx(11.0 / 6)
    assert meter.ppl == pytest.approx(math.exp(11.0 / 6))
    assert perplexity(1e6) == math.inf
    assert math.isnan(NLLMeter().nll)


def test_bleu_signature_and_tokenized_bleu():
    refs = ["Das ist ein Ende-zu-Ende Test.", "Hallo Welt!"]
    perfect = corpus_bleu(refs, refs)
    assert perfect.score == pytest.approx(100.0)
    assert perfect.signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert corpus_bleu(["Das ist kein Test.", "Hallo!"], refs).score < 60
    assert split_compounds("Ende-zu-Ende") == "Ende ##AT##-##AT## zu ##AT##-##AT## Ende"
    # Splitting compounds gives partial credit for a half-right compound, which 13a alone does not.
    hyp = ["Das ist ein Ende-zu-Anfang Test.", "Hallo Welt!"]
    assert tokenized_bleu(hyp, refs) > corpus_bleu(hyp, refs).score
    with pytest.raises(ValueError):
        corpus_bleu(["a"], [])


class _Unigram(torch.nn.Module):
    """A model whose next-token distribution ignores the input: log p = log_softmax(bias)."""

    pad_id = PAD

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.linspace(-1, 1, vocab))

    def forward(self, src, tgt_in):
        return self.bias.expand(*tgt_in.shape, -1)

    @staticmethod
    def batch_inputs(batch):  # a model names its forward's arguments in a batch, as the Transformer does
        return batch["src"], batch["tgt_in"]


def test_per_sentence_nll_sums_to_the_corpus_nll_and_is_placed_by_index():
    model = _Unigram(6)
    logp = torch.log_softmax(model.bias.detach(), -1).double()
    targets = {0: [4, 5, 3], 1: [4, 3], 2: [5, 5, 5, 3]}  # sentence index -> target output (EOS = 3)
    batches = []
    for rows in ([2, 0], [1]):  # not in index order, as the length-sorted eval batches are not
        width = max(len(targets[i]) for i in rows)
        out = torch.zeros(len(rows), width, dtype=torch.long)
        for r, i in enumerate(rows):
            out[r, : len(targets[i])] = torch.tensor(targets[i])
        batches.append({"src": out, "tgt_in": out, "tgt_out": out, "index": torch.tensor(rows)})
    result = corpus_nll(model, batches, n_sentences=3)
    expected = [-float(logp[targets[i]].sum()) for i in range(3)]
    assert result.sentences == pytest.approx(expected)
    assert result.meter.tokens == 9
    assert result.nll == pytest.approx(sum(expected) / 9)
    assert result.ppl == pytest.approx(math.exp(sum(expected) / 9))
