"""``prepare_data``: corpus -> shared SentencePiece vocabulary -> binarized shards, once, in a cache.

The cache folder is ``data.cache_dir``, else ``$ABLATE_CACHE``, else ``~/.cache/ablate``. A prepared
corpus lives in ``<cache>/prepared/<corpus>-<key>/`` where the key hashes what determines its bytes:
the corpus identity (content hashes of its files, or the generator's settings) and the tokenizer
settings (vocab_size, tokenizer_sample, max_len, languages, SentencePiece version and options).
``max_tokens`` is not part of it: batches are made when the data is read.

Preparation is process-safe: a file lock per key makes concurrent callers (sweep trials starting
together) wait for the first one; the data is built in a hidden temporary folder and renamed into
place only when complete, so an error or a kill never leaves a half-written prepared folder.

Preparation streams: pass 1 copies every split's raw text into the folder (reservoir-sampling at
most ``tokenizer_sample`` sentences of train), the tokenizer is trained on that sample, pass 2
encodes chunk by chunk into the shards. Memory is bounded by the sample and one chunk.

The metadata also records each dev/test split's unigram floor (:mod:`ablate.data.unigram`: the
perplexity of a unigram model of the training targets), the report's "did the model learn anything?"
line; a folder prepared before it existed gets it computed and stored on first use
(:meth:`Prepared.unigram_floor`). torch-free (the batching import is deferred), so the report can
find a sweep's prepared data (:func:`find_prepared`) without loading torch.

Why this file is long: the cache key, the lookup without torch and the build are one contract (what
makes two preparations the same); split, each half would restate the other's assumptions.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sentencepiece as spm

from ablate.atomic import atomic_write_json, folder_problem
from ablate.data.budget import EpochStats, epoch_stats, lm_epoch_stats
from ablate.data.catalog import build_corpus
from ablate.data.errors import DataError
from ablate.data.rawtext import read_chunks, write_raw
from ablate.data.registry import Corpus
from ablate.data.tokenizer import TRAINER_SETTINGS, Tokenizer, train_tokenizer

if TYPE_CHECKING:  # numpy's import (70 ms) waits until a split is read: the dry run only looks the folder up
    from ablate.data.shards import Shard

FORMAT_VERSION = 1  # bump when the prepared layout changes: it is part of the key


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """``cache_dir`` (data.cache_dir), else ``$ABLATE_CACHE``, else ``~/.cache/ablate``."""
    return Path(cache_dir or os.environ.get("ABLATE_CACHE") or Path.home() / ".cache" / "ablate").expanduser()


@dataclass(frozen=True)
class TokenSettings:
    """What, besides the corpus, determines a prepared folder's bytes (all of it is in the cache key)."""

    vocab_size: int  # shared BPE vocabulary size
    tokenizer_sample: int  # at most this many sentences train the tokenizer
    max_len: int  # train pairs longer than this many subwords on either side are dropped
    src_lang: str
    tgt_lang: str
    max_train_pairs: int | None = None  # only the first N train pairs (the tokenizer learns from them too)


def _log(progress: bool, msg: str) -> None:
    if progress:
        print(f"[data] {msg}", file=sys.stderr, flush=True)


class Prepared:
    """A prepared corpus folder: tokenizer, shards per split, raw text (BLEU references)."""

    def __init__(
        self,
        folder: str | Path,
        *,
        cache_hit: bool = True,
        elapsed_s: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.dir = Path(folder)
        meta = self.dir / "meta.json"
        if not meta.is_file():
            raise DataError(f"{self.dir}: not a prepared data folder (no meta.json); run `ablate data prepare`")
        self.meta: dict[str, Any] = json.loads(meta.read_text(encoding="utf-8"))
        self.key: str = self.meta["key"]
        self.vocab_size: int = int(self.meta["vocab_size"])
        self.cache_hit, self.elapsed_s, self.max_tokens = cache_hit, elapsed_s, max_tokens
        self._tokenizer: Tokenizer | None = None
        self._shards: dict[str, Shard] = {}

    @classmethod
    def load(cls, folder: str | Path, max_tokens: int | None = None) -> Prepared:
        return cls(folder, cache_hit=True, max_tokens=max_tokens)

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(self.dir / "tokenizer.model")
        return self._tokenizer

    @property
    def splits(self) -> list[str]:
        return list(self.meta["splits"])

    def _check_split(self, name: str) -> None:
        if name not in self.meta["splits"]:
            raise DataError(
                f"split {name!r} is not in {self.dir.name} (has: {', '.join(self.splits)}); "
                f"check data.valid_split / data.test_split"
            )

    def split(self, name: str) -> Shard:
        self._check_split(name)
        if name not in self._shards:
            from ablate.data.shards import Shard

            self._shards[name] = Shard(self.dir / "shards" / name)
        return self._shards[name]

    def raw(self, split: str, side: str) -> list[str]:
        """Raw sentences of ``split`` (side ``src`` or ``tgt``), aligned with the shard's rows."""
        if side not in ("src", "tgt"):
            raise ValueError(f"side must be 'src' or 'tgt', got {side!r}")
        shard = self.split(split)
        with open(self.dir / "raw" / f"{split}.{side}", encoding="utf-8") as f:
            lines = f.read().split("\n")[:-1]
        return [lines[i] for i in shard.line] if shard.dropped else lines

    def unigram_floor(self, split: str) -> float:
        """The dev PPL of a unigram model of the train targets on ``split`` (stored in meta.json; computed
        and stored here for a folder prepared before the floor was recorded)."""
        from ablate.data.unigram import unigram_floor  # numpy (70 ms) only where a split is read

        return float(
            self._stored(
                "unigram_floor", split, lambda: unigram_floor(self.split("train"), self.split(split), self.vocab_size)
            )
        )

    def epoch_stats(
        self, max_tokens: int, bucket_ratio: float = 0.0, batch_multiple: int = 1, block: int | None = None
    ) -> EpochStats:
        """Pairs, target tokens and batches of one training epoch at ``max_tokens`` (stored in meta.json on
        first use, like the floor: the dry run reads them without batching the data again); bucketed
        batches (``data.bucket_ratio``, ``data.batch_multiple``) under a key of their own; ``block``: a
        language model's epoch of training blocks of that many tokens (its "pairs" are blocks)."""
        train = self.split("train")
        bucketing = self.bucketing(bucket_ratio, batch_multiple)
        plain = bucket_ratio <= 1 and batch_multiple <= 1
        key = str(max_tokens) if plain else f"{max_tokens}/{bucket_ratio:g}/{batch_multiple}"
        compute = partial(epoch_stats, train.src_lengths, train.tgt_lengths, max_tokens, **bucketing)
        if block is not None:  # a train split that left long lines out: the whole text's stream, another key
            key, compute = (
                f"lm/{block}/{max_tokens}" + ("/whole" if train.dropped else ""),
                partial(lm_epoch_stats, self.part_tokens("train"), block, max_tokens),
            )
        return EpochStats(**self._stored("epoch_stats", key, lambda: asdict(compute())))

    def bucketing(self, bucket_ratio: float = 0.0, batch_multiple: int = 1) -> dict[str, Any]:
        """The training sampler's bucketing keywords for this data (lengths capped at its max_len)."""
        ratio, multiple = float(bucket_ratio), int(batch_multiple)
        return {"bucket_ratio": ratio, "batch_multiple": multiple, "max_len": int(self.meta["max_len"])}

    def _stored(self, section: str, key: str, compute: Callable[[], Any]) -> Any:
        """``meta[section][key]``, computed and written to meta.json the first time it is asked for."""
        stored = self.meta.setdefault(section, {})
        if key not in stored:
            stored[key] = compute()
            try:
                atomic_write_json(self.dir / "meta.json", self.meta)
            except OSError:  # a read-only cache still gets its figure, just not stored
                pass
        return stored[key]

    def summary_lines(self) -> list[str]:
        """What ``ablate data prepare`` prints about this folder (ablate/data/summary.py)."""
        from ablate.data.summary import summary_lines

        return summary_lines(self)

    def part_tokens(self, split: str) -> list[int]:
        """The token count of a split's target stream (each line and its EOS, none left out), in one part."""
        if self.split(split).dropped:  # the whole text, encoded apart (ablate/data/lm_blocks.py)
            return [sum(len(part) for part in self.token_parts(split))]
        return [sum(int(n) for n in self.split(split).tgt_lengths) + len(self.split(split))]

    def stream_chars(self, split: str) -> int:
        """Characters of a split's raw target text, every line, a line break per EOS (bits per character)."""
        self._check_split(split)
        with open(self.dir / "raw" / f"{split}.tgt", encoding="utf-8") as f:
            return sum(len(line) for line in f)  # each line's break is its EOS

    def token_parts(self, split: str) -> list[Any]:
        """A language model's view of a split: its target stream as one token file (ablate/data/lm_blocks.py)."""
        from ablate.data.lm_blocks import stream_parts

        return stream_parts(self, split)


def cache_key(identity: dict[str, Any], settings: TokenSettings) -> str:
    blob_settings = {
        "format": FORMAT_VERSION,
        # max_train_pairs only when set: the folders prepared before it existed keep their keys
        **{k: v for k, v in asdict(settings).items() if not (k == "max_train_pairs" and v is None)},
        "sentencepiece": spm.__version__,
        "trainer": TRAINER_SETTINGS,
    }
    blob = json.dumps({"corpus": identity, "settings": blob_settings}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _corpus_and_settings(data_cfg: Any, progress: bool) -> tuple[Corpus, TokenSettings, Path]:
    """The only reader of the data section here: everything below receives plain values."""
    cache = cache_root(data_cfg.cache_dir)
    corpus = build_corpus(
        str(data_cfg.corpus),
        _plain(data_cfg.args),
        data_cfg.root,
        str(data_cfg.src_lang),
        str(data_cfg.tgt_lang),
        cache,
        progress=progress,
    )
    settings = TokenSettings(
        vocab_size=int(data_cfg.vocab_size),
        tokenizer_sample=int(data_cfg.tokenizer_sample),
        max_len=int(data_cfg.max_len),
        src_lang=str(data_cfg.src_lang),
        tgt_lang=str(data_cfg.tgt_lang),
        max_train_pairs=_max_pairs(data_cfg.get("max_train_pairs")),
    )
    return corpus, settings, cache


def _max_pairs(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise DataError(f"data.max_train_pairs must be a positive integer or null, got {value!r}")
    return value


def find_prepared(data_cfg: Any) -> Prepared | None:
    """The prepared folder of a loaded ``data`` section if it exists; prepares and downloads nothing (for
    the report: a corpus not downloaded yet raises :class:`~ablate.data.download.NotDownloaded`)."""
    from ablate.data.download import no_downloads

    with no_downloads():
        corpus, settings, cache = _corpus_and_settings(data_cfg, progress=False)
    if corpus.in_tokens:  # already tokens (data.corpus shards): read in place, nothing to find
        return corpus.token_data(settings.vocab_size, data_cfg.get("eos_id"), cache, int(data_cfg.max_tokens))
    final = cache / "prepared" / f"{corpus.name}-{cache_key(corpus.identity(cache), settings)}"
    return Prepared(final) if (final / "meta.json").is_file() else None


def prepare_data(data_cfg: Any, progress: bool = True) -> Prepared:
    """Prepare (or reuse) the corpus that a loaded ``data`` section names; see the module docstring."""
    corpus, settings, cache = _corpus_and_settings(data_cfg, progress)
    if corpus.in_tokens:  # already tokens (data.corpus shards): read in place, nothing prepared
        return corpus.token_data(settings.vocab_size, data_cfg.get("eos_id"), cache, int(data_cfg.max_tokens))
    splits = {"data.valid_split": str(data_cfg.valid_split), "data.test_split": str(data_cfg.test_split)}
    return prepare(corpus, settings, cache, need_splits=splits, max_tokens=int(data_cfg.max_tokens), progress=progress)


def _plain(args: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(args, resolve=True) if OmegaConf.is_config(args) else dict(args or {})  # type: ignore[return-value]


def prepare(
    corpus: Corpus,
    settings: TokenSettings,
    cache: Path,
    *,
    need_splits: dict[str, str] | None = None,
    max_tokens: int | None = None,
    progress: bool = True,
) -> Prepared:
    """Prepare ``corpus`` under ``cache`` (or reuse it); ``need_splits``: config key -> a split that must exist."""
    from filelock import FileLock

    t0 = time.perf_counter()
    _require_splits(corpus, (need_splits or {}).items())
    key = cache_key(corpus.identity(cache), settings)
    parent = cache / "prepared"
    final = parent / f"{corpus.name}-{key}"
    if (final / "meta.json").is_file():
        return Prepared(final, cache_hit=True, elapsed_s=time.perf_counter() - t0, max_tokens=max_tokens)
    if why := folder_problem(parent):  # the same on every try
        raise DataError(
            f"{cache}: cannot use it as the data cache ({why}); set data.cache_dir or ABLATE_CACHE to a writable folder"
        )
    with FileLock(str(parent / f".{final.name}.lock")):
        if (final / "meta.json").is_file():  # another process finished it while we waited
            return Prepared(final, cache_hit=True, elapsed_s=time.perf_counter() - t0, max_tokens=max_tokens)
        for stale in parent.glob(f".tmp-{final.name}-*"):  # left by a killed process; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        tmp = parent / f".tmp-{final.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            _build(corpus, settings, key, tmp, cache, progress, t0)
            if final.exists():  # an incomplete folder (no meta.json) from an older layout
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    prepared = Prepared(final, cache_hit=False, elapsed_s=time.perf_counter() - t0, max_tokens=max_tokens)
    _log(progress, f"prepared {corpus.describe()} in {prepared.elapsed_s:.1f} s -> {final}")
    return prepared


def _require_splits(corpus: Corpus, needed: Iterable[tuple[str, str]]) -> None:
    """A split the config names but the opened corpus lacks (e.g. an optional file that is not there)."""
    names = corpus.split_names()
    for key, split in needed:
        if split not in names:
            raise DataError(f"{key}: corpus {corpus.name} has no split {split!r} (has: {', '.join(names)})")


def _build(
    corpus: Corpus, settings: TokenSettings, key: str, tmp: Path, cache: Path, progress: bool, t0: float
) -> None:
    from ablate.data.shards import ShardWriter  # numpy: imported where data is prepared, not looked up
    from ablate.data.unigram import split_floors

    raw = tmp / "raw"
    raw.mkdir(parents=True)
    sample: list[str] = []
    counts: dict[str, int] = {}
    for split in corpus.split_names():
        _log(progress, f"reading {corpus.describe()} {split}")
        train = split == "train"
        limit = settings.max_train_pairs if train else None
        counts[split] = write_raw(corpus, split, raw, sample if train else None, settings.tokenizer_sample, limit)
        if counts[split] == 0:
            raise DataError(
                f"corpus {corpus.describe()}: split {split} is empty (no sentence pairs); "
                f"check the files (or data.args sizes)"
            )
    _log(progress, f"training a {settings.vocab_size}-piece BPE tokenizer on {len(sample):,} sentences")
    model = train_tokenizer(sample, settings.vocab_size, source=f"train split of {corpus.describe()}")
    n_sample = len(sample)
    del sample
    (tmp / "tokenizer.model").write_bytes(model)
    tok = Tokenizer(model)
    splits: dict[str, Any] = {}
    for split in corpus.split_names():
        _log(progress, f"encoding {split} ({counts[split]:,} pairs)")
        # Only train drops long pairs: dev/test keep every sentence so BLEU covers the whole set.
        writer = ShardWriter(tmp / "shards" / split, tok.vocab_size, settings.max_len if split == "train" else None)
        for start, src, tgt in read_chunks(raw, split):
            writer.add(range(start, start + len(src)), tok.encode_batch(src), tok.encode_batch(tgt))
        splits[split] = writer.close()
        if split == "train" and writer.n == 0:
            raise DataError(f"data.max_len={settings.max_len}: every train pair is longer; raise data.max_len")
    meta = {
        "key": key,
        "format": FORMAT_VERSION,
        "corpus": corpus.name,
        "corpus_description": corpus.describe(),
        "identity": corpus.identity(cache),
        "src_lang": settings.src_lang,
        "tgt_lang": settings.tgt_lang,
        "vocab_size": tok.vocab_size,
        "tokenizer_sample": settings.tokenizer_sample,
        "tokenizer_sentences": n_sample,
        "max_len": settings.max_len,
        "max_train_pairs": settings.max_train_pairs,
        "splits": splits,
        "unigram_floor": split_floors(tmp, corpus.split_names(), tok.vocab_size),
        "sentencepiece": spm.__version__,
        "prepare_time_s": round(time.perf_counter() - t0, 3),
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
