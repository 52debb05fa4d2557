"""``wmt14_en_de``: the paper's corpus (section 5.1), downloaded from statmt.org or taken from ``root``.

Training data is the WMT 2014 English-German constrained parallel data the paper used (~4.5M pairs):
Europarl v7, Common Crawl and News Commentary v9. The archives are fetched with resumable downloads
(``.part`` files and HTTP ``Range``) into ``<cache>/downloads/wmt14_en_de``; the two sides of each
source are extracted from their archive and appended to ``train.en`` / ``train.de``. Pairs with an
empty side or bytes that are not UTF-8 are skipped and counted (they occur in Common Crawl), so the
assembled files pass the strict reader of ablate/data/corpora.py. No checksums are published for
these archives; their integrity is checked by reading them in full.

Dev is newstest2013 and test is newstest2014 (the full 3,003-sentence version), as in Table 3. They
come from sacreBLEU's own test sets (``wmt13`` and ``wmt14/full``, en-de): checksummed, with its SGML
handling, cached under ``$SACREBLEU`` (default ``~/.sacrebleu``), and copied into the corpus folder.

``data.root`` may hold the plain files of any split (``train.{en,de}``, ``newstest2013.{en,de}``,
``newstest2014.{en,de}``) and the training archives under their original names; what is there is used
instead of a download (offline: put all three splits' plain files there). The corpus takes no
``data.args`` options.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock

from ablate.data.corpora import FileCorpus, write_tiny_pairs
from ablate.data.download import fetch
from ablate.data.errors import DataError
from ablate.data.registry import CORPORA, Corpus, OpenArgs

# (archive URL, basename suffix of the English member, of the German member)
TRAIN_SOURCES = [
    ("https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz", "europarl-v7.de-en.en", "europarl-v7.de-en.de"),
    ("https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz", "commoncrawl.de-en.en", "commoncrawl.de-en.de"),
    (
        "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz",
        "news-commentary-v9.de-en.en",
        "news-commentary-v9.de-en.de",
    ),
]
# The dev and test sets by the names sacreBLEU knows them under (language pair en-de).
TEST_SETS = {"newstest2013": "wmt13", "newstest2014": "wmt14/full"}


def extract_members(archive: Path, suffixes: tuple[str, ...], dest: Path) -> list[Path]:
    """Extract the members whose names end with ``suffixes`` (in that order) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                for suffix in suffixes:
                    if Path(member.name).name == suffix or member.name.endswith("/" + suffix):
                        out = dest / suffix
                        with tar.extractfile(member) as src, open(out, "wb") as f:  # type: ignore[union-attr]
                            shutil.copyfileobj(src, f, 1 << 20)
                        found[suffix] = out
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DataError(f"{archive}: damaged archive ({exc}); delete it and run again to download it") from None
    missing = [s for s in suffixes if s not in found]
    if missing:
        raise DataError(f"{archive}: no member named {missing[0]}; is this the right archive?")
    return [found[s] for s in suffixes]


def clean_pairs(en: Path, de: Path, stats: dict[str, int]) -> Iterator[tuple[bytes, bytes]]:
    """Aligned lines of two extracted sides; pairs with an empty or non-UTF-8 side are skipped and counted."""
    with open(en, "rb") as fe, open(de, "rb") as fd:
        for a, b in zip(fe, fd, strict=False):
            try:
                sa, sb = a.decode("utf-8").strip(), b.decode("utf-8").strip()
            except UnicodeDecodeError:
                stats["skipped_not_utf8"] += 1
                continue
            if not sa or not sb:
                stats["skipped_empty"] += 1
                continue
            stats["pairs"] += 1
            yield sa.encode(), sb.encode()
        if fe.readline() or fd.readline():
            raise DataError(f"{en} and {de} have different line counts; the archive is not the expected one")


def assemble_train(archives: list[tuple[Path, str, str]], folder: Path) -> tuple[Path, Path]:
    """Concatenate every source's cleaned pairs into ``folder/train.{en,de}`` (atomically)."""
    out_en, out_de = folder / "train.en", folder / "train.de"
    if out_en.exists() and out_de.exists():
        return out_en, out_de
    tmp = folder / f".assemble-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    stats = {"pairs": 0, "skipped_empty": 0, "skipped_not_utf8": 0}
    try:
        with open(tmp / "train.en", "wb") as fe, open(tmp / "train.de", "wb") as fd:
            for archive, en_name, de_name in archives:
                en, de = extract_members(archive, (en_name, de_name), tmp / "extract")
                for a, b in clean_pairs(en, de, stats):
                    fe.write(a + b"\n")
                    fd.write(b + b"\n")
                en.unlink()
                de.unlink()
        (tmp / "train.stats.json").write_text(json.dumps(stats))
        os.replace(tmp / "train.stats.json", folder / "train.stats.json")
        os.replace(tmp / "train.de", out_de)
        os.replace(tmp / "train.en", out_en)  # written last: its presence means "assembled"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_en, out_de


def _archive(url: str, root: Path | None, folder: Path, progress: bool) -> Path:
    name = url.rsplit("/", 1)[1]
    if root is not None and (root / name).is_file():
        return root / name
    return fetch(url, folder / name, progress=progress)


@CORPORA.register("wmt14_en_de")
class Wmt14EnDe(FileCorpus):
    """WMT 2014 en-de (~4.5M pairs; newstest2013 dev, newstest2014 test): downloaded, or from root."""

    @classmethod
    def open(cls, options: dict[str, object], **where: Any) -> Corpus:
        at = OpenArgs(**where)
        root, src_lang, tgt_lang, cache_dir = at.root, at.src_lang, at.tgt_lang, at.cache_dir
        if {src_lang, tgt_lang} != {"en", "de"}:
            raise DataError(
                f"data.src_lang/tgt_lang: wmt14_en_de is en-de (either direction); got {src_lang}-{tgt_lang}"
            )
        base = Path(root) if root else None
        if base is not None and all((base / f"{n}.{lang}").is_file() for n in NAMES.values() for lang in ("en", "de")):
            return cls._oriented(base, src_lang, tgt_lang)
        if cache_dir is None:
            raise DataError("wmt14_en_de: no data.root with train/newstest2013/newstest2014 .en/.de files and no cache")
        folder = Path(cache_dir) / "downloads" / "wmt14_en_de"
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / "assemble.lock")):
            for split, name in NAMES.items():
                _assemble_split(split, name, base, folder, at.progress)
        return cls._oriented(folder, src_lang, tgt_lang)

    @classmethod
    def contract_options(cls, tmp_dir: Path) -> dict[str, object]:
        write_tiny_pairs(tmp_dir, list(NAMES.values()))  # the assembled plain files: nothing downloads
        return {"args": {}, "root": str(tmp_dir)}

    @classmethod
    def _oriented(cls, folder: Path, src_lang: str, tgt_lang: str) -> FileCorpus:
        files = {s: (folder / f"{n}.{src_lang}", folder / f"{n}.{tgt_lang}") for s, n in NAMES.items()}
        return cls("wmt14_en_de", files)


NAMES = {"train": "train", "valid": "newstest2013", "test": "newstest2014"}  # split -> file name stem


def _assemble_split(split: str, name: str, base: Path | None, folder: Path, progress: bool) -> None:
    """Put ``folder/<name>.{en,de}`` in place: copied from root, or downloaded and extracted."""
    if base is not None and all((base / f"{name}.{lang}").is_file() for lang in ("en", "de")):
        for lang in ("en", "de"):  # a plain file in root wins over a download
            if not (folder / f"{name}.{lang}").exists():
                shutil.copyfile(base / f"{name}.{lang}", folder / f".{name}.{lang}.tmp")
                os.replace(folder / f".{name}.{lang}.tmp", folder / f"{name}.{lang}")
        return
    if split == "train":
        archives = [(_archive(u, base, folder, progress), en, de) for u, en, de in TRAIN_SOURCES]
        assemble_train(archives, folder)
    else:
        _test_set(folder, name)


def _test_set(folder: Path, name: str) -> None:
    """``folder/<name>.{en,de}`` from sacreBLEU's copy of the test set (downloaded once, checksummed)."""
    if all((folder / f"{name}.{lang}").exists() for lang in ("en", "de")):
        return
    from sacrebleu.utils import download_test_set

    try:
        source, reference = download_test_set(TEST_SETS[name], "en-de")[:2]
    except (Exception, SystemExit) as exc:  # sacreBLEU may exit on a failed download or checksum
        detail = str(exc) if isinstance(exc, Exception) else "download or checksum failed"
        raise DataError(
            f"wmt14_en_de: sacreBLEU could not fetch {name} ({detail}); "
            f"offline, put {name}.en and {name}.de in data.root"
        ) from None
    for path, lang in ((reference, "de"), (source, "en")):  # .en last: its presence means "in place"
        shutil.copyfile(path, folder / f".{name}.{lang}.tmp")
        os.replace(folder / f".{name}.{lang}.tmp", folder / f"{name}.{lang}")
