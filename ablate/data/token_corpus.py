"""``shards``: a language model's corpus of token files read in place (ablate/data/token_files.py: llm.c /
modded-nanogpt FineWeb shards, nanoGPT's ``train.bin``), already tokenized: nothing is prepared, copied
or held in memory.

``data.args`` = ``{train: GLOB, valid: GLOB, test: GLOB}``, relative to ``data.root``; each split is the
sorted files its glob matches, each file a stream of its own (a block never spans two). The vocabulary
size and the document separator come from ``data.vocab_size`` and ``data.eos_id``, or from a
``manifest.json`` beside the files (``ablate tokenize`` writes one: ``vocab_size``, ``eos_id``), checked
against each other: ``data.vocab_size`` may pad the tokenizer's (50,304 for GPT-2's 50,257, a multiple of
64) but not undercut it.

Opening the corpus reads only the files' headers (an empty glob, a file that is not a token file, a
truncated shard: one line, from the dry run on). The checks that need every token (no id at or above
``data.vocab_size``) and the unigram counts of the report's floor run once per file and are cached
under the data cache (``tokens/``), keyed by the file's path, size and modification time
(ablate/data/token_files.py, ``file_stats``).
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ablate.data.errors import DataError
from ablate.data.registry import CORPORA, Corpus, Option

if TYPE_CHECKING:  # numpy (token_files.py) loads when a corpus opens: `ablate status` and `table` register this one
    from ablate.data.token_files import TokenFile

MANIFEST = "manifest.json"


@CORPORA.register("shards")
class TokenShards(Corpus):
    """Token shards read in place (llm.c / FineWeb, nanoGPT .bin): data.args {train, valid, test} globs."""

    options = {
        "train": Option(str, help="glob of the training token files, under data.root", required=True),
        "valid": Option(str, help="glob of the dev token files"),
        "test": Option(str, help="glob of the test token files"),
    }
    opens_offline = True
    in_tokens = True  # already tokenized: a language model's data only (no sentence pairs, no tokenizer)

    def __init__(self, files: Mapping[str, list[TokenFile]], manifest: Mapping[str, Any], root: Path) -> None:
        self.name, self.files, self.manifest, self.root = "shards", dict(files), dict(manifest), root

    @classmethod
    def split_names_for(cls, options: Mapping[str, Any]) -> list[str]:
        return list(options)

    @classmethod
    def open(cls, options: dict[str, Any], *, root: str | None, **_where: Any) -> Corpus:
        base = Path(root) if root else Path.cwd()
        files = {split: _split_files(base, split, pattern) for split, pattern in options.items()}
        return cls(files, _manifest(base, files), base)

    def split_names(self) -> list[str]:
        return list(self.files)

    def identity(self, cache_dir: Path) -> dict[str, Any]:
        from ablate.data.token_files import file_key

        return {split: [file_key(f) for f in files] for split, files in self.files.items()}

    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        raise DataError("data.corpus shards holds tokens, not sentence pairs: it trains a language model only")

    def describe(self) -> str:
        counts = ", ".join(f"{s} {sum(f.n_tokens for f in fs):,}" for s, fs in self.files.items())
        return f"token shards under {self.root} ({counts} tokens)"

    def token_data(self, vocab_size: int, eos_id: int | None, cache: Path, max_tokens: int) -> Any:
        """The corpus as a language model reads it (ablate/data/token_data.py), its ids checked once."""
        from ablate.data import token_files
        from ablate.data.token_data import TokenData

        vocab, eos = self._declared(vocab_size, eos_id)
        for files in self.files.values():
            for f in files:
                too_big = token_files.file_stats(f, cache)["max_id"]
                if too_big >= vocab:
                    raise DataError(
                        f"{f.path}: token id {too_big} >= data.vocab_size={vocab}; set data.vocab_size above it "
                        "(the tokenizer's vocabulary, padded)"
                    )
        return TokenData(self, vocab, eos, cache, max_tokens)

    def _declared(self, vocab_size: int, eos_id: int | None) -> tuple[int, int]:
        """(vocabulary size, document separator) from the config, checked against the manifest's."""
        theirs = self.manifest.get("vocab_size")
        if theirs is not None and vocab_size < int(theirs):
            raise DataError(
                f"data.vocab_size={vocab_size} is below the tokenizer's {theirs} ({self.manifest['path']}); "
                "set it to at least that (a multiple of 64 is faster)"
            )
        eos = eos_id if eos_id is not None else self.manifest.get("eos_id")
        if eos is None:
            raise DataError("data.eos_id: the shards corpus needs the document separator id (50256 for GPT-2)")
        if eos_id is not None and self.manifest.get("eos_id") not in (None, eos_id):
            raise DataError(f"data.eos_id={eos_id} but {self.manifest['path']} says {self.manifest['eos_id']}")
        if not 0 <= int(eos) < vocab_size:
            raise DataError(f"data.eos_id={eos} must lie below data.vocab_size={vocab_size}")
        return int(vocab_size), int(eos)


def _split_files(base: Path, split: str, pattern: str) -> list[TokenFile]:
    found = sorted(Path(p) for p in glob.glob(str(base / pattern)) if Path(p).name != MANIFEST)
    if not found:
        raise DataError(f"data.args.{split}: no file matches {pattern!r} under {base}; check data.root and the glob")
    from ablate.data.token_files import inspect_file

    return [inspect_file(p) for p in found]


def _manifest(base: Path, files: Mapping[str, list[TokenFile]]) -> dict[str, Any]:
    """``manifest.json`` in data.root or beside the training files ({} when there is none)."""
    for folder in (base, files["train"][0].path.parent):
        path = folder / MANIFEST
        if path.is_file():
            try:
                found = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DataError(f"{path}: not a readable manifest ({exc}); remake it or remove it") from None
            if found.get("complete") is False:  # ablate tokenize writes it after each shard, complete at the end
                raise DataError(
                    f"{path}: an unfinished `ablate tokenize` output (killed?); run the same command again to "
                    "finish it (it resumes), then read the shards"
                )
            return {**found, "path": str(path)}
    return {}
