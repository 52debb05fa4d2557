"""Binarized splits: token ids in memory-mapped numpy files, written as a stream.

One folder per split::

    src.ids, tgt.ids   every sentence's subword ids, concatenated (uint16 if the vocabulary fits, else int32)
    src.off, tgt.off   int64 offsets, n + 1 of them: sentence i is ids[off[i]:off[i + 1]]
    line.idx           int64 original (0-based) line number of each kept pair in the raw split
    shard.json         counts, dtype, tokens, pairs dropped for length

Ids are stored without BOS/EOS (added when batches are made). Writing appends chunk by chunk, so
memory does not grow with the corpus; reading maps the files, so every DataLoader worker shares
the operating system's page cache instead of a copy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ablate.data.errors import DataError


def ids_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


class ShardWriter:
    """Append (line, source ids, target ids) chunks of one split; pairs over ``max_len`` are dropped and counted."""

    def __init__(self, folder: Path, vocab_size: int, max_len: int | None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.dtype = ids_dtype(vocab_size)
        self.max_len = max_len
        self._files = {
            name: open(folder / name, "wb") for name in ("src.ids", "tgt.ids", "src.off", "tgt.off", "line.idx")
        }
        self._off = {"src": 0, "tgt": 0}
        for side in ("src", "tgt"):
            np.zeros(1, np.int64).tofile(self._files[f"{side}.off"])
        self.n = 0
        self.dropped = 0
        self.tokens = {"src": 0, "tgt": 0}
        self.max_seen = {"src": 0, "tgt": 0}

    def add(self, lines: Sequence[int], src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> None:
        keep = [
            k
            for k in range(len(lines))
            if self.max_len is None or (len(src[k]) <= self.max_len and len(tgt[k]) <= self.max_len)
        ]
        self.dropped += len(lines) - len(keep)
        if not keep:
            return
        np.asarray([lines[k] for k in keep], np.int64).tofile(self._files["line.idx"])
        for side, seqs in (("src", src), ("tgt", tgt)):
            lens = np.fromiter((len(seqs[k]) for k in keep), np.int64, len(keep))
            flat = np.fromiter((i for k in keep for i in seqs[k]), self.dtype, int(lens.sum()))
            flat.tofile(self._files[f"{side}.ids"])
            (self._off[side] + np.cumsum(lens)).tofile(self._files[f"{side}.off"])
            self._off[side] += int(lens.sum())
            self.tokens[side] += int(lens.sum())
            self.max_seen[side] = max(self.max_seen[side], int(lens.max()))
        self.n += len(keep)

    def close(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        for f in self._files.values():
            f.close()
        info = {
            "pairs": self.n,
            "dropped_too_long": self.dropped,
            "dtype": self.dtype.str,
            "src_tokens": self.tokens["src"],
            "tgt_tokens": self.tokens["tgt"],
            "max_src_len": self.max_seen["src"],
            "max_tgt_len": self.max_seen["tgt"],
            **(extra or {}),
        }
        (self.folder / "shard.json").write_text(json.dumps(info, indent=1))
        return info


class Shard:
    """A memory-mapped split. Row ``i`` holds the pair from raw line ``line[i]`` (0-based)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        meta = self.folder / "shard.json"
        if not meta.is_file():
            raise DataError(f"{self.folder}: not a prepared split (no shard.json); run `ablate data prepare` again")
        self.info: dict[str, Any] = json.loads(meta.read_text())
        self.n = int(self.info["pairs"])
        dtype = np.dtype(self.info["dtype"])

        def mm(name: str, dt: np.dtype | type, count: int) -> np.ndarray:
            if count == 0:
                return np.zeros(0, dt)
            return np.memmap(self.folder / name, dtype=dt, mode="r", shape=(count,))

        self.src_off = mm("src.off", np.int64, self.n + 1)
        self.tgt_off = mm("tgt.off", np.int64, self.n + 1)
        self.src_ids = mm("src.ids", dtype, int(self.info["src_tokens"]))
        self.tgt_ids = mm("tgt.ids", dtype, int(self.info["tgt_tokens"]))
        self.line = mm("line.idx", np.int64, self.n)
        # Lengths are small (4 bytes a pair) and read by every batching pass: keep them in memory.
        self.src_lengths = np.diff(np.asarray(self.src_off)).astype(np.int32) if self.n else np.zeros(0, np.int32)
        self.tgt_lengths = np.diff(np.asarray(self.tgt_off)).astype(np.int32) if self.n else np.zeros(0, np.int32)

    def __len__(self) -> int:
        return self.n

    def src(self, i: int) -> np.ndarray:
        return self.src_ids[self.src_off[i] : self.src_off[i + 1]]

    def tgt(self, i: int) -> np.ndarray:
        return self.tgt_ids[self.tgt_off[i] : self.tgt_off[i + 1]]

    @property
    def dropped(self) -> int:
        return int(self.info["dropped_too_long"])

    @property
    def tokens(self) -> tuple[int, int]:
        return int(self.info["src_tokens"]), int(self.info["tgt_tokens"])
