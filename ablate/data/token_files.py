"""Token files: a language model's tokens on disk, read in place (``np.memmap``), never copied whole.

Two layouts, told apart by the first four bytes:

- **llm.c / modded-nanogpt shards** (FineWeb's ``fineweb_train_000001.bin`` ...): a header of 256 int32
  (``[0]`` the magic 20240520, ``[1]`` the version 1, ``[2]`` the token count), then the tokens as
  uint16. A shard whose size disagrees with its header (truncated, or still being written) is refused.
- **nanoGPT's** ``train.bin`` / ``val.bin``: no header, raw uint16 token ids (any file whose first int32
  is not the magic).

uint16 holds ids below 65,536 (GPT-2's 50,257 pieces). Writing goes through a temporary file renamed
into place (:func:`write_tokens`), so a killed writer never leaves a shard that reads as whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ablate.atomic import atomic_write_json
from ablate.data.errors import DataError

MAGIC = 20240520  # llm.c's shard magic (the date it was introduced)
VERSION = 1  # uint16 tokens after the header
HEADER_INTS = 256  # int32 values in the header (1,024 bytes)
HEADER_BYTES = HEADER_INTS * 4
MAX_UINT16_VOCAB = 1 << 16  # ids 0 .. 65,535


@dataclass(frozen=True)
class TokenFile:
    """Where a token file's tokens are: its layout, their count and the byte offset they start at."""

    path: Path
    layout: str  # "llmc" (header) | "nanogpt" (raw uint16)
    n_tokens: int
    offset: int  # bytes before the first token

    def tokens(self) -> np.ndarray:
        """The tokens as a read-only uint16 memmap (nothing is read until indexed): for a pass over the
        whole file (a check, a read-back); a trial reads its blocks through :meth:`reader`."""
        if self.n_tokens == 0:
            return np.zeros(0, np.uint16)
        return np.memmap(self.path, dtype=np.uint16, mode="r", offset=self.offset, shape=(self.n_tokens,))

    def reader(self) -> TokenReader:
        return TokenReader(self)


class TokenReader:
    """A token file's tokens read on demand, a slice at a time, with positioned reads (``os.pread``).

    Why not a memory map, as nanoGPT reads its ``train.bin``: a mapped file's pages count in the process's
    resident memory once touched, and this kernel maps the page cache's large folios whole: 160 random
    blocks of 257 tokens from 50M tokens of mapped shards added 86 MB of resident (file) memory, measured,
    and a long run would grow toward the corpus's size (nanoGPT re-creates its memmap every batch for
    this reason). A positioned read copies the ~0.5 KB of a block and maps nothing, so a trial's memory
    stays flat in the corpus size; the kernel's page cache still serves repeated reads. The descriptor is
    opened lazily, per process (a DataLoader worker opens its own after a pickle)."""

    def __init__(self, file: TokenFile) -> None:
        self.file = file
        self._fd: int | None = None

    def __len__(self) -> int:
        return self.file.n_tokens

    def __getitem__(self, key: slice) -> np.ndarray:
        start, stop, step = key.indices(self.file.n_tokens)
        if step != 1:
            raise ValueError("token files are read in contiguous slices")
        if self._fd is None:
            self._fd = os.open(self.file.path, os.O_RDONLY)
        count = max(stop - start, 0)
        raw = os.pread(self._fd, 2 * count, self.file.offset + 2 * start)
        if len(raw) != 2 * count:
            raise DataError(
                f"{self.file.path}: read {len(raw)} of {2 * count} bytes; was the file changed during the run?"
            )
        return np.frombuffer(raw, np.uint16)

    def __getstate__(self) -> dict[str, object]:
        return {"file": self.file, "_fd": None}

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


def inspect_file(path: str | Path) -> TokenFile:
    """The layout and token count of a token file; a DataError (one line) for a file that is not one."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(HEADER_BYTES)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the token file ({exc.strerror or exc})") from None
    if len(head) >= 4 and int(np.frombuffer(head[:4], np.int32)[0]) == MAGIC:
        return _llmc(path, head, size)
    if size % 2:
        raise DataError(
            f"{path}: {size} bytes is not a whole number of uint16 tokens (nanoGPT layout); is it a token file?"
        )
    return TokenFile(path, "nanogpt", size // 2, 0)


def _llmc(path: Path, head: bytes, size: int) -> TokenFile:
    if len(head) < HEADER_BYTES:
        raise DataError(f"{path}: truncated llm.c shard ({size} bytes, the header alone is {HEADER_BYTES}); remake it")
    header = np.frombuffer(head, np.int32)
    if int(header[1]) != VERSION:
        raise DataError(f"{path}: llm.c shard version {int(header[1])}, only version {VERSION} (uint16 tokens) is read")
    count = int(header[2])
    expected = HEADER_BYTES + 2 * count
    if count < 0 or size != expected:
        raise DataError(
            f"{path}: truncated llm.c shard: its header says {count:,} tokens ({expected:,} bytes), the file has "
            f"{size:,} bytes; remake it (a killed copy or download)"
        )
    return TokenFile(path, "llmc", count, HEADER_BYTES)


def write_tokens(path: str | Path, tokens: np.ndarray) -> Path:
    """Write ``tokens`` as an llm.c shard at ``path``, atomically (a temporary file renamed into place)."""
    path = Path(path)
    tokens = np.asarray(tokens)
    if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) >= MAX_UINT16_VOCAB):
        raise DataError(f"{path}: token ids must lie in 0..65,535 for uint16 shards, got {int(tokens.max())}")
    header = np.zeros(HEADER_INTS, np.int32)
    header[:3] = (MAGIC, VERSION, tokens.size)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(header.tobytes())
        fh.write(tokens.astype(np.uint16, copy=False).tobytes())
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def file_key(f: TokenFile) -> dict[str, Any]:
    stat = f.path.stat()
    return {"path": str(f.path.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def file_stats(f: TokenFile, cache: Path) -> dict[str, Any]:
    """The largest id of a token file and the file of its unigram counts, computed once (a pass over its
    tokens, a chunk at a time: memory flat) and cached under ``<cache>/tokens/``."""
    key = hashlib.sha256(json.dumps(file_key(f), sort_keys=True).encode()).hexdigest()[:16]
    folder = cache / "tokens"
    meta, counts_file = folder / f"{key}.json", folder / f"{key}.counts.npy"
    if meta.is_file() and counts_file.is_file():
        return {**json.loads(meta.read_text(encoding="utf-8")), "counts": counts_file}
    tokens, counts = f.reader(), np.zeros(1 << 16, np.int64)  # 32 MB a read, nothing mapped
    for start in range(0, len(tokens), 1 << 24):
        counts += np.bincount(tokens[start : start + (1 << 24)], minlength=1 << 16)
    nonzero = np.flatnonzero(counts)
    stats = {"max_id": int(nonzero[-1]) if len(nonzero) else -1, "n_tokens": int(f.n_tokens)}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        np.save(counts_file, counts)  # before the json: the json's presence says both are whole
        atomic_write_json(meta, stats)
    except OSError:  # a read-only cache: computed again next time
        pass
    return {**stats, "counts": counts_file if counts_file.is_file() else counts}
