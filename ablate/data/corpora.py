"""The corpora ablate ships (but the paper's, in ablate/data/wmt14.py) and the strict parallel-text reader.

Registered here: ``builtin`` (synthetic, offline, see ablate/data/builtin.py), ``textfiles`` (any local
parallel files) and ``multi30k`` (Elliott et al., 2016; downloaded or from ``root``). Each declares its
``data.args`` options (checked when the config is loaded, see ablate/data/registry.py).

Corpora backed by files are read as streams and checked line by line: missing files, sides with
different line counts (the first line where they diverge), empty lines and non-UTF-8 bytes each raise
a one-line :class:`DataError` naming the file and line.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Mapping
from itertools import zip_longest
from pathlib import Path
from typing import Any

from filelock import FileLock

from ablate.data import builtin
from ablate.data.download import fetch, gunzip, sha256_file
from ablate.data.errors import DataError
from ablate.data.registry import CORPORA, SPLITS, Corpus, OpenArgs, Option, SplitFiles

__all__ = ["CORPORA", "Corpus", "FileCorpus", "GeneratedCorpus", "Multi30k", "TextFiles", "read_parallel"]


class FileCorpus(Corpus):
    """Splits stored as parallel text files (one sentence per line, UTF-8, optionally .gz)."""

    def __init__(self, name: str, files: Mapping[str, tuple[Path, Path]]) -> None:
        self.name = name
        self.files = {split: (Path(s), Path(t)) for split, (s, t) in files.items()}
        if "train" not in self.files:
            raise DataError(f"corpus {name}: no train split given; name train files in data.args")
        for src, tgt in self.files.values():
            for p in (src, tgt):
                if not p.is_file():
                    raise DataError(f"{p}: no such file (corpus {name}); check data.root / data.args")

    def split_names(self) -> list[str]:
        return list(self.files)

    def identity(self, cache_dir: Path) -> dict[str, Any]:
        return {
            "corpus": self.name,
            "files": {
                split: [file_hash(s, cache_dir), file_hash(t, cache_dir)] for split, (s, t) in self.files.items()
            },
        }

    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        src, tgt = self.files[split]
        for _, s, t in read_parallel(src, tgt):
            yield s, t

    def describe(self) -> str:
        src, _ = self.files["train"]
        return f"{self.name} ({src.parent})"


# ----------------------------------------------------------------------------------------------
# Reading files: streamed, validated, with file:line in every message
# ----------------------------------------------------------------------------------------------


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _decode(raw: bytes, path: Path, lineno: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}:{lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            f"re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        ) from None
    text = text.strip()
    if not text:
        raise DataError(f"{path}:{lineno}: empty line; remove the pair (both sides) or fill it in")
    return text


def read_parallel(src: Path, tgt: Path) -> Iterator[tuple[int, str, str]]:
    """Yield (line number, source, target); both files must have the same number of lines."""
    for p in (src, tgt):
        if not p.is_file():
            raise DataError(f"{p}: no such file; check data.root / data.args")
    with _open_binary(src) as fs, _open_binary(tgt) as ft:
        lineno = 0
        for lineno, (a, b) in enumerate(zip_longest(fs, ft), start=1):  # noqa: B007 - used after the loop
            if a is None or b is None:
                short, long_ = (src, tgt) if a is None else (tgt, src)
                raise DataError(
                    f"{short} has {lineno - 1} lines but {long_} has more: the sides diverge at line {lineno} "
                    f"({long_}:{lineno} has no partner); both sides need one sentence per line, aligned"
                )
            yield lineno, _decode(a, src, lineno), _decode(b, tgt, lineno)


def write_tiny_pairs(folder: Path, stems: list[str], langs: tuple[str, str] = ("en", "de")) -> None:
    """Three aligned pairs per stem in ``folder/<stem>.<lang>`` (the corpus contract's offline instances)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        for lang in langs:
            lines = [f"{stem} sentence {i} in {lang}" for i in range(3)]
            (folder / f"{stem}.{lang}").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def file_hash(path: Path, cache_dir: Path) -> str:
    """sha256 of a file's content, memoized by (path, size, mtime) so a cache hit stays under a second."""
    st = path.stat()
    memo_key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:32]
    memo = cache_dir / "hashes" / f"{memo_key}.json"
    if memo.is_file():
        try:
            return str(json.loads(memo.read_text())["sha256"])
        except (ValueError, KeyError, OSError):
            pass  # a damaged memo is recomputed
    digest = sha256_file(path)
    memo.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_suffix(f".{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")  # concurrent writers
    tmp.write_text(json.dumps({"path": str(path), "sha256": digest}))
    tmp.replace(memo)
    return digest


# ----------------------------------------------------------------------------------------------
# Registered corpora
# ----------------------------------------------------------------------------------------------


@CORPORA.register("builtin")
class GeneratedCorpus(Corpus):
    """Synthetic language pair (offline, deterministic): agreement, V2, verb-final clauses, compounds."""

    name = "builtin"
    options = {
        f.name: Option(int, f.default, help=f.metadata["help"], minimum=0 if f.name == "seed" else 1)
        for f in dataclasses.fields(builtin.Options)
    }

    def __init__(self, opts: builtin.Options) -> None:
        self.opts = opts
        self._lexicon: builtin.Lexicon | None = None

    @classmethod
    def open(cls, options: dict[str, Any], **_where: Any) -> Corpus:  # generated: root, languages unused
        return cls(builtin.Options(**options))

    @classmethod
    def contract_options(cls, tmp_dir: Path) -> dict[str, Any]:
        sizes = dict(n_train=20, n_valid=5, n_test=5, n_nouns=40, n_adjectives=10, n_verbs=15, n_adverbs=5)
        return {"args": {**sizes, "n_preps": 3, "max_words": 20}}

    def split_names(self) -> list[str]:
        return list(SPLITS)

    def identity(self, cache_dir: Path) -> dict[str, Any]:
        return {"corpus": self.name, "grammar": builtin.GRAMMAR_VERSION, "options": dataclasses.asdict(self.opts)}

    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        if self._lexicon is None:
            self._lexicon = builtin.build_lexicon(self.opts)
        return builtin.generate(self.opts, split, self._lexicon)

    def describe(self) -> str:
        return f"builtin (seed {self.opts.seed})"


def _split_files(spec: Any, base: Path, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """A split given as a prefix (``data/train`` -> data/train.en, data/train.de), [src, tgt], {src, tgt} or
    {text}: one plain-text file read as both sides (a language model reads the target side only)."""
    if isinstance(spec, Mapping) and "text" in spec:
        return base / str(spec["text"]), base / str(spec["text"])
    if isinstance(spec, str):
        prefix = base / spec
        return prefix.with_name(f"{prefix.name}.{src_lang}"), prefix.with_name(f"{prefix.name}.{tgt_lang}")
    if isinstance(spec, Mapping):
        return base / str(spec["src"]), base / str(spec["tgt"])
    return base / str(spec[0]), base / str(spec[1])


@CORPORA.register("textfiles")
class TextFiles(FileCorpus):
    """Local files, a line a sentence (or a document): data.args names each split's files, from data.root.

    data.args = {train: PREFIX | [src, tgt] | {text: FILE}, valid: ..., test: ...}, relative to data.root
    (the current directory without it); {text: FILE} is plain text for a language model."""

    options = {
        "train": Option(SplitFiles, help="training files", required=True),
        "valid": Option(SplitFiles, help="dev files"),
        "test": Option(SplitFiles, help="test files"),
    }
    extra_option = Option(SplitFiles, help="any other name is one more split")
    opens_offline = True

    @classmethod
    def split_names_for(cls, options: Mapping[str, Any]) -> list[str]:
        return list(options)

    @classmethod
    def open(cls, options: dict[str, Any], *, root: str | None, src_lang: str, tgt_lang: str, **_where: Any) -> Corpus:
        base = Path(root) if root else Path.cwd()
        files = {split: _split_files(spec, base, src_lang, tgt_lang) for split, spec in options.items()}
        return cls("textfiles", files)

    @classmethod
    def contract_options(cls, tmp_dir: Path) -> dict[str, Any]:
        write_tiny_pairs(tmp_dir, ["train", "dev", "test"])
        return {
            "args": {"train": "train", "valid": ["dev.en", "dev.de"], "test": {"src": "test.en", "tgt": "test.de"}},
            "root": str(tmp_dir),
        }


MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{name}.{lang}.gz"
# split -> (name in the multi30k repository, name under data.root)
MULTI30K_SPLITS = {
    "train": ("train", "train"),
    "valid": ("val", "valid"),
    "test": ("test_2016_flickr", "test2016"),
    "test2017": ("test_2017_flickr", "test2017"),
}
# sha256 of the decompressed raw files (data/task1/raw of github.com/multi30k/dataset)
MULTI30K_SHA256 = {
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "valid.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "valid.de": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "test2016.en": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "test2016.de": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    "test2017.en": "ce1450ddc5ab0834502579d77a170849952e15a2938b34cc503bdc25ebb4fb98",
    "test2017.de": "c3078bc3b36808bf9d20eb2347ed6137016179ef59ec0d2b9b8ecc3fb2880081",
}


@CORPORA.register("multi30k")
class Multi30k(FileCorpus):
    """Multi30k task 1 (29,000 / 1,014 / 1,000 pairs): root=<folder with train.en ...> or a verified download."""

    options = {"download": Option(bool, True, "download the files when data.root is not given")}
    splits = (*SPLITS, "test2017")

    @classmethod
    def open(cls, options: dict[str, Any], **where: Any) -> Corpus:
        at = OpenArgs(**where)
        root, src_lang, tgt_lang, cache_dir = at.root, at.src_lang, at.tgt_lang, at.cache_dir
        langs = {src_lang, tgt_lang}
        if not langs <= {"en", "de", "fr", "cs"} or src_lang == tgt_lang:
            raise DataError(f"data.src_lang/tgt_lang: multi30k has en, de, fr, cs; got {src_lang}-{tgt_lang}")
        if root:
            base = Path(root)
            files = {}
            for split, (_, local) in MULTI30K_SPLITS.items():
                pair = (base / f"{local}.{src_lang}", base / f"{local}.{tgt_lang}")
                if split in SPLITS or all(p.is_file() for p in pair):  # test2017 is optional
                    files[split] = pair
            return cls("multi30k", files)
        if cache_dir is None or not options.get("download", True):
            raise DataError(
                "multi30k: no data.root given and downloads are off; set data.root=<folder with train.en ...>"
            )
        folder = Path(cache_dir) / "downloads" / "multi30k"
        files = {
            split: _fetch_pair(folder, remote, local, (src_lang, tgt_lang), at.progress)
            for split, (remote, local) in MULTI30K_SPLITS.items()
        }
        return cls("multi30k", files)

    @classmethod
    def contract_options(cls, tmp_dir: Path) -> dict[str, Any]:
        write_tiny_pairs(tmp_dir, [local for _, local in MULTI30K_SPLITS.values()])  # train.en, test2016.de ...
        return {"args": {"download": False}, "root": str(tmp_dir)}


def _fetch_pair(folder: Path, remote: str, local: str, langs: tuple[str, str], progress: bool) -> tuple[Path, Path]:
    pair = []
    for lang in langs:
        dest = folder / f"{local}.{lang}"
        with FileLock(str(dest) + ".get.lock"):
            if not dest.exists():
                url = MULTI30K_URL.format(name=remote, lang=lang)
                gz = fetch(url, folder / f"{remote}.{lang}.gz", progress=progress)
                gunzip(gz, dest, MULTI30K_SHA256.get(f"{local}.{lang}"))
                gz.unlink(missing_ok=True)
        pair.append(dest)
    return pair[0], pair[1]
