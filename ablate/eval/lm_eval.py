"""A language model's final numbers: dev and test perplexity per token at each context length, and bits per
character.

- At each length l of ``eval.lengths`` (default: the training block, L) the split's token stream is cut
  into non-overlapping blocks of l (ablate/data/lm_blocks.py) and every token in them is predicted once
  with up to l - 1 tokens of context: ``val/ppl@l`` (Press et al. 2022 evaluate ALiBi at L, 2L, ... the
  same way). ``val/nll`` and ``val/ppl`` are those at L, the figures the table and the seeds compare.
- A length the model cannot reach (a positional encoding with a fixed table, as ``learned``, past
  ``model.max_positions``), or one longer than the split holds, is not evaluated: its metric is None and
  ``reach@l`` says why, so the table reports it, nothing crashes and the other lengths keep their figures.
- ``val/bpc``: bits per character at L, comparable across vocabularies: the NLL per token in bits times
  the split's tokens per character (the raw target text's characters, a line break counted for each EOS).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from ablate.data.lm_blocks import Blocks, block_batch, length_problem, split_blocks
from ablate.eval.nll import CHUNK_ROWS, SplitNLL, corpus_nll


def lm_batches(blocks: Blocks, max_tokens: int) -> Iterator[dict[str, torch.Tensor]]:
    """The blocks in order, ``max_tokens // length`` (at least one) a batch."""
    per_batch = max(1, int(max_tokens) // blocks.length)
    for start in range(0, len(blocks), per_batch):
        yield block_batch(blocks, np.arange(start, min(start + per_batch, len(blocks))))


def lm_nll(model: Any, data: Any, length: int, max_tokens: int, split: str, device: Any = None) -> SplitNLL:
    """Corpus NLL of a split's stream at context ``length`` (the per-"sentence" values are per block);
    ``data``: the prepared data (its ``token_parts``)."""
    blocks = split_blocks(data, length, split)
    return corpus_nll(model, lm_batches(blocks, max_tokens), len(blocks), device, chunk=CHUNK_ROWS)


def unreachable(model: Any, length: int, max_positions: int) -> str | None:
    """Why ``model`` cannot be evaluated at ``length`` (an encoding that cannot go past ``max_positions``)."""
    from ablate.model.positional import fixed_positions

    fixed = fixed_positions(model)
    if fixed and length > int(max_positions):
        return f"cannot reach {length} positions: {', '.join(fixed)} stops at model.max_positions={max_positions}"
    return None


def tokens_per_char(prepared: Any, split: str) -> float | None:
    """The split's target stream tokens per raw character (a line break per EOS); None without the text."""
    chars = prepared.stream_chars(split)
    return None if chars is None else sum(prepared.part_tokens(split)) / max(chars, 1)


def lm_scores(
    model: Any, prepared: Any, splits: Sequence[tuple[str, str]], cfg: Any, run_dir: Any = None
) -> dict[str, Any]:
    """``{prefix}/nll``, ``/ppl``, ``/bpc`` at the training block and ``/ppl@l`` at each of ``eval.lengths``,
    for each (prefix, split). With ``run_dir`` (a RunDir), each split's summed NLL per block at L goes to
    ``outputs/<split>.nll``, one line a block: the report's paired bootstrap resamples those blocks, as it
    resamples a translator's dev sentences (every block predicts L tokens)."""
    block, max_tokens = int(cfg.data.block_size), int(cfg.data.max_tokens)
    lengths, max_positions = list(cfg.eval.lengths or [block]), int(cfg.model.max_positions)
    out: dict[str, Any] = {}
    device = next(model.parameters()).device
    for prefix, split in splits:
        for length in sorted({int(block), *map(int, lengths)}):
            why = unreachable(model, length, max_positions) or length_problem(prepared, split, length)
            if why is not None:
                out[f"{prefix}/ppl@{length}"], out[f"{prefix}/reach@{length}"] = None, why
                continue
            nll = lm_nll(model, prepared, length, max_tokens, split, device)
            out[f"{prefix}/ppl@{length}"] = nll.ppl
            if length == int(block):
                out[f"{prefix}/nll"], out[f"{prefix}/ppl"] = nll.nll, nll.ppl
                per_char = tokens_per_char(prepared, split)
                out[f"{prefix}/bpc"] = None if per_char is None else nll.nll / math.log(2) * per_char
                if run_dir is not None:
                    run_dir.write_sentence_nll(split, nll.sentences)
    return out
