"""The shared source-target subword vocabulary: one SentencePiece BPE model (section 5.1 of the paper).

The paper encodes WMT 2014 en-de with byte-pair encoding and a shared vocabulary of ~37,000 tokens.
ablate trains one SentencePiece BPE model on a sample of both sides of the training split, fully in
memory, with fixed settings so the same sentences always give the byte-identical model.

Special ids are fixed in every model ablate trains (ablate/data/special.py): PAD=0, UNK=1, BOS=2,
EOS=3. Normalization is ``identity`` so that decoding gives back the raw text
(up to collapsed whitespace) and BLEU is computed against the untouched references.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

from ablate.data.errors import DataError
from ablate.data.special import BOS_ID, EOS_ID, PAD_ID, SPECIAL_IDS, UNK_ID

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "SPECIAL_IDS", "UNK_ID", "Tokenizer", "train_tokenizer"]

# Fixed, machine-independent settings: SentencePiece is byte-identical for the same inputs and
# thread count (measured: not for another thread count), so the thread count is a constant, never os.cpu_count().
TRAIN_THREADS = 4
TRAINER_SETTINGS = {
    "model_type": "bpe",
    "pad_id": PAD_ID,
    "unk_id": UNK_ID,
    "bos_id": BOS_ID,
    "eos_id": EOS_ID,
    "character_coverage": 1.0,
    "normalization_rule_name": "identity",
    "num_threads": TRAIN_THREADS,
    "max_sentence_length": 1 << 14,  # bytes; longer sentences are skipped by the trainer, not fatal
    "shuffle_input_sentence": False,  # ablate samples itself (seeded), so the order is part of the key
    "minloglevel": 2,
}

_TOO_HIGH = re.compile(r"Vocabulary size too high \((\d+)\).*<= (\d+)")


def train_tokenizer(sentences: Iterable[str], vocab_size: int, source: str = "train split") -> bytes:
    """Train a BPE model on ``sentences`` in memory; returns the serialized model.

    A vocabulary too large for the corpus becomes a :class:`DataError` suggesting a value that fits.
    """
    writer = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=writer, vocab_size=vocab_size, **TRAINER_SETTINGS
        )
    except RuntimeError as exc:
        msg = str(exc)
        m = _TOO_HIGH.search(msg)
        if m:
            raise DataError(
                f"data.vocab_size: {m.group(1)} is too large for the {source} (SentencePiece can build at most "
                f"{m.group(2)} pieces from it); set data.vocab_size={m.group(2)} or less"
            ) from None
        raise DataError(
            f"data.vocab_size={vocab_size}: SentencePiece failed on the {source}: {msg.splitlines()[-1]}"
        ) from None
    return writer.getvalue()


class Tokenizer:
    """Encode text to subword ids (no BOS/EOS added) and decode ids back to text (specials dropped)."""

    def __init__(self, model: bytes | str | Path) -> None:
        proto = model if isinstance(model, bytes) else Path(model).read_bytes()
        self._sp = spm.SentencePieceProcessor(model_proto=proto)
        self.model_proto = proto
        ids = (self._sp.pad_id(), self._sp.unk_id(), self._sp.bos_id(), self._sp.eos_id())
        if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise DataError(
                f"{model if not isinstance(model, bytes) else 'tokenizer'}: special ids {ids} are not "
                f"(PAD, UNK, BOS, EOS) = (0, 1, 2, 3); prepare the data again with ablate"
            )

    @property
    def vocab_size(self) -> int:
        return int(self._sp.get_piece_size())

    def encode(self, text: str) -> list[int]:
        return list(self._sp.encode(text))

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(ids) for ids in self._sp.encode(list(texts))]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._sp.decode([int(i) for i in ids if int(i) not in SPECIAL_IDS or int(i) == UNK_ID]))

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]

    def id_to_piece(self, i: int) -> str:
        return str(self._sp.id_to_piece(int(i)))
