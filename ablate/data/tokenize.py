"""`ablate tokenize`: text in, llm.c shards out, a language model's corpus made once and read in place.

Documents (ablate/data/tokenize_sources.py) are encoded in parallel processes with a Hugging Face
tokenizer, each preceded by the separator (ablate/data/tokenize_encode.py), and the resulting token
stream is cut into shards of ``shard_tokens`` tokens (llm.c's layout, ablate/data/token_files.py; the
last shard of a split holds the rest). The first ``valid_docs`` documents are the validation split, as
llm.c's FineWeb shard 0 is; a document that straddles a shard boundary continues in the next shard.

Nothing is written until the first shard is full (or the input ends): a bad input found before then
leaves no trace. Each shard is written whole or not at all, then listed in ``manifest.json`` with the
point of the stream it ends at (ablate/data/tokenize_manifest.py). A killed run leaves only whole,
listed shards (and perhaps one whole, unlisted one); a rerun with the same inputs and options skips the
documents already written, without encoding them, and finishes with the same shards byte for byte:
the encoding is a function of the document alone and the order is the input's, whatever ``jobs`` is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import itertools
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ablate.data import tokenize_manifest as manifests
from ablate.data.errors import DataError
from ablate.data.tokenize_encode import (
    BPE_EOS,
    check_bpe_size,
    chunked,
    encode_all,
    eos_of,
    load_tokenizer,
    require_tokenizers,
    threads,
    train_bpe,
)
from ablate.data.tokenize_manifest import PREFIX, PREFIX_CHARS, SAMPLE_DOCS, SHARD_TOKENS, VALID_DOCS
from ablate.data.tokenize_sink import ShardSink
from ablate.data.tokenize_sources import DatasetSpec, Sources, open_sources


@dataclass(frozen=True)
class TokenizeOptions:
    """Everything `ablate tokenize` is told; all but ``jobs`` decide the shards' bytes."""

    out: Path  # the folder the shards, tokenizer.json and manifest.json go to
    inputs: tuple[str, ...] = ()  # local .txt / .jsonl / .parquet files, read in this order
    dataset: DatasetSpec | None = None  # or a Hugging Face dataset, streamed
    field: str = "text"  # the text field of a .jsonl line, a parquet column, a dataset example
    txt_docs: str = "lines"  # a .txt document: one line, or one blank-line-separated paragraph
    tokenizer: str | None = None  # a tokenizer.json to load (GPT-2's, ...)
    train_bpe: int | None = None  # or train a byte-level BPE of this many pieces
    sample: int = SAMPLE_DOCS  # documents the BPE is trained on
    eos: str | None = None  # the separator token (default: <|endoftext|> or another end-of-text token)
    shard_tokens: int = SHARD_TOKENS  # tokens a shard (the last of a split holds the rest)
    valid_docs: int = VALID_DOCS  # the first documents go to the validation split
    prefix: str = PREFIX  # shard names: <prefix>_<split>_000000.bin
    # threads that train and encode (a process's first parallel call fixes its pool: later calls share it)
    jobs: int = dataclasses.field(default_factory=lambda: os.cpu_count() or 1)


@dataclass(frozen=True)
class TokenizeResult:
    manifest: dict[str, Any]
    out: Path
    encoded: int  # tokens encoded by this run (fewer than the total when it resumed)
    seconds: float
    already_done: bool  # the folder was complete before this run: nothing was done


def check_options(opts: TokenizeOptions) -> None:
    """The options alone (not the inputs): a DataError, one line, for the first bad one."""
    if (opts.tokenizer is None) == (opts.train_bpe is None):
        raise DataError("give --tokenizer PATH (a tokenizer.json, e.g. GPT-2's) or --train-bpe N, one of the two")
    if opts.train_bpe is not None:
        check_bpe_size(opts.train_bpe)
    bounds = (
        ("--shard-tokens", opts.shard_tokens, 1),
        ("--sample", opts.sample, 1),
        ("--valid-docs", opts.valid_docs, 0),
        ("--jobs", opts.jobs, 1),
    )
    for name, value, least in bounds:
        if value < least:
            raise DataError(f"{name} {value}: must be at least {least}")
    if not opts.prefix or not set(opts.prefix) <= PREFIX_CHARS:
        raise DataError(f"--prefix {opts.prefix!r}: use letters, digits, '-' and '.' only")


def tokenize(opts: TokenizeOptions, show_progress: bool = False) -> TokenizeResult:
    """Make (or finish) the shards ``opts`` describe.

    Every bad input is a DataError before anything is written, but for a record past the first that
    lacks its text field or is not UTF-8: found while reading, the error names it (file:line), and only
    if a shard was full by then is anything written (whole shards, listed, resumable).
    """
    check_options(opts)
    require_tokenizers()
    manifests.check_out(opts.out)
    sources = open_sources(list(opts.inputs), opts.dataset, opts.field, opts.txt_docs)
    loaded = load_tokenizer(opts.tokenizer) if opts.tokenizer is not None else None
    source = _source(opts, sources)
    manifest = manifests.read(opts.out)
    if manifest is not None:
        manifests.check_same_source(opts.out, manifest, source)
        if manifest.get("complete"):
            return TokenizeResult(manifest, opts.out, 0, 0.0, already_done=True)
    meter = Meter(show_progress)
    with threads(opts.jobs):
        tok, tokenizer_bytes, info = _tokenizer(opts, sources, manifest, loaded, meter)
        if manifest is None:
            manifest = _new_manifest(opts, tok, info, source)
        sink = ShardSink(opts.out, manifest, tokenizer_bytes, opts.shard_tokens, opts.prefix, on_write=meter.shard)
        start = time.monotonic()
        meter.start()
        try:
            documents = _stream(sources, tok, sink, opts, meter)
            sink.finish(documents)
        finally:
            meter.stop()
            sink.close()
    return TokenizeResult(manifest, opts.out, meter.tokens, time.monotonic() - start, already_done=False)


def _source(opts: TokenizeOptions, sources: Sources) -> dict[str, Any]:
    """What the shards' bytes are a function of: a rerun continues a run only where this is equal."""
    if opts.tokenizer is not None:
        # its content, not its path: the same file named from another folder is the same source
        tokenizer: dict[str, Any] = {"sha256": hashlib.sha256(Path(opts.tokenizer).read_bytes()).hexdigest()}
    else:
        tokenizer = {"train_bpe": opts.train_bpe, "sample": opts.sample}
    return {
        "inputs": sources.fingerprint(),
        "tokenizer": tokenizer,
        "eos": opts.eos,
        "shard_tokens": opts.shard_tokens,
        "valid_docs": opts.valid_docs,
        "prefix": opts.prefix,
    }


def _tokenizer(
    opts: TokenizeOptions, sources: Sources, manifest: dict[str, Any] | None, loaded: Any, meter: Meter
) -> tuple[Any, bytes, dict[str, Any]]:
    """The tokenizer, the bytes of its tokenizer.json (copied into ``out``) and how it was made."""
    if loaded is not None:
        return loaded, Path(str(opts.tokenizer)).read_bytes(), {"kind": "file", "from": str(opts.tokenizer)}
    info: dict[str, Any] = {"kind": "bpe", "from": None}
    kept = opts.out / manifests.TOKENIZER_FILE
    if manifest is not None and kept.is_file():  # a resumed run: the BPE its shards were encoded with
        return load_tokenizer(kept), kept.read_bytes(), info
    assert opts.train_bpe is not None  # check_options: one of the two
    meter.say(f"training a byte-level BPE of {opts.train_bpe:,} pieces on up to {opts.sample:,} documents")
    sample = _Sample(sources.documents(), opts.valid_docs, opts.sample)
    tok = train_bpe(sample, opts.train_bpe, eos=opts.eos or BPE_EOS)
    if sample.taken == 0:
        raise _no_train_documents(sample.seen, opts.valid_docs)
    return tok, tok.to_str().encode("utf-8"), info


class _Sample:
    """The BPE's training documents: ``n`` of a stream after its first ``skip`` (the validation ones)."""

    def __init__(self, documents: Iterator[str], skip: int, n: int) -> None:
        self._docs, self._skip, self._n = documents, skip, n
        self.seen = 0  # documents read, the skipped included
        self.taken = 0

    def __iter__(self) -> Iterator[str]:
        for doc in self._docs:
            self.seen += 1
            if self.seen <= self._skip:
                continue
            self.taken += 1
            yield doc
            if self.taken == self._n:
                return


def _no_train_documents(seen: int, valid_docs: int) -> DataError:
    return DataError(
        f"no training documents: the inputs hold {seen:,} documents and --valid-docs {valid_docs:,} takes the first "
        "ones for validation; lower --valid-docs or give more text"
    )


def _new_manifest(opts: TokenizeOptions, tok: Any, info: dict, source: dict[str, Any]) -> dict[str, Any]:
    eos_token, eos_id = eos_of(tok, opts.eos, _where(opts))
    return {
        "format": manifests.FORMAT,
        "ablate_version": _version(),
        "complete": False,
        "tokenizer": {"file": manifests.TOKENIZER_FILE, **info},
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "eos_id": eos_id,
        "eos_token": eos_token,
        "eos_position": "before",  # [EOS] doc [EOS] doc ... as llm.c's FineWeb shards
        "shard_tokens": opts.shard_tokens,
        "splits": {split: [] for split in manifests.SPLITS},
        "tokens": {split: 0 for split in manifests.SPLITS},
        "total_tokens": 0,
        "documents": None,  # per split, once complete
        "source": source,
        "resume": {"next_document": 0, "skip_tokens": 0},
    }


def _version() -> str:
    try:
        return importlib.metadata.version("ablate")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _where(opts: TokenizeOptions) -> str:
    return f"--tokenizer {opts.tokenizer}" if opts.tokenizer else "the trained BPE"


def _stream(sources: Sources, tok: Any, sink: ShardSink, opts: TokenizeOptions, meter: Meter) -> int:
    """Encode every document from where the written shards end; the number of documents in the inputs."""
    docs = sources.documents()
    first = sink.next_document
    skipped = sum(1 for _ in itertools.islice(docs, first))  # read, not encoded: reading is the cheap part
    if skipped < first:
        raise DataError(
            f"--out {opts.out}: its shards hold {first:,} documents, the inputs now {skipped:,}; "
            "give another --out or delete that folder"
        )
    eos_id = int(sink.manifest["eos_id"])
    d0, skip = first, sink.skip_tokens
    for tokens, ends in encode_all(tok, eos_id, chunked(docs)):
        meter.advance(tokens.size - skip, sink.split)  # encoded: counted before the shards they fill are told
        _feed_chunk(sink, tokens, ends, d0, skip, opts.valid_docs)
        d0 += ends.size
        skip = 0
    if d0 <= opts.valid_docs:
        raise _no_train_documents(d0, opts.valid_docs)
    return d0


def _feed_chunk(sink: ShardSink, tokens: np.ndarray, ends: np.ndarray, d0: int, start: int, valid_docs: int) -> None:
    """A chunk's tokens from ``start`` on (documents ``d0`` ...): the validation ones, then the training ones."""
    n = ends.size
    b = min(max(valid_docs - d0, 0), n)  # the chunk's first training document
    boundary = int(ends[b - 1]) if b else 0
    p = _feed(sink, tokens, ends, d0, start, boundary)
    if b < n:
        if sink.split != "train":
            sink.switch("train", d0 + b)
        _feed(sink, tokens, ends, d0, max(p, boundary), tokens.size)


def _feed(sink: ShardSink, tokens: np.ndarray, ends: np.ndarray, d0: int, p: int, stop: int) -> int:
    """Tokens ``p`` .. ``stop`` into the sink, a shard written each time one fills; returns where it stopped."""
    while p < stop:
        p += sink.add(tokens[p:stop])
        if sink.full:
            k = int(np.searchsorted(ends, p, side="right"))  # documents of the chunk wholly written
            sink.flush(d0 + k, p - (int(ends[k - 1]) if k else 0))
    return p


class Meter:
    """What a person watching sees on stderr: a line a step and a shard, and on a terminal a live line
    of tokens encoded, tokens/s and the split being written."""

    def __init__(self, show: bool) -> None:
        self.tokens = 0
        self._start = time.monotonic()
        self._bar: Any = None
        self._console: Any = None
        if show:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False)

    def say(self, line: str) -> None:
        if self._console is not None:
            self._console.print(line, markup=False)  # above the live line, which stays at the bottom

    def start(self) -> None:
        """The encoding starts: tokens/s counts from here."""
        self._start = time.monotonic()
        if self._console is None or not self._console.is_terminal:
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.completed:,.0f} tokens"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=self._console,
        )
        self._task = self._bar.add_task("tokenize", total=None, rate="")
        self._bar.start()

    def advance(self, tokens: int, split: str) -> None:
        self.tokens += tokens
        if self._bar is not None:
            rate = f"{self.rate() / 1e6:.2f}M tokens/s"
            self._bar.update(self._task, completed=self.tokens, rate=rate, description=split)

    def shard(self, name: str, tokens: int) -> None:
        self.say(f"{name}: {tokens:,} tokens ({self.rate():,.0f} tokens/s)")

    def rate(self) -> float:
        elapsed = time.monotonic() - self._start
        return self.tokens / elapsed if elapsed > 0 else 0.0

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def summary_lines(result: TokenizeResult) -> list[str]:
    """What `ablate tokenize` prints when it is done."""
    m = result.manifest
    lines = []
    for split in manifests.SPLITS:
        files = m["splits"][split]
        lines.append(f"{split}: {m['tokens'][split]:,} tokens in {len(files)} shard(s)")
    lines.append(f"vocab_size {m['vocab_size']:,}, eos_id {m['eos_id']} ({m['eos_token']}, before each document)")
    if result.already_done:
        lines.append(f"{result.out / manifests.NAME}: complete already; nothing to do")
    else:
        rate = result.encoded / result.seconds if result.seconds > 0 else 0.0
        lines.append(f"{result.out / manifests.NAME}: {result.encoded:,} tokens encoded, {rate:,.0f} tokens/s")
    return lines
