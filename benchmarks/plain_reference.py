"""The plain references that bench_vs_plain.py measures ablate against, written out in full here.

Nothing in this file imports ablate's training or decoding code: it is what a researcher would write by
hand in an afternoon.

- :class:`PlainTransformer`: post-norm encoder-decoder (the paper's base shape), its own modules with
  ``F.scaled_dot_product_attention``, sinusoidal positions, one shared embedding / output matrix.
- :func:`plain_train`: a training loop with the full-logits loss, ``F.cross_entropy(logits [B*T, V],
  ignore_index=PAD, label_smoothing=eps)``, Adam and the Noam schedule.
- :func:`plain_beam`: a straightforward cached beam search over a model's ``encode`` / ``decode`` /
  ``reorder_cache`` contract. Every sentence of the batch stays in the batch until the last one is done
  (a finished sentence's rows keep being computed and their results ignored); the search rule is
  fairseq's, as ablate's: a hypothesis is final when EOS ranks in the top k of a step's 2k candidates,
  and a sentence is done once it has k final hypotheses or reaches its length limit.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

PAD, BOS, EOS = 0, 2, 3


class PlainAttention(nn.Module):
    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.h, self.q, self.kv, self.o = h, nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)

    def forward(self, x: Tensor, mem: Tensor, mask: Tensor | None, causal: bool = False) -> Tensor:
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.h, -1).transpose(1, 2)
        k, v = self.kv(mem).view(b, mem.size(1), 2, self.h, -1).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class PlainLayer(nn.Module):
    """Post-norm layer: self-attention, (cross-attention), FFN, each Norm(x + Dropout(f(x)))."""

    def __init__(self, d: int, h: int, d_ff: int, p: float, cross: bool) -> None:
        super().__init__()
        self.self_attn = PlainAttention(d, h)
        self.cross_attn = PlainAttention(d, h) if cross else None
        self.ffn = nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(3 if cross else 2))
        self.drop = nn.Dropout(p)

    def forward(self, x: Tensor, self_mask: Tensor | None, causal: bool, mem: Tensor | None = None, mem_mask=None):
        x = self.norms[0](x + self.drop(self.self_attn(x, x, self_mask, causal)))
        if self.cross_attn is not None:
            x = self.norms[1](x + self.drop(self.cross_attn(x, mem, mem_mask)))
        return self.norms[-1](x + self.drop(self.ffn(x)))


class PlainTransformer(nn.Module):
    def __init__(self, vocab: int, d: int, h: int, d_ff: int, layers: int, p: float, max_len: int = 1024) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0.0, d**-0.5)
        pos = torch.arange(max_len)[:, None] * torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos), torch.cos(pos)
        self.register_buffer("pe", pe, persistent=False)
        self.enc = nn.ModuleList(PlainLayer(d, h, d_ff, p, cross=False) for _ in range(layers))
        self.dec = nn.ModuleList(PlainLayer(d, h, d_ff, p, cross=True) for _ in range(layers))
        self.drop, self.scale = nn.Dropout(p), math.sqrt(d)

    def _embed(self, tokens: Tensor) -> Tensor:
        return self.drop(self.embed(tokens) * self.scale + self.pe[: tokens.size(1)])

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Full logits [B, T, V] at every position, padded or not."""
        keep = (src != PAD)[:, None, None, :]
        x = self._embed(src)
        for layer in self.enc:
            x = layer(x, keep, False)
        y = self._embed(tgt_in)
        for layer in self.dec:
            y = layer(y, None, True, x, keep)
        return F.linear(y, self.embed.weight)


def plain_train(model: nn.Module, batches: list[dict[str, Tensor]], warmup: int, eps: float, d: int) -> float:
    """Train on ``batches`` in order; seconds spent on the steps after the first ``warmup``."""
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    noam = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: d**-0.5 * min((s + 1) ** -0.5, (s + 1) * 4000**-1.5))
    total = 0.0
    for i, b in enumerate(batches):
        t = time.perf_counter()
        logits = model(b["src"], b["tgt_in"])
        n = (b["tgt_out"] != PAD).sum()
        loss = F.cross_entropy(
            logits.flatten(0, 1), b["tgt_out"].flatten(), ignore_index=PAD, label_smoothing=eps, reduction="sum"
        )
        del logits
        opt.zero_grad(set_to_none=True)
        (loss / n).backward()
        opt.step()
        noam.step()
        if i >= warmup:
            total += time.perf_counter() - t
    return total


@torch.no_grad()
def plain_beam(
    model: Any, src: Tensor, k: int, alpha: float, a: float, b: int, drop_finished: bool = False
) -> list[tuple[list[int], float]]:
    """Best (tokens, score) per sentence; score = logprob / ((5 + |Y|) / 6)^alpha, |Y| counting EOS.

    ``drop_finished``: a finished sentence leaves the batch (its rows, cache, memory and limits are
    dropped), as a production beam does; otherwise every sentence keeps its k rows to the batch's end.
    """
    n, dev = src.size(0), src.device
    limit = torch.floor(a * (src != PAD).sum(1).double() + b).long().clamp(min=1).repeat_interleave(k)
    memory, src_pad = model.encode(src)
    memory, src_pad = memory.repeat_interleave(k, 0), src_pad.repeat_interleave(k, 0)
    cache = model.new_cache()
    tokens = torch.full((n * k, 1), BOS, dtype=torch.long, device=dev)
    scores = torch.full((n, k), -math.inf, dtype=torch.float64, device=dev)
    scores[:, 0] = 0.0  # all k beams start identical: only the first one is live
    scores = scores.view(-1)
    finished: list[list[tuple[float, list[int], float]]] = [[] for _ in range(n)]
    done = [False] * n
    alive = list(range(n))  # the sentence of each group of k rows, in row order
    t = 0
    while alive and not all(done):
        logits = model.decode(tokens[:, -1:], memory, src_pad, cache=cache)
        lprobs = torch.log_softmax(logits[:, -1].float(), dim=-1)
        lprobs[:, PAD] = lprobs[:, BOS] = -math.inf
        at_limit = limit <= t + 1
        eos_col = lprobs[:, EOS].clone()
        lprobs[at_limit] = -math.inf
        lprobs[at_limit, EOS] = eos_col[at_limit]
        t += 1
        m, vocab = len(alive), lprobs.size(1)
        total = (scores[:, None] + lprobs.double()).view(m, k * vocab)
        cand, idx = total.topk(2 * k, dim=1)
        beam, tok = idx // vocab, idx % vocab
        next_beam, next_tok, next_score, keep = [], [], [], []
        cand_l, beam_l, tok_l, lim_l = cand.tolist(), beam.tolist(), tok.tolist(), at_limit.view(m, k)[:, 0].tolist()
        for g, i in enumerate(alive):
            rows: list[tuple[int, int, float]] = []
            for j in range(2 * k):
                s, r, w = cand_l[g][j], g * k + beam_l[g][j], tok_l[g][j]
                if w == EOS:
                    if j < k and s > -math.inf and not done[i] and len(finished[i]) < k:
                        finished[i].append((s / ((5.0 + t) / 6.0) ** alpha, tokens[r, 1:].tolist(), s))
                elif len(rows) < k:
                    rows.append((r, w, s))
            while len(rows) < k:  # a sentence past its limit: keep its rows, they are ignored
                rows.append((g * k, EOS, -math.inf))
            done[i] = done[i] or lim_l[g] or len(finished[i]) >= k
            if drop_finished and done[i]:
                continue
            keep.append(i)
            for r, w, s in rows:
                next_beam.append(r), next_tok.append(w), next_score.append(s)
        if not keep:
            break
        index = torch.tensor(next_beam, device=dev)
        tokens = torch.cat([tokens[index], torch.tensor(next_tok, device=dev)[:, None]], dim=1)
        scores = torch.tensor(next_score, dtype=torch.float64, device=dev)
        shrink = len(keep) < len(alive)
        model.reorder_cache(cache, index, include_cross=shrink)  # every kept sentence keeps its k rows
        if shrink:
            memory, src_pad, limit = memory[index], src_pad[index], limit[index]
        alive = keep
    out = []
    for hyps in finished:
        best = max(hyps, key=lambda h: h[0])  # max keeps the first of equal scores, as a stable sort does
        out.append((best[1], best[0]))
    return out
