"""Greedy and beam search against a scripted-probability toy decoder (exact hypotheses and scores)."""

from __future__ import annotations

import math

import pytest
import torch

from ablate.config import model_section
from ablate.eval.decode import beam_search, greedy_search, length_penalty, translate
from ablate.eval.settings import DecodeSettings

PAD, UNK, BOS, EOS, A, B = range(6)
V = 6


class ScriptedDecoder:
    """Implements the model's decoding contract; next-token probabilities come from a script.

    The script is chosen by the first source token. With a cache the script id is read from the
    *cross-attention cache* (filled once, on first use), so a wrongly reordered cross cache after
    sentences are dropped from the batch gives wrong outputs.
    """

    pad_id = PAD
    vocab_size = V

    def __init__(self, scripts: dict[int, dict[tuple[int, ...], dict[int, float]]]) -> None:
        self.scripts = scripts
        self.cross_computed = 0
        self.cross_reorders = 0
        self.decode_calls = 0

    def encode(self, src):
        return src[:, :1, None].float(), src == PAD

    def new_cache(self):
        return {"prefix": None, "cross": None}

    def _probs(self, script: int, prefix: tuple[int, ...]) -> torch.Tensor:
        table = self.scripts[script]
        dist = table.get(prefix, {A: 1 / 3, B: 1 / 3, EOS: 1 / 3})
        p = torch.zeros(V)
        for tok, prob in dist.items():
            p[tok] = prob
        return p.log()

    def decode(self, tgt, memory, src_pad, cache=None):
        self.decode_calls += 1
        if cache is None:
            prefix_rows, script = tgt, memory[:, 0, 0].long()
        else:
            if cache["cross"] is None:
                cache["cross"] = memory[:, 0, 0].long().clone()
                self.cross_computed += 1
            prev = cache["prefix"]
            cache["prefix"] = tgt if prev is None else torch.cat([prev, tgt], dim=1)
            prefix_rows, script = cache["prefix"], cache["cross"]
        out = torch.empty(tgt.size(0), tgt.size(1), V)
        offset = prefix_rows.size(1) - tgt.size(1)
        for r in range(tgt.size(0)):
            for j in range(tgt.size(1)):
                generated = tuple(prefix_rows[r, 1 : offset + j + 1].tolist())  # skip BOS
                out[r, j] = self._probs(int(script[r]), generated)
        return out

    def reorder_cache(self, cache, index, include_cross=False):
        cache["prefix"] = cache["prefix"].index_select(0, index)
        if include_cross:
            cache["cross"] = cache["cross"].index_select(0, index)
            self.cross_reorders += 1


SCRIPTS = {
    # Greedy takes A then EOS (0.6 * 0.4 = 0.24); a beam of 2 finds B EOS (0.4 * 0.9 = 0.36).
    0: {(): {A: 0.6, B: 0.4}, (A,): {A: 0.3, B: 0.3, EOS: 0.4}, (B,): {EOS: 0.9, A: 0.05, B: 0.05}},
    # The empty hypothesis (log 0.3) beats A A EOS (log 0.28) without a length penalty, not with alpha = 1.
    1: {
        (): {EOS: 0.3, A: 0.7},
        (A,): {A: 0.5, B: 0.3, EOS: 0.2},
        (A, A): {EOS: 0.8, A: 0.1, B: 0.1},
        (A, B): {EOS: 0.7, A: 0.2, B: 0.1},
    },
}


def S(beam_size: int = 4, alpha: float = 0.6, max_len_a: float = 1.0, max_len_b: int = 50) -> DecodeSettings:
    return DecodeSettings(beam_size=beam_size, alpha=alpha, max_len_a=max_len_a, max_len_b=max_len_b)


def src_for(*scripts: int, length: int = 2) -> torch.Tensor:
    rows = [[s] + [A] * (length - 1) for s in scripts]
    return torch.tensor(rows)


def test_length_penalty_gnmt_form():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert length_penalty(10, 0.0) == 1.0


def test_greedy_takes_the_locally_best_token():
    (hyp,) = greedy_search(ScriptedDecoder(SCRIPTS), src_for(0), S(alpha=0.0))
    assert hyp.tokens == [A]
    assert hyp.logprob == pytest.approx(math.log(0.24))


def test_beam_finds_the_better_hypothesis_with_exact_scores():
    model = ScriptedDecoder(SCRIPTS)
    (hyps,) = beam_search(model, src_for(0), S(beam_size=2, alpha=0.6), nbest=2)
    # Step 2: candidates B EOS (0.36) and A EOS (0.24) are both EOS within the top 2 -> both complete.
    assert [h.tokens for h in hyps] == [[B], [A]]
    lp = length_penalty(2, 0.6)
    assert hyps[0].logprob == pytest.approx(math.log(0.36))
    assert hyps[0].score == pytest.approx(math.log(0.36) / lp)
    assert hyps[1].score == pytest.approx(math.log(0.24) / lp)


@pytest.mark.parametrize(("alpha", "best"), [(0.0, []), (1.0, [A, A])])
def test_length_penalty_and_forced_eos_decide_the_winner(alpha, best):
    # max length 3 (EOS included): step 3 may only emit EOS. A EOS (0.14) ranks 3rd of the 4 candidates
    # at step 2, outside the top 2, so it never completes; A A EOS = 0.7 * 0.5 * 0.8 completes first.
    (hyps,) = beam_search(
        ScriptedDecoder(SCRIPTS), src_for(1), S(beam_size=2, alpha=alpha, max_len_a=0.0, max_len_b=3), nbest=2
    )
    by_tokens = {tuple(h.tokens): h for h in hyps}
    assert set(by_tokens) == {(), (A, A)}
    assert by_tokens[()].logprob == pytest.approx(math.log(0.3))
    assert by_tokens[(A, A)].logprob == pytest.approx(math.log(0.7 * 0.5 * 0.8))
    assert by_tokens[(A, A)].score == pytest.approx(math.log(0.28) / length_penalty(3, alpha))
    assert hyps[0].tokens == best


def test_batched_beam_drops_finished_sentences_and_keeps_sources_aligned():
    model = ScriptedDecoder(SCRIPTS)
    out = beam_search(model, src_for(1, 0, 1), S(beam_size=2, alpha=1.0, max_len_a=0.0, max_len_b=3))
    assert [o[0].tokens for o in out] == [[A, A], [B], [A, A]]
    # Cross K/V computed once; reordered only when the layout changed (1 -> k rows, sentence 0 done).
    assert model.cross_computed == 1
    assert model.cross_reorders == 2


def test_beam_one_equals_greedy():
    model = ScriptedDecoder(SCRIPTS)
    src = src_for(0, 1, 1, 0)
    one = S(beam_size=1, alpha=0.6, max_len_a=0.0, max_len_b=4)
    greedy = greedy_search(model, src, one)
    beam = beam_search(model, src, one)
    assert [g.tokens for g in greedy] == [b[0].tokens for b in beam]
    assert [g.score for g in greedy] == pytest.approx([b[0].score for b in beam])
    assert translate(model, src, one) == [g.tokens for g in greedy]


@pytest.mark.parametrize("beam", [1, 3])
def test_cached_equals_full_redecoding(beam):
    model = ScriptedDecoder(SCRIPTS)
    src = src_for(0, 1, 0)
    settings = S(beam_size=beam, alpha=0.6, max_len_a=1.0, max_len_b=3)
    cached = beam_search(model, src, settings, nbest=beam, use_cache=True)
    full = beam_search(model, src, settings, nbest=beam, use_cache=False)
    assert [[h.tokens for h in s] for s in cached] == [[h.tokens for h in s] for s in full]
    assert [h.score for s in cached for h in s] == pytest.approx([h.score for s in full for h in s])


class NoEosDecoder(ScriptedDecoder):
    def _probs(self, script: int, prefix: tuple[int, ...]) -> torch.Tensor:
        p = torch.zeros(V)
        p[A], p[B], p[EOS] = 0.6, 0.4 - 1e-6, 1e-6  # EOS never wins before the limit (outside a beam of 2)
        return p.log()


@pytest.mark.parametrize(("a", "b", "src_len"), [(1.0, 0, 2), (1.0, 1, 3), (0.0, 5, 4), (1.5, 2, 3)])
def test_max_length_follows_source_length(a, b, src_len):
    # A model that (almost) never emits EOS runs every hypothesis to the limit floor(a * |src| + b) (EOS
    # included), where EOS is forced: each output has exactly limit - 1 tokens, for greedy and beam search.
    limit = max(1, math.floor(a * src_len + b))
    settings = S(beam_size=2, alpha=0.6, max_len_a=a, max_len_b=b)
    src = src_for(3, 3, length=src_len)
    for hyp in greedy_search(NoEosDecoder({3: {}}), src, settings):
        assert hyp.tokens == [A] * (limit - 1)
    for hyps in beam_search(NoEosDecoder({3: {}}), src, settings, nbest=2):
        assert [len(h.tokens) for h in hyps] == [limit - 1] * 2
        assert hyps[0].tokens == [A] * (limit - 1)
    # padding does not count: a shorter sentence in the same batch gets its own, shorter limit
    mixed = torch.tensor([[3] + [A] * (src_len - 1), [3] + [PAD] * (src_len - 1)])
    short = max(1, math.floor(a * 1 + b))
    assert [len(h.tokens) for h in greedy_search(NoEosDecoder({3: {}}), mixed, settings)] == [limit - 1, short - 1]


def test_greedy_ends_at_the_limit_even_where_eos_is_impossible():
    class NeverEos(ScriptedDecoder):
        def _probs(self, script: int, prefix: tuple[int, ...]) -> torch.Tensor:
            p = torch.zeros(V)
            p[A], p[B] = 0.6, 0.4
            return p.log()

    (hyp,) = greedy_search(NeverEos({3: {}}), src_for(3, length=3), S(max_len_a=1.0, max_len_b=0))
    assert hyp.tokens == [A, A] and hyp.logprob == -math.inf


def test_decode_settings_from_the_eval_config():
    from ablate.config import load_config

    cfg = load_config(overrides=["eval.beam_size=5", "eval.length_penalty=1.0", "eval.max_len_b=7"])
    s = DecodeSettings.from_config(cfg.eval)
    assert (s.beam_size, s.alpha, s.max_len_a, s.max_len_b) == (5, 1.0, float(cfg.eval.max_len_a), 7)
    assert DecodeSettings.from_config(cfg.eval, beam_size=1).beam_size == 1
    with pytest.raises(ValueError, match="beam_size"):
        DecodeSettings(beam_size=0)


@pytest.fixture
def tiny_model(tiny_model_cfg):
    from ablate.model.build import build_model

    torch.manual_seed(0)
    model = build_model(model_section(tiny_model_cfg), vocab_size=32, pad_id=PAD).eval()
    with torch.no_grad():  # make EOS likely enough that hypotheses of different lengths finish
        model.output_weight[EOS] *= 3.0
    return model


def _real_src() -> torch.Tensor:
    torch.manual_seed(1)
    src = torch.randint(4, 32, (5, 7))
    src[1, 4:] = PAD
    src[3, 2:] = PAD
    src[torch.arange(5), (src != PAD).sum(1) - 1] = EOS
    return src


@pytest.mark.parametrize("beam", [1, 4])
def test_real_model_cached_equals_full_redecoding(tiny_model, beam):
    src = _real_src()
    settings = S(beam_size=beam, alpha=0.6, max_len_a=1.0, max_len_b=4)
    cached = beam_search(tiny_model, src, settings, nbest=beam, use_cache=True)
    full = beam_search(tiny_model, src, settings, nbest=beam, use_cache=False)
    assert [[h.tokens for h in s] for s in cached] == [[h.tokens for h in s] for s in full]
    assert [h.score for s in cached for h in s] == pytest.approx([h.score for s in full for h in s], abs=1e-4)
    lengths = {len(h.tokens) for s in cached for h in s}
    assert len(lengths) > 1  # the test exercises sentences finishing at different steps


def test_real_model_beam_one_equals_greedy(tiny_model):
    src = _real_src()
    one = S(beam_size=1, max_len_b=6)
    greedy = greedy_search(tiny_model, src, one)
    greedy_full = greedy_search(tiny_model, src, one, use_cache=False)
    beam = beam_search(tiny_model, src, one)
    assert [g.tokens for g in greedy] == [b[0].tokens for b in beam] == [g.tokens for g in greedy_full]
    assert [g.logprob for g in greedy] == pytest.approx([b[0].logprob for b in beam], abs=1e-5)


class RowCountingDecoder(ScriptedDecoder):
    def __init__(self, scripts) -> None:
        super().__init__(scripts)
        self.rows: list[int] = []

    def decode(self, tgt, memory, src_pad, cache=None):
        self.rows.append(tgt.size(0))
        return super().decode(tgt, memory, src_pad, cache)


def test_a_sentence_that_finishes_early_leaves_the_batch_and_others_decode_as_alone():
    settings = S(beam_size=2, alpha=1.0, max_len_a=0.0, max_len_b=3)
    model = RowCountingDecoder(SCRIPTS)
    together = beam_search(model, src_for(0, 1), settings, nbest=2)
    # step 1: one row per sentence; step 2: k rows each; sentence 0 has its 2 finals after step 2,
    # so step 3 decodes only sentence 1's 2 rows
    assert model.rows == [2, 4, 2]
    for i, script in enumerate((0, 1)):
        (alone,) = beam_search(ScriptedDecoder(SCRIPTS), src_for(script), settings, nbest=2)
        assert [(h.tokens, h.logprob, h.score) for h in together[i]] == [(h.tokens, h.logprob, h.score) for h in alone]


def test_early_stop_returns_what_the_k_finals_rule_returns():
    # beam 3, alpha 0: after step 2, B EOS (0.36) and A EOS (0.24) are final and the best open beam, A A
    # (0.18), can only lose probability: with nbest=1 the search stops there; nbest=3 runs to k finals.
    settings = S(beam_size=3, alpha=0.0, max_len_a=0.0, max_len_b=6)
    early, full = ScriptedDecoder(SCRIPTS), ScriptedDecoder(SCRIPTS)
    (one,) = beam_search(early, src_for(0), settings, nbest=1)
    (three,) = beam_search(full, src_for(0), settings, nbest=3)
    assert early.decode_calls == 2 < full.decode_calls
    assert (one[0].tokens, one[0].score) == (three[0].tokens, three[0].score) == ([B], pytest.approx(math.log(0.36)))


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_real_model_early_stop_keeps_the_best_hypothesis(tiny_model, alpha):
    src = _real_src()
    settings = S(beam_size=4, alpha=alpha, max_len_a=1.0, max_len_b=8)
    one = beam_search(tiny_model, src, settings, nbest=1)
    four = beam_search(tiny_model, src, settings, nbest=4)
    assert [h[0].tokens for h in one] == [h[0].tokens for h in four]
    # the same hypothesis scored in batches of other shapes: equal up to float32 summation order
    assert [h[0].score for h in one] == pytest.approx([h[0].score for h in four], rel=1e-6)
