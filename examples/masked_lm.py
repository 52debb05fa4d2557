"""A third kind of model in one file: an encoder-only masked language model (BERT's objective, Devlin et
al. 2019, at toy scale), registered as the family ``masked`` without touching ablate.

A sweep file lists this module under ``imports:`` and sets ``model.arch: masked``; every slot variant,
the sweep, seeds, store and report work on it as on the built-in families (examples/masked-lm-sweep.yaml).

- Model: the translator's encoder layers over one token stream (bidirectional self-attention, every slot
  of the ``model`` section), the embedding tied to the output projection.
- Data: the corpus's target side as one stream cut into blocks of ``data.block_size`` (ablate's language
  model blocks); in each block 15% of the positions (at least one) are replaced by a mask token, the
  others are not scored. Which positions are masked depends only on the block's index and a seed: the
  trial's seed for training blocks, a fixed one for dev and test, so two rows of a sweep are scored on
  the very same masked positions and their difference pairs block for block.
- Scores: dev and test perplexity over the masked positions (``val/ppl``); the report's bootstrap
  resamples dev blocks, each weighted by its masked positions.

The mask token is the BOS id: a block of the stream never holds one, so it is free (a real masked LM
adds a [MASK] piece to its vocabulary).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ablate.config.size import model_slots, stack_params
from ablate.data.lm_blocks import Blocks, split_blocks, whole_blocks
from ablate.data.lm_datamodule import LanguageModelDataModule
from ablate.data.special import BOS_ID, PAD_ID
from ablate.eval.nll import corpus_nll
from ablate.family import FAMILIES, BatchCost, ModelFamily
from ablate.model.transformer import EncoderLayer

MASK_ID = BOS_ID  # never inside a block of the stream (see the module docstring)
MASK_RATE = 0.15  # BERT's share of positions predicted
EVAL_SEED = 20190611  # dev/test masks: the same for every row and seed of a sweep


def masked_positions(index: int, length: int, seed: int) -> np.ndarray:
    """Which of a block's ``length`` input positions are masked: a function of (seed, block index) only."""
    rng = np.random.default_rng([seed, index])
    masked = rng.random(length) < MASK_RATE
    if not masked.any():  # every block predicts something
        masked[int(rng.integers(length))] = True
    return masked


def masked_batch(blocks: Blocks, indices: list[int] | np.ndarray, seed: int) -> dict[str, Tensor]:
    """Blocks ``indices`` as a batch: ``tgt_in`` with masked positions replaced by the mask token, ``tgt_out``
    the original token there and padding (not scored) elsewhere."""
    index = np.asarray(indices, np.int64)
    tokens = blocks.take(index)[:, :-1]  # a block's first L tokens (its last only continues the stream)
    masks = np.stack([masked_positions(int(i), tokens.shape[1], seed) for i in index])
    inputs = np.where(masks, MASK_ID, tokens)
    targets = np.where(masks, tokens, PAD_ID)
    return {"tgt_in": torch.from_numpy(inputs), "tgt_out": torch.from_numpy(targets), "index": torch.from_numpy(index)}


class _MaskedCollate:
    """Picklable: a list of block indices -> a masked batch."""

    def __init__(self, blocks: Blocks, seed: int) -> None:
        self.blocks, self.seed = blocks, seed

    def __call__(self, indices: list[int]) -> dict[str, Tensor]:
        return masked_batch(self.blocks, indices, self.seed)


class MaskedDataModule(LanguageModelDataModule):
    """ablate's language-model blocks, each batch masked (training: the trial's seed; dev, test: EVAL_SEED)."""

    def _rows(self, split: str, train: bool) -> tuple[Any, Any]:
        dataset, _ = super()._rows(split, train)
        seed = self.seed if split == self.train_split else EVAL_SEED
        return dataset, _MaskedCollate(self.blocks(split), seed)


class MaskedLM(nn.Module):
    """[B, T] token ids (some masked) -> logits [B, T, V] at every position, from bidirectional layers."""

    def __init__(
        self,
        embed: nn.Embedding,
        positional: nn.Module,
        layers: list[nn.Module],
        norm: nn.Module | None,
        dropout: float,
        pad_id: int,
    ) -> None:
        super().__init__()
        self.embed, self.positional = embed, positional
        self.layers = nn.ModuleList(layers)
        self.norm = norm
        self.dropout = nn.Dropout(dropout)
        self.scale = math.sqrt(embed.embedding_dim)
        self.pad_id = pad_id

    @property
    def output_weight(self) -> Tensor:
        return self.embed.weight  # tied

    @staticmethod
    def batch_inputs(batch: Mapping[str, Tensor]) -> tuple[Tensor, ...]:
        return (batch["tgt_in"],)

    def features(self, tokens: Tensor) -> Tensor:
        t = tokens.size(1)
        bias = self.positional.attn_bias(t, t, 0)  # ALiBi / T5 biases; None otherwise: every key visible
        x = self.dropout(self.positional(self.embed(tokens) * self.scale, 0))
        for layer in self.layers:
            x = layer(x, bias, self.positional)
        return x if self.norm is None else self.norm(x)

    def forward(self, tokens: Tensor) -> Tensor:
        return torch.nn.functional.linear(self.features(tokens), self.output_weight)


def _dev_batches(blocks: Any, max_tokens: int) -> Iterator[dict[str, Tensor]]:
    per_batch = max(1, int(max_tokens) // blocks.length)
    for start in range(0, len(blocks), per_batch):
        yield masked_batch(blocks, np.arange(start, min(start + per_batch, len(blocks))), EVAL_SEED)


def _split_nll(model: Any, prepared: Any, split: str, cfg: Any) -> Any:
    blocks = split_blocks(prepared, int(cfg.data.block_size), split)
    return corpus_nll(model, _dev_batches(blocks, int(cfg.data.max_tokens)), len(blocks))


class MaskedLMFamily(ModelFamily):
    """An encoder-only masked language model (an example plugin): PPL over masked positions of blocks."""

    name = "masked"
    epoch_unit = resamples = "blocks"
    has_bleu = False
    score_label = "PPL over masked tokens"
    pairing = "seed-matched pairs pooled (row seed s vs base seed s; the same dev blocks and masked positions)"

    def check(self, c: Any) -> None:
        for key in ("model.n_enc_layers", "model.n_dec_layers", "eval.lengths"):
            if c.get(key) is not None:
                c.fail(
                    key, "means nothing for model.arch=masked (one bidirectional stack, one block length); remove it"
                )
        if not isinstance(c.get("data.block_size"), int) or c.get("data.block_size") < 2:
            c.fail("data.block_size", f"must be an integer >= 2, got {c.get('data.block_size')!r}")

    def check_lengths(self, c: Any) -> None:
        if c.cfg.model.max_positions < c.cfg.data.block_size:
            c.fail("model.max_positions", "cannot hold a block of data.block_size; raise it", "data.block_size")

    def layers(self, m: Any) -> tuple[int, int]:
        return m.n_layers, 0

    def num_params(self, m: Any, slots: Mapping[str, Any], vocab_size: int) -> int:
        stacks = ((slots["enc_residual"], m.n_layers, 2, 1),)
        return vocab_size * m.d_model + slots["src_positional"].num_params() + stack_params(slots, stacks)

    def train_flops(self, m: Any, parts: Any, vocab_size: int, src_tokens: float, tgt_tokens: float) -> float:
        token = parts.q_o + parts.k_v + parts.scores(parts.tgt_len) + parts.ffn  # every key is visible
        return 3.0 * tgt_tokens * (m.n_layers * token + 2.0 * m.d_model * vocab_size * MASK_RATE)

    def batch_cost(self, data: Mapping[str, Any]) -> BatchCost:
        block = int(data["block_size"])
        return BatchCost(max(1, int(data["max_tokens"]) // block) * block, 0.0, block, exact=True)

    def epoch_stats(self, data: Mapping[str, Any], prepared: Any) -> Any:
        return prepared.epoch_stats(int(data["max_tokens"]), block=int(data["block_size"]))

    def datamodule(self, cfg: Any, prepared: Any) -> Any:
        return MaskedDataModule.for_config(cfg, prepared)

    def nll_tokens(self, config: Mapping[str, Any], data: Any, split: str) -> list[int]:
        block = int(config["data"]["block_size"])
        n = sum(whole_blocks(tokens, block) for tokens in data.part_tokens(split))
        return [int(masked_positions(i, block, EVAL_SEED).sum()) for i in range(n)]

    def build(self, m: Any, vocab_size: int, pad_id: int) -> Any:
        slots = model_slots(m)
        norm, res = slots["norm"], slots["enc_residual"]

        def layer() -> nn.Module:
            residuals = [res.build(norms=[norm.build() for _ in range(res.cls.norms_per_sublayer)]) for _ in (0, 1)]
            return EncoderLayer(slots["attention"].build(), slots["ffn"].build(), residuals)

        embed = nn.Embedding(vocab_size, m.d_model, padding_idx=pad_id)
        nn.init.normal_(embed.weight, std=m.d_model**-0.5)
        final = norm.build() if res.cls.final_norm else None
        layers = [layer() for _ in range(m.n_layers)]
        return MaskedLM(embed, slots["src_positional"].build(), layers, final, m.dropout, pad_id)

    def final_scores(self, cfg: Any, system: Any, prepared: Any, rd: Any, step: int) -> tuple[dict[str, Any], str, int]:
        from ablate.train.final import choose_final_weights

        valid = str(cfg.data.valid_split)
        used, used_step, dev = choose_final_weights(
            system, rd, lambda model: _split_nll(model, prepared, valid, cfg), step
        )
        rd.write_sentence_nll(valid, dev.sentences)  # the report's bootstrap resamples these blocks
        metrics = {"val/nll": dev.nll, "val/ppl": dev.ppl}
        if cfg.eval.test:
            test = _split_nll(system.model, prepared, str(cfg.data.test_split), cfg)
            metrics.update({"test/nll": test.nll, "test/ppl": test.ppl})
        return metrics, used, used_step

    def eval_scores(
        self, cfg: Any, model: Any, prepared: Any, split: str, prefix: str, options: Any
    ) -> tuple[dict[str, Any], list[str]]:
        nll = _split_nll(model, prepared, split, cfg)
        return {f"{prefix}/nll": nll.nll, f"{prefix}/ppl": nll.ppl}, []


FAMILIES.register("masked")(MaskedLMFamily())
