"""The shared SentencePiece tokenizer: fixed special ids, determinism, round trip, clear errors."""

from __future__ import annotations

import pytest

from ablate.data import builtin
from ablate.data.errors import DataError
from ablate.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer, train_tokenizer


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    opts = builtin.Options(n_train=2000)
    return [s for pair in builtin.generate(opts, "train") for s in pair]


def test_special_ids_are_the_contract(sentences: list[str]) -> None:
    tok = Tokenizer(train_tokenizer(sentences, 400))
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    assert [tok.id_to_piece(i) for i in range(4)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tok.vocab_size == 400


def test_training_is_deterministic(sentences: list[str]) -> None:
    assert train_tokenizer(sentences, 400) == train_tokenizer(list(sentences), 400)
    assert train_tokenizer(sentences, 400) != train_tokenizer(sentences, 450)


def test_round_trip_and_no_specials_added(sentences: list[str]) -> None:
    tok = Tokenizer(train_tokenizer(sentences, 500))
    for text in sentences[:300]:
        ids = tok.encode(text)
        assert ids and not {PAD_ID, BOS_ID, EOS_ID} & set(ids)
        assert tok.decode(ids) == text
    batch = sentences[:20]
    assert tok.decode_batch(tok.encode_batch(batch)) == batch
    # BOS / EOS / PAD around the ids are dropped by decode (hypotheses come back padded)
    assert tok.decode([BOS_ID, *tok.encode(batch[0]), EOS_ID, PAD_ID, PAD_ID]) == batch[0]


def test_unseen_characters_become_unk_not_an_error(sentences: list[str]) -> None:
    tok = Tokenizer(train_tokenizer(sentences, 400))
    assert UNK_ID in tok.encode("Ωmega")


def test_vocab_too_large_suggests_a_value(sentences: list[str]) -> None:
    with pytest.raises(DataError, match=r"data.vocab_size: 50000 is too large .* set data.vocab_size=\d+ or less") as e:
        train_tokenizer(sentences[:200], 50_000, source="train split of test")
    assert "\n" not in str(e.value)
