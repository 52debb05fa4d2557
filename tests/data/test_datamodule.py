"""CorpusDataModule: batch layout, loaders, and mid-epoch resume through a real Lightning Trainer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ablate.data.datamodule import CorpusDataModule
from ablate.data.errors import DataError
from ablate.data.prepare import prepare_data
from ablate.data.tokenizer import BOS_ID, EOS_ID, PAD_ID


@pytest.fixture
def prepared(data_cfg):
    return prepare_data(data_cfg(), progress=False)


def test_batches_follow_the_contract(prepared) -> None:
    dm = CorpusDataModule(prepared.dir, max_tokens=1500, seed=1)
    dm.setup("fit")
    shard = prepared.split("train")
    seen = []
    for batch in dm.train_dataloader():
        assert set(batch) == {"src", "tgt_in", "tgt_out", "index"}
        assert all(t.dtype == torch.long for t in batch.values())
        B, S = batch["src"].shape
        assert batch["tgt_in"].shape == batch["tgt_out"].shape and batch["tgt_in"].shape[0] == B
        assert B * max(S, batch["tgt_in"].shape[1]) <= 1500
        assert (batch["tgt_in"][:, 0] == BOS_ID).all()
        for r, i in enumerate(batch["index"].tolist()):
            n, m = int(shard.src_lengths[i]), int(shard.tgt_lengths[i])
            assert batch["src"][r, :n].tolist() == shard.src(i).tolist() and batch["src"][r, n] == EOS_ID
            assert (batch["src"][r, n + 1 :] == PAD_ID).all()
            assert batch["tgt_out"][r, : m + 1].tolist() == [*shard.tgt(i).tolist(), EOS_ID]
            assert batch["tgt_in"][r, 1 : m + 1].tolist() == shard.tgt(i).tolist()
        seen += batch["index"].tolist()
    assert sorted(seen) == list(range(len(shard)))
    val = [i for b in dm.val_dataloader() for i in b["index"].tolist()]
    assert sorted(val) == list(range(prepared.split("valid").n))
    assert val == [i for b in dm.val_dataloader() for i in b["index"].tolist()]
    test_refs = prepared.raw("test", "tgt")
    first = next(iter(dm.test_dataloader()))
    i = int(first["index"][0])
    assert prepared.tokenizer.decode(first["tgt_out"][0].tolist()) == test_refs[i]


def test_unknown_split_fails_at_construction(prepared) -> None:
    with pytest.raises(DataError, match=r"split 'dev' is not in .* \(has: train, valid, test\)"):
        CorpusDataModule(prepared.dir, max_tokens=1500, seed=1, valid_split="dev")


def test_state_dict_round_trip_without_trainer(prepared) -> None:
    dm = CorpusDataModule(prepared.dir, max_tokens=1500, seed=4)
    dm.setup("fit")
    reference = [b["index"].tolist() for b in CorpusDataModule(prepared.dir, 1500, 4).train_dataloader()]
    it = iter(dm.train_dataloader())
    head = [next(it)["index"].tolist() for _ in range(3)]
    state = dm.state_dict()
    assert state == {"epoch": 0, "position": 3}
    fresh = CorpusDataModule(prepared.dir, max_tokens=1500, seed=4)
    fresh.load_state_dict(state)  # before setup, as Lightning does on restore
    tail = [b["index"].tolist() for b in fresh.train_dataloader()]
    assert head + tail == reference


def test_ddp_rank_and_world_size_come_from_the_trainer(prepared) -> None:
    from types import SimpleNamespace

    per_rank = []
    for rank in range(2):
        dm = CorpusDataModule(prepared.dir, max_tokens=1500, seed=1)
        dm.trainer = SimpleNamespace(global_rank=rank, world_size=2, training=True)
        dm.setup("fit")
        per_rank.append([i for b in dm.train_dataloader() for i in b["index"].tolist()])
        assert len(dm.train_dataloader()) == dm.train_sampler.num_batches() // 2
    assert per_rank[0] and not set(per_rank[0]) & set(per_rank[1])


class _Recorder:
    """Builds a tiny LightningModule that records the batches it trains on."""

    @staticmethod
    def make(store: list[list[int]]):
        import lightning.pytorch as pl

        class Tiny(pl.LightningModule):
            def __init__(self) -> None:
                super().__init__()
                self.w = torch.nn.Parameter(torch.zeros(1))

            def training_step(self, batch, batch_idx):
                store.append(batch["index"].tolist())
                return (self.w * batch["src"].float().mean()).sum()

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

        return Tiny()


@pytest.mark.parametrize("workers", [0, 2])
def test_lightning_resume_mid_epoch_skips_consumed_batches(
    prepared, tmp_path: Path, recwarn, workers: int, cpu_trainer
) -> None:
    """Batches prefetched by worker processes are not counted as consumed."""
    import lightning.pytorch as pl

    def trainer(max_steps: int) -> pl.Trainer:
        return cpu_trainer(
            max_steps=max_steps,
            use_distributed_sampler=False,
            limit_val_batches=0,
            default_root_dir=tmp_path,
        )

    reference = [b["index"].tolist() for b in CorpusDataModule(prepared.dir, 1500, 9).train_dataloader()]
    first: list[list[int]] = []
    t1 = trainer(4)
    t1.fit(_Recorder.make(first), datamodule=CorpusDataModule(prepared.dir, 1500, 9, num_workers=workers))
    t1.save_checkpoint(tmp_path / "mid.ckpt")
    second: list[list[int]] = []
    t2 = trainer(9)
    dm2 = CorpusDataModule(prepared.dir, 1500, 9, num_workers=workers)
    t2.fit(_Recorder.make(second), datamodule=dm2, ckpt_path=tmp_path / "mid.ckpt")
    assert first == reference[:4]
    assert second == reference[4:9]  # continued, no batch repeated or skipped
    assert not [w for w in recwarn if "not resumable" in str(w.message)]
