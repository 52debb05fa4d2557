"""``TokenData``: a token corpus (ablate/data/token_corpus.py) as a language model's trial reads it, the
counterpart of a prepared folder (ablate/data/prepare.py's ``Prepared``) for data that is already tokens.

It answers what the language model's data module, evaluation and budget ask of their data: the splits'
token parts (memory-mapped files, ``token_parts``), their token counts from the headers alone
(``part_tokens``), an epoch of blocks (``epoch_stats``), the unigram floor from the cached counts, and no
raw text (bits per character are left out: the characters behind the tokens are unknown). A trial's
memory does not grow with the corpus: blocks are index arithmetic over the mapped files
(ablate/data/lm_blocks.py) and the batch sampler holds one length per block.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ablate.data.budget import EpochStats, lm_epoch_stats
from ablate.data.errors import DataError


class TokenData:
    """The splits of a token corpus, read in place."""

    cache_hit, elapsed_s = True, None  # nothing is prepared: it is always "found"

    def __init__(self, corpus: Any, vocab_size: int, eos_id: int, cache: Path, max_tokens: int | None = None) -> None:
        self.corpus, self.vocab_size, self.eos_id, self.cache = corpus, int(vocab_size), int(eos_id), cache
        self.max_tokens = max_tokens
        self.dir = corpus.root  # where its files are (the data module's and provenance's "folder")

    @property
    def splits(self) -> list[str]:
        return list(self.corpus.files)

    def split(self, name: str) -> list[Any]:
        """The token files of a split (a DataError naming the splits there are)."""
        if name not in self.corpus.files:
            raise DataError(
                f"split {name!r} is not in the shards corpus (has: {', '.join(self.splits)}); "
                "add it to data.args or set data.valid_split / data.test_split"
            )
        return self.corpus.files[name]

    def token_parts(self, split: str) -> list[Any]:
        return [f.reader() for f in self.split(split)]  # positioned reads: ablate/data/token_files.py says why

    def part_tokens(self, split: str) -> list[int]:
        return [f.n_tokens for f in self.split(split)]

    def stream_chars(self, split: str) -> int | None:
        return None  # the text behind the tokens is not here: no bits per character

    def epoch_stats(
        self, max_tokens: int, bucket_ratio: float = 0.0, batch_multiple: int = 1, block: int | None = None
    ) -> EpochStats:
        if block is None:
            raise DataError("data.corpus shards trains a language model only (model.arch decoder); it has no pairs")
        return lm_epoch_stats(self.part_tokens("train"), block, max_tokens)

    def bucketing(self, bucket_ratio: float = 0.0, batch_multiple: int = 1) -> dict[str, Any]:
        return {"bucket_ratio": 0.0, "batch_multiple": 1, "max_len": None}  # every block one length

    def unigram_floor(self, split: str) -> float:
        """Dev PPL of an add-one unigram model of the training tokens (ablate/data/unigram.py's smoothing),
        from the counts cached when the files were first checked."""
        import numpy as np

        from ablate.data.token_files import file_stats

        def counts(name: str) -> Any:
            total = np.zeros(1 << 16, np.int64)
            for f in self.split(name):
                found = file_stats(f, self.cache)["counts"]
                total += np.load(found) if isinstance(found, Path) else found
            return total[: self.vocab_size]

        train, dev = counts("train"), counts(split)
        logp = np.log((train + 1.0) / (train.sum() + self.vocab_size))
        return math.exp(-float((dev * logp).sum()) / max(int(dev.sum()), 1))

    def summary_lines(self) -> list[str]:
        lines = [f"corpus {self.corpus.describe()}", f"  vocabulary {self.vocab_size} ids, separator {self.eos_id}"]
        for split, files in self.corpus.files.items():
            lines.append(f"  {split:<10} {sum(f.n_tokens for f in files):>13,} tokens in {len(files)} file(s)")
        return lines
