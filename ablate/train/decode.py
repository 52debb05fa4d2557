"""Greedy and batched beam search with incremental decoding (independent of Lightning).

Beam search as used by Vaswani et al. 2017, section 6.1: beam 4, length penalty alpha = 0.6 in the
GNMT form lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al. 2016), maximum output length = source length + 50
(here ``max_len_a * source length + max_len_b``, the source length counting its EOS).

Conventions shared by both searches:

- ``|Y|`` counts the generated tokens including the final EOS; a hypothesis has at most ``max_len``
  of them, and at the last allowed position EOS is forced (so every hypothesis ends with EOS).
- ``logprob`` is the model's summed log-probability of the tokens and the EOS; ``score`` is
  ``logprob / lp(|Y|)``. PAD and BOS are never generated.
- A sentence is finished once it holds ``beam_size`` completed hypotheses (as fairseq does); its
  rows are then dropped from the batch.

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

BOS_ID = 2  # the special ids of ablate's tokenizer (ablate/data/tokenizer.py)
EOS_ID = 3


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


def _mask_specials(lprobs: Tensor, pad_id: int, bos_id: int) -> None:
    lprobs[:, pad_id] = -math.inf
    if bos_id != pad_id:
        lprobs[:, bos_id] = -math.inf


def _force_eos(lprobs: Tensor, rows: Tensor, eos_id: int) -> None:
    """Rows that reached their length limit may only produce EOS."""
    if rows.any():
        eos_col = lprobs[rows, eos_id].clone()
        lprobs[rows] = -math.inf
        lprobs[rows, eos_id] = eos_col


@torch.no_grad()
def greedy_search(
    model: Any,
    src: Tensor,
    *,
    alpha: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    use_cache: bool = True,
) -> list[Hypothesis]:
    """Batched greedy decoding; src [B,S] long (padded with model.pad_id). One hypothesis per sentence."""
    pad_id = model.pad_id
    n = src.size(0)
    limit = max_lengths(src, pad_id, max_len_a, max_len_b)
    step = _Stepper(model, src, use_cache)
    alive = torch.arange(n, device=src.device)  # original sentence index of every row
    tokens = torch.full((n, 1), bos_id, dtype=torch.long, device=src.device)
    logprob = torch.zeros(n, dtype=torch.float64, device=src.device)
    out: list[Hypothesis | None] = [None] * n
    t = 0
    while alive.numel():
        lprobs = step(tokens)
        _mask_specials(lprobs, pad_id, bos_id)
        _force_eos(lprobs, limit[alive] <= t + 1, eos_id)
        best, tok = lprobs.max(dim=-1)
        logprob += best.double()
        tokens = torch.cat([tokens, tok[:, None]], dim=1)
        t += 1
        done = tok == eos_id
        if done.any():
            for row in done.nonzero().flatten().tolist():
                lp = float(logprob[row])
                out[int(alive[row])] = Hypothesis(tokens[row, 1:-1].tolist(), lp, lp / length_penalty(t, alpha))
            keep = (~done).nonzero().flatten()
            alive, tokens, logprob = alive[keep], tokens[keep], logprob[keep]
            if keep.numel():
                step.reorder(keep, layout_changed=True)
    return [h for h in out if h is not None]


@torch.no_grad()
def beam_search(
    model: Any,
    src: Tensor,
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    nbest: int = 1,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    use_cache: bool = True,
) -> list[list[Hypothesis]]:
    """Batched beam search; src [B,S]. Returns, per sentence, its ``nbest`` hypotheses, best first."""
    if beam_size < 1 or not 1 <= nbest <= beam_size:
        raise ValueError(f"need beam_size >= 1 and 1 <= nbest <= beam_size, got {beam_size}, {nbest}")
    pad_id, k = model.pad_id, beam_size
    n_sent = src.size(0)
    device = src.device
    limit = max_lengths(src, pad_id, max_len_a, max_len_b)
    step = _Stepper(model, src, use_cache)
    finished: list[list[Hypothesis]] = [[] for _ in range(n_sent)]
    sent = torch.arange(n_sent, device=device)  # original index of every active sentence
    k_cur = 1  # rows per sentence: 1 before the first step (all beams would be identical), then k
    tokens = torch.full((n_sent, 1), bos_id, dtype=torch.long, device=device)  # [N*k_cur, t+1]
    scores = torch.zeros(n_sent, dtype=torch.float64, device=device)  # summed log-probs [N*k_cur]
    t = 0
    while sent.numel():
        n = sent.numel()
        lprobs = step(tokens)  # [N*k_cur, V]
        vocab = lprobs.size(-1)
        _mask_specials(lprobs, pad_id, bos_id)
        at_limit = limit[sent] <= t + 1  # [N]
        _force_eos(lprobs, at_limit.repeat_interleave(k_cur), eos_id)
        t += 1
        # Candidates: every beam x every token; 2k of them always leave >= k that do not end in EOS.
        total = (scores[:, None] + lprobs.double()).view(n, k_cur * vocab)
        n_cand = min(2 * k, k_cur * vocab)
        cand_score, cand_idx = total.topk(n_cand, dim=1)  # [N, 2k], sorted best first
        cand_beam = torch.div(cand_idx, vocab, rounding_mode="floor")
        cand_tok = cand_idx % vocab
        is_eos = cand_tok == eos_id

        # Complete hypotheses: EOS candidates ranked within the top k (fairseq's rule).
        final = is_eos & torch.isfinite(cand_score)
        final[:, k:] = False
        done = at_limit.clone()
        if final.any():
            lp = length_penalty(t, alpha)
            for i, j in final.nonzero().tolist():
                hyps = finished[int(sent[i])]
                if len(hyps) < k:
                    row = i * k_cur + int(cand_beam[i, j])
                    s = float(cand_score[i, j])
                    hyps.append(Hypothesis(tokens[row, 1:].tolist(), s, s / lp))
                done[i] = done[i] or len(hyps) >= k

        # Next beams: the best k candidates that do not end in EOS (stable: EOS pushed to the back).
        order = (torch.arange(n_cand, device=device)[None, :] + is_eos.long() * n_cand).argsort(dim=1)[:, :k]
        next_beam = cand_beam.gather(1, order)
        next_tok = cand_tok.gather(1, order)
        next_score = cand_score.gather(1, order)
        parent = (torch.arange(n, device=device)[:, None] * k_cur + next_beam).view(-1)  # [N*k] old rows

        keep = (~done).nonzero().flatten()
        layout_changed = k_cur != k or keep.numel() < n
        rows = (keep[:, None] * k + torch.arange(k, device=device)[None, :]).view(-1)  # kept rows of [N*k]
        index = parent[rows]
        sent = sent[keep]
        tokens = torch.cat([tokens[index], next_tok.view(-1)[rows, None]], dim=1)
        scores = next_score.view(-1)[rows]
        k_cur = k
        if sent.numel():
            step.reorder(index, layout_changed)

    out = []
    for hyps in finished:
        hyps.sort(key=lambda h: -h.score)
        out.append(hyps[:nbest])
    return out


def translate(
    model: Any,
    src: Tensor,
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> list[list[int]]:
    """Best token ids per sentence: greedy search for beam 1, beam search otherwise."""
    kw = dict(alpha=alpha, max_len_a=max_len_a, max_len_b=max_len_b, bos_id=bos_id, eos_id=eos_id)
    if beam_size == 1:
        return [h.tokens for h in greedy_search(model, src, **kw)]
    return [hyps[0].tokens for hyps in beam_search(model, src, beam_size=beam_size, **kw)]
