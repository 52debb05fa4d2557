"""``LanguageModelDataModule``: a prepared folder's target side as fixed-length blocks (model.arch: decoder).

The translator's data module with blocks for rows (ablate/data/lm_blocks.py): the same batch sampler
(every block one length, so a batch is ``max_tokens // block_size`` blocks of one static shape; shuffled
per epoch from the seed, split over DDP ranks, resumed mid-epoch from a checkpoint), batches
``{"tgt_in", "tgt_out", "index"}`` without a source: the training step and the validation NLL are the
translator's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ablate.data.datamodule import CorpusDataModule
from ablate.data.lm_blocks import Blocks, block_batch, split_blocks


class _BlockRows(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return index


class _BlockCollate:
    """Picklable: a list of block indices -> the batch (inputs, next tokens)."""

    def __init__(self, blocks: Blocks) -> None:
        self.blocks = blocks

    def __call__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        return block_batch(self.blocks, indices)


class LanguageModelDataModule(CorpusDataModule):
    """Batches ``{"tgt_in", "tgt_out", "index"}`` [B, block_size] of a prepared folder's target stream."""

    def __init__(self, prepared_dir: str | Path, block_size: int, max_tokens: int, seed: int, **kwargs: Any) -> None:
        super().__init__(prepared_dir, max(int(max_tokens), int(block_size)), seed, **kwargs)
        self.block_size = int(block_size)
        self.whole_batches = True
        self._blocks: dict[str, Blocks] = {}

    @classmethod
    def for_config(cls, cfg: Any, prepared: Any) -> LanguageModelDataModule:
        """The data module of a trial's config (``data.block_size``, ``data.max_tokens``, its seed)."""
        data = cfg.data
        return cls(
            prepared,
            data.block_size,
            data.max_tokens,
            cfg.train.seed,
            valid_split=data.valid_split,
            test_split=data.test_split,
            num_workers=data.num_workers,
        )

    def blocks(self, split: str) -> Blocks:
        if split not in self._blocks:
            self._blocks[split] = split_blocks(self.prepared, self.block_size, split)
        return self._blocks[split]

    def _lengths(self, split: str) -> tuple[Any, Any]:
        lengths = np.full(len(self.blocks(split)), self.block_size - 1, np.int64)  # the sampler adds one
        return lengths, lengths

    def _rows(self, split: str, train: bool) -> tuple[Dataset, Any]:
        blocks = self.blocks(split)
        return _BlockRows(len(blocks)), _BlockCollate(blocks)
