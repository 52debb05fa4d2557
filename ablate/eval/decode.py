"""Greedy and batched beam search with incremental decoding (independent of Lightning).

Beam search as used by Vaswani et al. 2017, section 6.1: beam 4, length penalty alpha = 0.6 in the
GNMT form lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al. 2016), maximum output length = source length + 50
(here ``max_len_a * source length + max_len_b``, the source length counting its EOS). All of it comes
in one :class:`~ablate.eval.settings.DecodeSettings`.

Conventions shared by both searches:

- ``|Y|`` counts the generated tokens including the final EOS; a hypothesis has at most ``max_len``
  of them, and at the last allowed position EOS is forced (so every hypothesis ends with EOS).
- ``logprob`` is the model's summed log-probability of the tokens and the EOS; ``score`` is
  ``logprob / lp(|Y|)``. PAD and BOS are never generated.
- A sentence is finished once it holds ``beam_size`` completed hypotheses (as fairseq does), or
  earlier, once no open beam can still score above its ``nbest``-th best completed hypothesis (the
  bound in :func:`_cannot_improve`; the returned hypotheses are exactly those of the fairseq rule);
  its rows are then dropped from the batch, so the batch shrinks as sentences finish.

Incremental decoding uses the model contract (docs/architecture.md): ``encode``, ``new_cache``,
``decode(new_tokens, memory, src_pad, cache)`` and ``reorder_cache(cache, index, include_cross)``.
Cross-attention keys/values are computed once per source row on the first step; they are reordered only
when the row layout changes (after the first step, when each sentence grows from 1 row to ``beam_size``
rows, and when finished sentences are dropped), never for a plain beam reorder, because every beam of a
sentence attends to the same source. ``use_cache=False`` re-decodes the whole prefix each step (the
reference the benchmark and tests compare against).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ablate.eval.settings import BOS_ID, EOS_ID, DecodeSettings

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "Hypothesis",
    "beam_search",
    "greedy_search",
    "length_penalty",
    "max_lengths",
    "translate",
]

_DEFAULT = DecodeSettings()


@dataclass(frozen=True)
class Hypothesis:
    tokens: list[int]  # generated subword ids, without BOS and the final EOS
    logprob: float  # summed log-probability of tokens + EOS
    score: float  # logprob / lp(len(tokens) + 1)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6)^alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def max_lengths(src: Tensor, pad_id: int, a: float, b: int) -> Tensor:
    """Per-sentence limit on generated tokens (EOS included): floor(a * source length + b), at least 1."""
    src_len = (src != pad_id).sum(1).to(torch.float64)
    return torch.floor(a * src_len + b).long().clamp(min=1)


class _Stepper:
    """Runs one decoding step, with the incremental cache or by re-decoding the whole prefix."""

    def __init__(self, model: Any, src: Tensor, use_cache: bool) -> None:
        self.model = model
        self.memory, self.src_pad = model.encode(src)
        self.cache = model.new_cache() if use_cache else None

    def __call__(self, tokens: Tensor) -> Tensor:
        """tokens [N,t] (BOS + generated so far) -> log-probabilities of the next token [N,V] (fp32)."""
        if self.cache is not None:
            logits = self.model.decode(tokens[:, -1:], self.memory, self.src_pad, cache=self.cache)
        else:
            logits = self.model.decode(tokens, self.memory, self.src_pad, cache=None)
        return torch.log_softmax(logits[:, -1].float(), dim=-1)

    def reorder(self, index: Tensor, layout_changed: bool) -> None:
        """Select rows ``index``; the source side (memory, cross cache) only if the row layout changed."""
        if layout_changed:
            self.memory = self.memory.index_select(0, index)
            self.src_pad = self.src_pad.index_select(0, index)
        if self.cache is not None:
            out = self.model.reorder_cache(self.cache, index, include_cross=layout_changed)
            if out is not None:  # the contract allows in-place or returned caches
                self.cache = out


def _next_lprobs(step: _Stepper, tokens: Tensor, at_limit: Tensor, pad_id: int, s: DecodeSettings) -> Tensor:
    """Log-probabilities of the next token with PAD/BOS masked and EOS forced on rows ``at_limit``."""
    lprobs = step(tokens)
    lprobs[:, pad_id] = -math.inf
    if s.bos_id != pad_id:
        lprobs[:, s.bos_id] = -math.inf
    if at_limit.any():
        eos_col = lprobs[at_limit, s.eos_id].clone()
        lprobs[at_limit] = -math.inf
        lprobs[at_limit, s.eos_id] = eos_col
    return lprobs


@torch.no_grad()
def greedy_search(
    model: Any, src: Tensor, settings: DecodeSettings = _DEFAULT, *, use_cache: bool = True
) -> list[Hypothesis]:
    """Batched greedy decoding (``settings.beam_size`` is not used); src [B,S] long, padded with
    ``model.pad_id``. One hypothesis per sentence."""
    s, pad_id, n = settings, model.pad_id, src.size(0)
    limit = max_lengths(src, pad_id, s.max_len_a, s.max_len_b)
    step = _Stepper(model, src, use_cache)
    alive = torch.arange(n, device=src.device)  # original sentence index of every row
    tokens = torch.full((n, 1), s.bos_id, dtype=torch.long, device=src.device)
    logprob = torch.zeros(n, dtype=torch.float64, device=src.device)
    out: list[Hypothesis | None] = [None] * n
    t = 0
    while alive.numel():
        at_limit = limit[alive] <= t + 1
        lprobs = _next_lprobs(step, tokens, at_limit, pad_id, s)
        best, tok = lprobs.max(dim=-1)
        tok = torch.where(at_limit, s.eos_id, tok)  # even where EOS is impossible (log-prob -inf): always ends
        best = lprobs.gather(1, tok[:, None]).squeeze(1)
        logprob += best.double()
        tokens = torch.cat([tokens, tok[:, None]], dim=1)
        t += 1
        done = tok == s.eos_id
        if done.any():
            for row in done.nonzero().flatten().tolist():
                lp = float(logprob[row])
                out[int(alive[row])] = Hypothesis(tokens[row, 1:-1].tolist(), lp, lp / length_penalty(t, s.alpha))
            keep = (~done).nonzero().flatten()
            alive, tokens, logprob = alive[keep], tokens[keep], logprob[keep]
            if keep.numel():
                step.reorder(keep, layout_changed=True)
    return [h for h in out if h is not None]


@dataclass
class _Beams:
    """The live part of a batched beam search."""

    sent: Tensor  # [N] original index of every active sentence
    tokens: Tensor  # [N*k_cur, t+1] BOS + generated tokens
    scores: Tensor  # [N*k_cur] summed log-probabilities (float64)
    k_cur: int  # rows per sentence: 1 before the first step (all beams would be identical), then k


@dataclass
class _Candidates:
    score: Tensor  # [N, C] summed log-probabilities, best first
    beam: Tensor  # [N, C] which of the sentence's rows it extends
    tok: Tensor  # [N, C] the token it appends
    is_eos: Tensor  # [N, C]


def _candidates(beams: _Beams, lprobs: Tensor, k: int, eos_id: int) -> _Candidates:
    """Every beam x every token; the top 2k always leave >= k that do not end in EOS.

    The best 2k of a sentence's k_cur x V extensions are among the best 2k tokens of each of its beams
    (a beam's score is one constant added to its row), so each row is cut to its top 2k in fp32 first
    and only k_cur x 2k sums per sentence are formed in float64."""
    n, vocab = beams.sent.numel(), lprobs.size(-1)
    per_row = min(2 * k, vocab)
    row_lp, row_tok = lprobs.topk(per_row, dim=1)  # [N*k_cur, 2k]
    total = (beams.scores[:, None] + row_lp.double()).view(n, beams.k_cur * per_row)
    score, idx = total.topk(min(2 * k, beams.k_cur * per_row), dim=1)  # sorted best first
    tok = row_tok.view(n, beams.k_cur * per_row).gather(1, idx)
    return _Candidates(score, torch.div(idx, per_row, rounding_mode="floor"), tok, tok == eos_id)


@dataclass
class _Finished:
    """Final hypotheses per sentence and, for the early stop, the ``nbest``-th best final score."""

    hyps: list[list[Hypothesis]]
    bar: Tensor  # [n_sent] float64: the nbest-th best score so far, -inf until there are nbest
    nbest: int

    def add(self, sent: int, hyp: Hypothesis) -> None:
        hyps = self.hyps[sent]
        hyps.append(hyp)
        if len(hyps) >= self.nbest:
            self.bar[sent] = sorted((h.score for h in hyps), reverse=True)[self.nbest - 1]


def _complete(
    finished: _Finished, beams: _Beams, cand: _Candidates, at_limit: Tensor, t: int, k: int, alpha: float
) -> Tensor:
    """Store EOS candidates ranked within the top k (fairseq's rule); returns which sentences are done [N]."""
    final = cand.is_eos & torch.isfinite(cand.score)
    final[:, k:] = False
    done = at_limit.clone()
    if final.any():
        lp = length_penalty(t, alpha)
        for i, j in final.nonzero().tolist():
            sent = int(beams.sent[i])
            if len(finished.hyps[sent]) < k:
                row = i * beams.k_cur + int(cand.beam[i, j])
                s = float(cand.score[i, j])
                finished.add(sent, Hypothesis(beams.tokens[row, 1:].tolist(), s, s / lp))
            done[i] = done[i] or len(finished.hyps[sent]) >= k
    return done


def _cannot_improve(
    finished: _Finished, beams: _Beams, cand: _Candidates, limit: Tensor, t: int, alpha: float
) -> Tensor:
    """Sentences [N] whose ``nbest`` best final hypotheses can no longer change.

    Every later final hypothesis extends one of the next open beams, so its log-probability is at most
    the best open one, L <= 0, and its length |Y| lies in (t, limit]: its score is at most
    L / max(lp(t + 1), lp(limit)). When that bound is <= the nbest-th best final score, the fairseq rule
    (go on until k finals) would only add hypotheses that rank after the current nbest (a stable sort
    keeps earlier ones first on ties), so stopping now returns exactly the same nbest hypotheses."""
    best_open = cand.score.masked_fill(cand.is_eos, -math.inf).amax(dim=1)  # [N] best next beam
    longest = limit[beams.sent].double()
    lp_max = torch.maximum(((5.0 + longest) / 6.0) ** alpha, torch.full_like(longest, length_penalty(t + 1, alpha)))
    return best_open / lp_max <= finished.bar[beams.sent]


def _advance(beams: _Beams, cand: _Candidates, done: Tensor, k: int, step: _Stepper) -> _Beams:
    """Next beams: per unfinished sentence the best k candidates not ending in EOS (stable: EOS pushed back)."""
    n, n_cand, device = beams.sent.numel(), cand.score.size(1), cand.score.device
    order = (torch.arange(n_cand, device=device)[None, :] + cand.is_eos.long() * n_cand).argsort(dim=1)[:, :k]
    next_tok, next_score = cand.tok.gather(1, order), cand.score.gather(1, order)
    parent = (torch.arange(n, device=device)[:, None] * beams.k_cur + cand.beam.gather(1, order)).view(-1)
    keep = (~done).nonzero().flatten()
    layout_changed = beams.k_cur != k or keep.numel() < n
    rows = (keep[:, None] * k + torch.arange(k, device=device)[None, :]).view(-1)  # kept rows of [N*k]
    index = parent[rows]
    out = _Beams(
        beams.sent[keep],
        torch.cat([beams.tokens[index], next_tok.view(-1)[rows, None]], dim=1),
        next_score.view(-1)[rows],
        k,
    )
    if out.sent.numel():
        step.reorder(index, layout_changed)
    return out


@torch.no_grad()
def beam_search(
    model: Any, src: Tensor, settings: DecodeSettings = _DEFAULT, *, nbest: int = 1, use_cache: bool = True
) -> list[list[Hypothesis]]:
    """Batched beam search; src [B,S]. Returns, per sentence, its ``nbest`` hypotheses, best first."""
    s, k = settings, settings.beam_size
    if not 1 <= nbest <= k:
        raise ValueError(f"need 1 <= nbest <= beam_size, got nbest={nbest}, beam_size={k}")
    n_sent, device = src.size(0), src.device
    limit = max_lengths(src, model.pad_id, s.max_len_a, s.max_len_b)
    step = _Stepper(model, src, use_cache)
    finished = _Finished(
        [[] for _ in range(n_sent)], torch.full((n_sent,), -math.inf, dtype=torch.float64, device=device), nbest
    )
    beams = _Beams(
        torch.arange(n_sent, device=device),
        torch.full((n_sent, 1), s.bos_id, dtype=torch.long, device=device),
        torch.zeros(n_sent, dtype=torch.float64, device=device),
        1,
    )
    t = 0
    while beams.sent.numel():
        at_limit = limit[beams.sent] <= t + 1  # [N]
        lprobs = _next_lprobs(step, beams.tokens, at_limit.repeat_interleave(beams.k_cur), model.pad_id, s)
        t += 1
        cand = _candidates(beams, lprobs, k, s.eos_id)
        done = _complete(finished, beams, cand, at_limit, t, k, s.alpha)
        done |= _cannot_improve(finished, beams, cand, limit, t, s.alpha)
        beams = _advance(beams, cand, done, k, step)
    return [sorted(hyps, key=lambda h: -h.score)[:nbest] for hyps in finished.hyps]


def translate(model: Any, src: Tensor, settings: DecodeSettings = _DEFAULT) -> list[list[int]]:
    """Best token ids per sentence: greedy search for beam 1, beam search otherwise."""
    if settings.beam_size == 1:
        return [h.tokens for h in greedy_search(model, src, settings)]
    return [hyps[0].tokens for hyps in beam_search(model, src, settings)]
