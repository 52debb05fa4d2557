"""The tokenizer `ablate tokenize` encodes with (Hugging Face ``tokenizers``), and the encoding in parallel.

A tokenizer is either loaded from a ``tokenizer.json`` (GPT-2's, or any other) or trained here: a
byte-level BPE, GPT-2's design (its pre-tokenizer regex and 256-byte alphabet, so every text encodes
with no unknown piece), with ``<|endoftext|>`` as its one special token. The document separator is
GPT-2's ``<|endoftext|>`` where the tokenizer has it (id 50256 in GPT-2's), else another common
end-of-text token, else the one ``--eos`` names.

Each document becomes ``[EOS] + its ids``: the separator goes *before* the document, as llm.c's
FineWeb shards have it (nanoGPT's ``train.bin`` puts it after). Shards made here from FineWeb with
GPT-2's tokenizer then lay out the text as the published ones do, so losses read on either compare;
and a block that opens at a document start still sees the separator, the context a text starts from
everywhere else in the stream.

With ``jobs`` above 1 ``tokenizers`` encodes each chunk of documents on that many threads (its rayon
pool, in Rust, outside the GIL) while a reader thread parses the next chunk; chunks come back in input
order and each document's encoding is its own, so the shards do not depend on ``jobs``. Worker
processes, each with its own tokenizer, were measured too and lost: the text and the tokens cross a
process boundary, each process starts and loads the tokenizer, and on 2 cores they spent about 40%
more CPU time a token than the threads did.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from queue import Full, Queue
from typing import Any

import numpy as np

from ablate.data.errors import DataError
from ablate.data.token_files import MAX_UINT16_VOCAB
from ablate.data.tokenize_sources import EXTRA_HINT

BPE_EOS = "<|endoftext|>"  # GPT-2's end of text: the one special token of a BPE trained here
EOS_CANDIDATES = (BPE_EOS, "<|end_of_text|>", "</s>", "<eos>")  # GPT-2, Llama 3, T5/Llama 2, Gemma
MIN_BPE = 257  # the 256 byte pieces and the separator
CHUNK_CHARS = 1 << 20  # characters of text a chunk (about 250k tokens): enough work for every thread
PARALLELISM = "TOKENIZERS_PARALLELISM"  # read by `tokenizers` at each call: "false" keeps it to one thread
RAYON_THREADS = "RAYON_NUM_THREADS"  # the size of the thread pool `tokenizers` encodes a batch on

Encoded = tuple[np.ndarray, np.ndarray]  # (uint16 tokens of a chunk, int64 end offset of each document)


def require_tokenizers() -> Any:
    """The ``tokenizers`` package, or a DataError saying how to install it."""
    try:
        import tokenizers
    except ImportError:
        raise DataError(f"ablate tokenize needs the tokenizers package: {EXTRA_HINT}") from None
    return tokenizers


def load_tokenizer(path: str | Path) -> Any:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json; a DataError (one line) for one that does not parse."""
    path = Path(path)
    tokenizers = require_tokenizers()
    if not path.is_file():
        raise DataError(f"--tokenizer {path}: no such file")
    try:
        tok = tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the Rust side raises a bare Exception for any bad file
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        raise DataError(f"--tokenizer {path}: not a tokenizer.json ({reason})") from None
    check_vocab(tok, f"--tokenizer {path}")
    return tok


def train_bpe(documents: Iterable[str], vocab_size: int, eos: str = BPE_EOS) -> Any:
    """A byte-level BPE of ``vocab_size`` pieces (the separator ``eos`` included) trained on ``documents``."""
    tokenizers = require_tokenizers()
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[eos],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(documents, trainer=trainer)
    return tok


def check_bpe_size(vocab_size: int) -> None:
    if not MIN_BPE <= vocab_size <= MAX_UINT16_VOCAB:
        raise DataError(
            f"--train-bpe {vocab_size}: a byte-level BPE has {MIN_BPE} to {MAX_UINT16_VOCAB:,} pieces "
            "(256 bytes and the separator at least; uint16 shards at most)"
        )


def check_vocab(tok: Any, where: str) -> None:
    size = tok.get_vocab_size(with_added_tokens=True)
    if size > MAX_UINT16_VOCAB:
        raise DataError(f"{where}: {size:,} pieces do not fit uint16 shards (at most {MAX_UINT16_VOCAB:,})")


def eos_of(tok: Any, eos: str | None, where: str) -> tuple[str, int]:
    """The separator token and its id: ``eos`` when given, else the first of EOS_CANDIDATES it has."""
    names = (eos,) if eos else EOS_CANDIDATES
    for name in names:
        token_id = tok.token_to_id(name)
        if token_id is not None:
            return name, int(token_id)
    if eos:
        raise DataError(f"--eos {eos!r}: {where} has no such token")
    raise DataError(f"{where} has none of {', '.join(EOS_CANDIDATES)}; name its end-of-text token with --eos")


def chunked(documents: Iterable[str], max_chars: int = CHUNK_CHARS) -> Iterator[list[str]]:
    """Consecutive documents in lists of about ``max_chars`` characters (at least one document each)."""
    chunk: list[str] = []
    size = 0
    for doc in documents:
        chunk.append(doc)
        size += len(doc)
        if size >= max_chars:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def encode_chunk(tok: Any, eos_id: int, docs: list[str]) -> Encoded:
    """``[EOS] + ids`` of each document, concatenated, and where each document ends."""
    batch = getattr(tok, "encode_batch_fast", tok.encode_batch)  # _fast (no offsets) from tokenizers 0.21
    flat: list[int] = []
    ends = np.empty(len(docs), np.int64)
    for i, enc in enumerate(batch(docs, add_special_tokens=False)):
        flat.append(eos_id)
        flat.extend(enc.ids)
        ends[i] = len(flat)
    return np.array(flat, dtype=np.uint16), ends


PREFETCH = 2  # chunks read ahead: the reading overlaps the encoding, memory stays flat


@contextlib.contextmanager
def threads(jobs: int) -> Iterator[None]:
    """``tokenizers`` on ``jobs`` threads: one thread is its parallelism off; more, its rayon pool's size."""
    before = {name: os.environ.get(name) for name in (PARALLELISM, RAYON_THREADS)}
    os.environ[PARALLELISM] = "true" if jobs > 1 else "false"
    if jobs > 1 and before[RAYON_THREADS] is None:
        os.environ[RAYON_THREADS] = str(jobs)  # read once, when the pool starts (the process's first parallel call)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _read_ahead(chunks: Iterable[list[str]], queue: Queue, stop: threading.Event) -> None:
    """Put each chunk (then None) on ``queue``; an error is put for the consumer to raise, in its place."""
    try:
        for docs in chunks:
            while not stop.is_set():
                with contextlib.suppress(Full):
                    queue.put(docs, timeout=0.1)
                    break
            if stop.is_set():
                return
        queue.put(None)
    except BaseException as exc:  # noqa: BLE001 - a bad record's DataError is raised by the consumer
        queue.put(exc)


def encode_all(tok: Any, eos_id: int, chunks: Iterable[list[str]]) -> Iterator[Encoded]:
    """Each chunk encoded (:func:`encode_chunk`) in input order, the next read meanwhile; on as many
    threads as the caller's :func:`threads` says."""
    queue: Queue = Queue(maxsize=PREFETCH)
    stop = threading.Event()
    reader = threading.Thread(target=_read_ahead, args=(chunks, queue, stop), name="tokenize-read", daemon=True)
    reader.start()
    try:
        while (item := queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield encode_chunk(tok, eos_id, item)
    finally:
        stop.set()
        reader.join(timeout=5)
