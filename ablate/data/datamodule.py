"""``CorpusDataModule``: a prepared folder -> train / val / test DataLoaders (Lightning).

The only data module that imports Lightning (5-6 s), so dry runs and ``ablate data prepare`` stay light.

Training batches come from :class:`~ablate.data.batching.TokenBucketBatchSampler` (``max_tokens`` per
batch counting padding, order shuffled per epoch from ``seed``). Under DDP each rank reads its own
batches: rank and world size come from the trainer. Because the sampler is custom, the Trainer must be
built with ``use_distributed_sampler=False`` (Lightning would otherwise try to replace it).

Resuming mid-epoch: Lightning stores ``state_dict()`` of the data module in every checkpoint and gives
it back through ``load_state_dict``. The state is the epoch and the number of training batches the
loop has *consumed* (counted in ``on_before_batch_transfer``, so batches prefetched by workers are not
counted as seen); the next training epoch skips them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from torch.utils.data import DataLoader, Dataset

from ablate.data.batching import TokenBucketBatchSampler, collate
from ablate.data.prepare import Prepared
from ablate.data.shards import Shard


class _RowDataset(Dataset):
    """Rows of a shard, fetched a whole batch at a time (the batch sampler yields index lists)."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    def __len__(self) -> int:
        return len(self.shard)

    def __getitem__(self, index: int) -> int:
        return index


class _Collate:
    """Picklable collate function (DataLoader workers may be spawned)."""

    def __init__(self, shard: Shard, **bucketing: Any) -> None:
        self.shard, self.bucketing = shard, bucketing

    def __call__(self, indices: list[int]) -> dict[str, Any]:
        return collate(self.shard, indices, **self.bucketing)


class _ResumableLoader(DataLoader):
    """The training loader; Lightning saves and restores loaders that have state_dict / load_state_dict
    (and warns about mid-epoch checkpoints otherwise). The state is the data module's, so restoring it
    twice (module and loader) is harmless."""

    def __init__(self, *args: Any, owner: CorpusDataModule, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owner = owner

    def state_dict(self) -> dict[str, int]:
        return self._owner.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._owner.load_state_dict(state_dict)


class CorpusDataModule(pl.LightningDataModule):
    """Batches ``{"src", "tgt_in", "tgt_out", "index"}`` (long tensors, pad 0) from a prepared folder."""

    def __init__(
        self,
        prepared_dir: str | Path,
        max_tokens: int,
        seed: int,
        valid_split: str = "valid",
        test_split: str = "test",
        num_workers: int = 0,
        train_split: str = "train",
        bucket_ratio: float = 0.0,
        batch_multiple: int = 1,
    ) -> None:
        super().__init__()
        # a prepared folder's path, or data already opened (a token corpus: ablate/data/token_data.py)
        loaded = not isinstance(prepared_dir, (str, Path))
        self.prepared = prepared_dir if loaded else Prepared.load(prepared_dir, max_tokens=max_tokens)
        for split in (train_split, valid_split, test_split):
            self.prepared.split(split)  # an unknown split fails now, with the splits it has
        self.prepared_dir = Path(self.prepared.dir)
        self.max_tokens, self.seed, self.num_workers = int(max_tokens), int(seed), int(num_workers)
        self.train_split, self.valid_split, self.test_split = train_split, valid_split, test_split
        # Training batches only: evaluation keeps its exact shapes (decoding lengths follow the source's).
        self.bucketing = self.prepared.bucketing(bucket_ratio, batch_multiple)
        self.train_sampler: TokenBucketBatchSampler | None = None
        self.whole_batches = False  # a language model's blocks: leave out a short last batch (one static shape)
        self._pending_state: dict[str, int] | None = None
        self._consumed = 0
        self._epoch = 0

    @property
    def vocab_size(self) -> int:
        return self.prepared.vocab_size

    def _rank_world(self) -> tuple[int, int]:
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return 0, 1
        return int(trainer.global_rank), int(trainer.world_size)

    def setup(self, stage: str | None = None) -> None:
        if stage in (None, "fit") and self.train_sampler is None:
            src_lengths, tgt_lengths = self._lengths(self.train_split)
            rank, world = self._rank_world()
            self.train_sampler = TokenBucketBatchSampler(
                src_lengths,
                tgt_lengths,
                self.max_tokens,
                seed=self.seed,
                rank=rank,
                world_size=world,
                whole_batches=self.whole_batches,
                **self.bucketing,
            )
            if self._pending_state is not None:
                self.train_sampler.load_state_dict(self._pending_state)
                self._pending_state = None

    def _padding(self) -> dict[str, Any]:
        """How collate pads a training batch (the bucketing's ladder)."""
        return {"bucket_ratio": self.bucketing["bucket_ratio"], "max_len": self.bucketing["max_len"]}

    def _lengths(self, split: str) -> tuple[Any, Any]:
        """(source, target) lengths of a split's rows, which the batch sampler groups."""
        shard = self.prepared.split(split)
        return shard.src_lengths, shard.tgt_lengths

    def _rows(self, split: str, train: bool) -> tuple[Dataset, Any]:
        """A split's rows and the function that turns a list of their indices into a batch."""
        shard = self.prepared.split(split)
        return _RowDataset(shard), _Collate(shard, **(self._padding() if train else {}))

    def _loader(self, split: str, sampler: TokenBucketBatchSampler, train: bool = False) -> DataLoader:
        rows, collate_fn = self._rows(split, train)
        cls, extra = (_ResumableLoader, {"owner": self}) if train else (DataLoader, {})
        return cls(
            rows,
            batch_sampler=sampler,
            collate_fn=collate_fn,
            num_workers=self.num_workers,
            persistent_workers=False,
            **extra,
        )

    def train_dataloader(self) -> DataLoader:
        if self.train_sampler is None:
            self.setup("fit")
        assert self.train_sampler is not None
        return self._loader(self.train_split, self.train_sampler, train=True)

    def eval_sampler(self, split: str) -> TokenBucketBatchSampler:
        """Deterministic, sorted by source length, every sentence once (on every rank)."""
        src_lengths, tgt_lengths = self._lengths(split)
        return TokenBucketBatchSampler(src_lengths, tgt_lengths, self.max_tokens, shuffle=False)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.valid_split, self.eval_sampler(self.valid_split))

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_split, self.eval_sampler(self.test_split))

    # -- resuming -------------------------------------------------------------------------------
    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.training and self.train_sampler is not None:
            epoch = self.train_sampler.epoch if self.train_sampler.position else self._epoch
            if epoch != self._epoch:
                self._epoch, self._consumed = epoch, 0
            self._consumed += 1
        return batch

    def state_dict(self) -> dict[str, int]:
        """{"epoch", "position"}: training batches consumed in the current epoch (of this rank)."""
        if self.train_sampler is None:
            return dict(self._pending_state or {"epoch": 0, "position": 0})
        if getattr(self, "trainer", None) is None:  # no loop counting: the sampler's own count is exact
            return self.train_sampler.state_dict()
        return {"epoch": self._epoch, "position": self._consumed}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = {"epoch": int(state_dict["epoch"]), "position": int(state_dict["position"])}
        self._epoch, self._consumed = state["epoch"], state["position"]
        if self.train_sampler is None:
            self._pending_state = state
        else:
            self.train_sampler.load_state_dict(state)
