"""A language model's data: the target side as one stream, documents separated by EOS, cut into blocks with
every token predicted once; batches of one static shape through the translator's batch sampler."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ablate.data.errors import DataError
from ablate.data.lm_blocks import blocks, token_stream
from ablate.data.special import EOS_ID


def _shard(sentences: list[list[int]]) -> SimpleNamespace:
    ids = np.asarray([t for s in sentences for t in s], np.uint16)
    return SimpleNamespace(tgt_ids=ids, tgt_off=np.cumsum([0] + [len(s) for s in sentences]))


def test_documents_are_separated_by_eos_in_file_order() -> None:
    stream = token_stream(_shard([[5, 6], [7], [8, 9, 10]]))
    assert stream.tolist() == [5, 6, EOS_ID, 7, EOS_ID, 8, 9, 10, EOS_ID]


@pytest.mark.parametrize("length", [1, 2, 3, 7, 8])
def test_no_token_is_lost_or_repeated(length: int) -> None:
    """Every target is the next token of its input; together the targets are the stream after its first
    token, each once, up to the left-out tail."""
    rng = np.random.default_rng(length)
    stream = rng.integers(4, 50, size=37).astype(np.int64)
    b = blocks(stream, length)
    rows = b.take(range(len(b)))
    inputs, targets = rows[:, :-1], rows[:, 1:]
    assert rows.shape == (len(b), length + 1)
    assert np.array_equal(targets.reshape(-1), stream[1 : 1 + b.targets])
    assert np.array_equal(inputs.reshape(-1), stream[: b.targets])
    assert b.targets + b.left_out == len(stream) - 1 and b.left_out < length


def test_a_block_longer_than_the_split_is_one_line() -> None:
    with pytest.raises(DataError, match="data split 'valid': 9 tokens cannot hold one block of 64") as exc:
        blocks(np.arange(9), 64, "data split 'valid'")
    assert "\n" not in str(exc.value)
    with pytest.raises(DataError, match="0 tokens cannot hold"):
        blocks(np.zeros(0, np.int64), 4)


def test_the_data_module_gives_fixed_shape_batches_of_the_stream(data_cfg, tmp_path) -> None:
    from ablate.data.lm_datamodule import LanguageModelDataModule
    from ablate.data.prepare import prepare_data

    prepared = prepare_data(data_cfg())
    dm = LanguageModelDataModule(prepared.dir, block_size=16, max_tokens=64, seed=1)
    batches = list(dm.train_dataloader())
    assert {tuple(b["tgt_in"].shape) for b in batches} == {(4, 16)}
    assert all(bool((b["tgt_in"][:, 1:] == b["tgt_out"][:, :-1]).all()) for b in batches)
    seen = [i for b in batches for i in b["index"].tolist()]
    assert len(set(seen)) == len(seen) > len(dm.blocks("train")) - 4  # one epoch: each block once, less a short batch
    stream = token_stream(prepared.split("train"))
    assert int((stream == EOS_ID).sum()) == len(prepared.split("train"))  # one EOS per document


def test_a_language_model_keeps_every_document_longer_than_max_len(cache, tmp_path) -> None:
    """A translator's pair filter (data.max_len) drops long train pairs when the corpus is prepared; a
    language model reads the same folder and must cut a long document across blocks, never drop it."""
    from ablate.config import load_config, to_dict
    from ablate.data.lookup import floor_of
    from ablate.data.prepare import prepare_data
    from ablate.data.unigram import unigram_ppl_from_arrays
    from ablate.family import family_of

    words = "the cat sat on a mat and a dog ran to the red house".split()
    docs = [" ".join(words[(i + k) % len(words)] for k in range(6 + (i % 5) * 12)) for i in range(300)]
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("".join(f"{d}\n" for d in docs), encoding="utf-8")
    args = "{train: {text: train.txt}, valid: {text: valid.txt}, test: {text: test.txt}}"
    cfg = load_config(
        "experiments/lm-mini.yaml",
        overrides=[
            f"data.root={tmp_path}",
            "data.corpus=textfiles",
            f"data.args={args}",
            "data.vocab_size=60",
            "data.max_len=20",
        ],
    )
    prepared = prepare_data(cfg.data, progress=False)
    assert prepared.split("train").dropped > 0  # the translator's view leaves the long lines out
    train = np.concatenate([np.asarray(p[0 : len(p)], np.int64) for p in prepared.token_parts("train")])
    valid = np.concatenate([np.asarray(p[0 : len(p)], np.int64) for p in prepared.token_parts("valid")])
    assert int((train == EOS_ID).sum()) == len(docs)  # every document, long ones included
    assert np.array_equal(train, valid)  # the same text as the split nothing is dropped from
    assert prepared.part_tokens("train") == [len(train)]
    assert prepared.stream_chars("train") == prepared.stream_chars("valid")
    blocks_of = prepared.epoch_stats(int(cfg.data.max_tokens), block=int(cfg.data.block_size)).pairs
    assert blocks_of == (len(train) - 1) // int(cfg.data.block_size)
    # the table's floor is a unigram model of what the language model trains on: the whole text
    floor = family_of(cfg).unigram_floor(prepared, "valid")
    assert floor == pytest.approx(unigram_ppl_from_arrays(train, valid, prepared.vocab_size, 0, 0, None))
    assert floor != pytest.approx(prepared.unigram_floor("valid"))  # the kept lines' floor (a translator's)
    assert floor_of(to_dict(cfg), family_of(cfg).unigram_floor) == floor  # the adaptive seeds' gate
