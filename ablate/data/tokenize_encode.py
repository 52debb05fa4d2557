"""The tokenizer `ablate tokenize` encodes with (Hugging Face ``tokenizers``), and the encoding in parallel.

A tokenizer is either loaded from a ``tokenizer.json`` (GPT-2's, or any other) or trained here: a
byte-level BPE, GPT-2's design (its pre-tokenizer regex and 256-byte alphabet, so every text encodes
with no unknown piece), with ``<|endoftext|>`` as its one special token. The document separator is
GPT-2's ``<|endoftext|>`` where the tokenizer has it (id 50256 in GPT-2's), else another common
end-of-text token, else the one ``--eos`` names.

Each document becomes ``[EOS] + its ids``: the separator goes *before* the document, as llm.c's
FineWeb shards have it (nanoGPT's ``train.bin`` puts it after). Shards made here from FineWeb with
GPT-2's tokenizer then have the token stream of the published ones, so a validation loss read on them
is the one those runs report; and a document that opens a block is preceded by the separator it
follows in every other place, the context GPT-2 was trained to start a text from.

With ``jobs`` 1 the main process encodes; with more, that many worker processes (started fresh, not
forked: ``tokenizers`` may already run its own threads here) each encode whole chunks of documents,
and the results come back in input order, so the shards do not depend on ``jobs``. Each worker runs
the tokenizer single-threaded: one process a core measured faster than one process with
``tokenizers``' own threads (the numbers are in the `ablate tokenize` benchmark's output).
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ablate.data.errors import DataError
from ablate.data.token_files import MAX_UINT16_VOCAB
from ablate.data.tokenize_sources import EXTRA_HINT

BPE_EOS = "<|endoftext|>"  # GPT-2's end of text: the one special token of a BPE trained here
EOS_CANDIDATES = (BPE_EOS, "<|end_of_text|>", "</s>", "<eos>")  # GPT-2, Llama 3, T5/Llama 2, Gemma
MIN_BPE = 257  # the 256 byte pieces and the separator
CHUNK_CHARS = 1 << 20  # characters of text a chunk (about 250k tokens): big enough to hide the IPC
IN_FLIGHT = 2  # chunks queued per worker: the next is ready when one finishes, memory stays flat
PARALLELISM = "TOKENIZERS_PARALLELISM"  # read by `tokenizers` at each call: "false" keeps it to one thread

Encoded = tuple[np.ndarray, np.ndarray]  # (uint16 tokens of a chunk, int64 end offset of each document)


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise DataError(f"ablate tokenize needs the tokenizers package: {EXTRA_HINT}") from None
    return tokenizers


def load_tokenizer(path: str | Path) -> Any:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json; a DataError (one line) for one that does not parse."""
    path = Path(path)
    tokenizers = _tokenizers()
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
    tokenizers = _tokenizers()
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


_WORKER: tuple[Any, int] | None = None  # a worker process's tokenizer and separator id


def _start_worker(tokenizer_json: str, eos_id: int) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle, once
    os.environ[PARALLELISM] = "false"
    _WORKER = (_tokenizers().Tokenizer.from_str(tokenizer_json), eos_id)


def _encode_in_worker(docs: list[str]) -> Encoded:
    assert _WORKER is not None, "worker started without its tokenizer"
    return encode_chunk(_WORKER[0], _WORKER[1], docs)


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    before = os.environ.get(PARALLELISM)
    os.environ[PARALLELISM] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PARALLELISM, None)
        else:
            os.environ[PARALLELISM] = before


def encode_all(tok: Any, eos_id: int, chunks: Iterable[list[str]], jobs: int) -> Iterator[Encoded]:
    """Each chunk encoded (:func:`encode_chunk`), in input order, by ``jobs`` processes."""
    if jobs <= 1:
        with _one_thread():
            for docs in chunks:
                yield encode_chunk(tok, eos_id, docs)
        return
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(tok.to_str(), eos_id)
    )
    pending: collections.deque[concurrent.futures.Future[Encoded]] = collections.deque()
    try:
        for docs in chunks:
            pending.append(pool.submit(_encode_in_worker, docs))
            if len(pending) >= IN_FLIGHT * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
