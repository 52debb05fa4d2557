"""Where `ablate tokenize`'s token stream goes: a shard filled in memory, written whole, then listed.

The output folder is opened only when the first shard is written: it is created, locked against a
second `ablate tokenize` writing the same shards, cleared of the temporary files a killed run left,
and given its tokenizer.json. Then each shard is written atomically (``write_tokens``) and the
manifest, rewritten atomically after it, lists it with the point of the stream it ends at.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ablate.atomic import TMP_MARK, atomic_write_bytes
from ablate.data import tokenize_manifest as manifests
from ablate.data.errors import DataError
from ablate.data.token_files import write_tokens

LOCK = ".tokenize.lock"


class ShardSink:
    """The shard being filled (``split``) and the manifest of those written."""

    def __init__(
        self,
        out: Path,
        manifest: dict[str, Any],
        tokenizer_json: bytes,
        shard_tokens: int,
        prefix: str,
        on_write: Callable[[str, int], None] | None = None,
    ) -> None:
        self.out = out
        self._on_write = on_write  # told (shard name, tokens) after each shard is listed
        self.manifest = manifest
        self.prefix = prefix
        self._tokenizer_json = tokenizer_json
        self._buffer = np.empty(shard_tokens, np.uint16)
        self._fill = 0
        self._lock: Any = None
        resume = manifest["resume"]
        self.next_document = int(resume["next_document"])  # where the written shards end in the stream
        self.skip_tokens = int(resume["skip_tokens"])
        valid_docs = int(manifest["source"]["valid_docs"])
        self.split = "valid" if self.next_document < valid_docs else "train"

    @property
    def full(self) -> bool:
        return self._fill == self._buffer.size

    def add(self, tokens: np.ndarray) -> int:
        """Copy as many of ``tokens`` as the shard has room for; how many that was."""
        n = min(tokens.size, self._buffer.size - self._fill)
        self._buffer[self._fill : self._fill + n] = tokens[:n]
        self._fill += n
        return n

    def flush(self, next_document: int, skip_tokens: int) -> None:
        """Write the shard (if it holds anything) and list it; the stream up to that point is then done."""
        if self._fill == 0:
            return
        self._open()
        names = self.manifest["splits"][self.split]
        name = manifests.shard_name(self.prefix, self.split, len(names))
        write_tokens(self.out / name, self._buffer[: self._fill])
        names.append(name)
        self.manifest["tokens"][self.split] += self._fill
        self.manifest["total_tokens"] = manifests.total_tokens(self.manifest)
        self.manifest["resume"] = {"next_document": next_document, "skip_tokens": skip_tokens}
        manifests.write(self.out, self.manifest)
        if self._on_write is not None:
            self._on_write(name, self._fill)
        self._fill = 0

    def switch(self, split: str, next_document: int) -> None:
        """The previous split ends where ``next_document`` starts: its last shard holds the rest."""
        self.flush(next_document, 0)
        self.split = split

    def finish(self, documents: int) -> None:
        """The stream ended after ``documents`` documents: the last shard, then a manifest marked complete."""
        valid = min(documents, int(self.manifest["source"]["valid_docs"]))
        self.flush(documents, 0)
        self._open()
        self.manifest["documents"] = {"valid": valid, "train": documents - valid}
        self.manifest["resume"] = {"next_document": documents, "skip_tokens": 0}
        self.manifest["complete"] = True
        manifests.write(self.out, self.manifest)

    def _open(self) -> None:
        if self._lock is not None:
            return
        from filelock import FileLock, Timeout

        self.out.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.out / LOCK))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise DataError(f"--out {self.out}: another `ablate tokenize` is writing there; wait for it") from None
        self._lock = lock
        for name in (f"{self.prefix}_*.bin", manifests.NAME, manifests.TOKENIZER_FILE):
            pattern = f".{name}{TMP_MARK}*"
            for stale in self.out.glob(pattern):  # a killed run's half files: never listed, never read
                stale.unlink(missing_ok=True)
        kept = self.out / manifests.TOKENIZER_FILE
        if not kept.is_file() or kept.read_bytes() != self._tokenizer_json:
            atomic_write_bytes(kept, self._tokenizer_json)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
