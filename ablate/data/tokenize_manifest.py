"""``manifest.json``: what a folder of shards made by `ablate tokenize` holds, and where a killed run stopped.

The corpus that reads the shards takes the vocabulary size, the separator id and the split files from
it, so nothing is declared twice::

    {"vocab_size": 4000, "eos_id": 0, "eos_token": "<|endoftext|>", "eos_position": "before",
     "splits": {"valid": ["shard_valid_000000.bin"], "train": ["shard_train_000000.bin", ...]},
     "tokens": {"valid": 51200, "train": 1048576}, "total_tokens": 1099776, "complete": true,
     "tokenizer": {"file": "tokenizer.json", ...}, "source": {...}, "resume": {...}, ...}

Shard names are relative to the folder. The manifest is rewritten (atomically) after every shard: while
``complete`` is false it lists the shards written so far and, under ``resume``, the point of the token
stream they end at (documents wholly written, tokens of the next one). A rerun with the same ``source``
(inputs, tokenizer, options) skips to that point; one with another source is refused, never mixed in.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ablate.atomic import atomic_write_json
from ablate.data.errors import DataError

# The output's layout (its defaults; the options say them): shard size, held-out documents, names
SHARD_TOKENS = 100_000_000  # llm.c's FineWeb shards: 100M tokens, 200 MB each
VALID_DOCS = 1_000  # the first documents, held out (llm.c holds out its whole first shard)
SAMPLE_DOCS = 100_000  # documents a BPE is trained on (those after the validation ones)
PREFIX = "shard"
PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.")

NAME = "manifest.json"
FORMAT = "llmc-uint16"  # llm.c's shard header, then uint16 tokens (ablate/data/token_files.py)
TOKENIZER_FILE = "tokenizer.json"
SPLITS = ("valid", "train")  # in stream order: the first documents are the validation split


def shard_name(prefix: str, split: str, index: int) -> str:
    """llm.c's naming, ``fineweb_train_000001.bin``; numbered from 0 in each split."""
    return f"{prefix}_{split}_{index:06d}.bin"


def check_out(out: Path) -> None:
    """``--out`` can be made a folder and written, checked without creating anything."""
    if out.exists():
        if not out.is_dir():
            raise DataError(f"--out {out}: a file of that name is there; give a folder (new or one of shards)")
        if not os.access(out, os.W_OK | os.X_OK):
            raise DataError(f"--out {out}: not writable")
        return
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise DataError(f"--out {out}: cannot create it ({parent} is not a writable folder)")


def read(out: Path) -> dict[str, Any] | None:
    """The manifest in ``out``, or None where there is none yet."""
    path = out / NAME
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: unreadable ({exc}); delete the folder and run again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or "source" not in manifest:
        raise DataError(f"{path}: not a manifest of `ablate tokenize`; give another --out")
    return manifest


def check_same_source(out: Path, manifest: dict[str, Any], source: dict[str, Any]) -> None:
    """A rerun continues only the run it is a rerun of: the first option that differs is the error."""
    before = manifest["source"]
    for key in sorted(set(before) | set(source)):
        if before.get(key) != source.get(key):
            raise DataError(
                f"--out {out} holds shards made from another source ({key}: {_short(before.get(key))} there, "
                f"{_short(source.get(key))} now); give another --out or delete that folder"
            )


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def write(out: Path, manifest: dict[str, Any]) -> None:
    atomic_write_json(out / NAME, manifest)


def total_tokens(manifest: dict[str, Any]) -> int:
    return sum(int(n) for n in manifest["tokens"].values())
