"""Corpora: the registry, local text files, Multi30k (local and the download path) and bad input."""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import pytest

from ablate.data import corpora, download
from ablate.data.catalog import CORPORA, build_corpus
from ablate.data.errors import DataError
from ablate.data.prepare import prepare_data
from ablate.registry import RegistryError


def _build(name: str, args: dict, root: Path | None, cache: Path) -> corpora.Corpus:
    return build_corpus(name, args, str(root) if root else None, "en", "de", cache)


def test_registry_lists_the_corpora() -> None:
    assert {"builtin", "textfiles", "multi30k", "wmt14_en_de"} <= set(CORPORA.names())


def test_unknown_corpus_name_is_a_registry_error(data_cfg, cache: Path) -> None:
    with pytest.raises(RegistryError, match=r"unknown corpus 'multi31k'; did you mean 'multi30k'"):
        prepare_data(_cfg_with(data_cfg, corpus="multi31k"))
    assert not (cache / "prepared").exists()


def _cfg_with(data_cfg, **values):
    from omegaconf import OmegaConf

    cfg = data_cfg()
    OmegaConf.set_struct(cfg, False)
    for k, v in values.items():
        cfg[k] = v
    return cfg


def test_unknown_corpus_option_names_the_key(cache: Path) -> None:
    with pytest.raises(
        DataError, match=r"data.args.n_trian: not an option of the builtin corpus; did you mean n_train"
    ):
        _build("builtin", {"n_trian": 5}, None, cache)
    with pytest.raises(DataError, match=r"data.args.mirror: not an option of the multi30k corpus \(valid: download\)"):
        _build("multi30k", {"mirror": "x"}, None, cache)
    with pytest.raises(DataError, match=r"data.args.n_train: must be >= 1, got 0"):
        _build("builtin", {"n_train": 0}, None, cache)
    with pytest.raises(DataError, match=r"data.args.download: must be a bool, got 'no'"):
        _build("multi30k", {"download": "no"}, None, cache)
    with pytest.raises(DataError, match=r"data.args.train: the textfiles corpus needs this option \(data.args.trian"):
        _build("textfiles", {"trian": "x"}, None, cache)


def test_textfiles_prefix_and_pairs(tmp_path: Path, cache: Path, write_pair) -> None:
    write_pair(tmp_path, "train", ["a b", "c d"], ["A B", "C D"])
    write_pair(tmp_path, "dev", ["e"], ["E"])
    corpus = _build("textfiles", {"train": "train", "valid": ["dev.en", "dev.de"]}, tmp_path, cache)
    assert corpus.split_names() == ["train", "valid"]
    assert list(corpus.pairs("train")) == [("a b", "A B"), ("c d", "C D")]
    assert list(corpus.pairs("valid")) == [("e", "E")]
    first = corpus.identity(cache)
    write_pair(tmp_path, "train", ["a b", "c e"], ["A B", "C D"])
    assert _build("textfiles", {"train": "train", "valid": "dev"}, tmp_path, cache).identity(cache) != first


def test_missing_file_names_it(tmp_path: Path, cache: Path, write_pair) -> None:
    write_pair(tmp_path, "train", ["a"], ["A"])
    with pytest.raises(DataError, match=r"dev\.en: no such file"):
        _build("textfiles", {"train": "train", "valid": "dev"}, tmp_path, cache)


def test_line_count_mismatch_names_the_first_diverging_line(tmp_path: Path, cache: Path, write_pair) -> None:
    write_pair(tmp_path, "train", ["a", "b", "c"], ["A", "B"])
    corpus = _build("textfiles", {"train": "train"}, tmp_path, cache)
    with pytest.raises(DataError, match=r"train\.de has 2 lines .* diverge at line 3 \(.*train\.en:3 has no partner"):
        list(corpus.pairs("train"))


def test_empty_line_names_file_and_line(tmp_path: Path, cache: Path, write_pair) -> None:
    write_pair(tmp_path, "train", ["a", "b", "c"], ["A", "  ", "C"])
    with pytest.raises(DataError, match=r"train\.de:2: empty line"):
        list(_build("textfiles", {"train": "train"}, tmp_path, cache).pairs("train"))


def test_non_utf8_names_file_line_and_byte(tmp_path: Path, cache: Path, write_pair) -> None:
    write_pair(tmp_path, "train", b"ok\nstra\xdfe\n", b"OK\nSTRASSE\n")
    with pytest.raises(DataError, match=r"train\.en:2: not UTF-8 \(byte 0xdf at column 5\)"):
        list(_build("textfiles", {"train": "train"}, tmp_path, cache).pairs("train"))


def test_gzipped_text_files_are_read(tmp_path: Path, cache: Path) -> None:
    for lang, text in (("en", "x y\n"), ("de", "X Y\n")):
        (tmp_path / f"train.{lang}.gz").write_bytes(gzip.compress(text.encode()))
    corpus = _build("textfiles", {"train": ["train.en.gz", "train.de.gz"]}, tmp_path, cache)
    assert list(corpus.pairs("train")) == [("x y", "X Y")]


def test_multi30k_from_the_shared_folder(multi30k_root: Path, cache: Path) -> None:
    corpus = _build("multi30k", {}, multi30k_root, cache)
    counts = {split: sum(1 for _ in corpus.pairs(split)) for split in ("train", "valid", "test")}
    assert counts == {"train": 29_000, "valid": 1_014, "test": 1_000}
    src, tgt = next(iter(corpus.pairs("valid")))
    assert src.startswith("A group of men") and tgt.startswith("Eine Gruppe")


def test_multi30k_checksums_match_the_shared_files(multi30k_root: Path) -> None:
    for name, digest in corpora.MULTI30K_SHA256.items():
        assert download.sha256_file(multi30k_root / name) == digest, name


class _FakeResponse(io.BytesIO):
    def __init__(self, data: bytes, status: int = 200) -> None:
        super().__init__(data)
        self.status = status
        self.headers = {"Content-Length": str(len(data))}


def _fake_multi30k(monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes]) -> list[str]:
    """Serve gzipped ``files`` (local name -> content) at the real Multi30k URLs; pin their checksums."""
    remote = {r: local for _, (r, local) in corpora.MULTI30K_SPLITS.items()}
    requested: list[str] = []

    def fake_open(request):
        url = request.full_url
        requested.append(url)
        name = url.rsplit("/", 1)[1].removesuffix(".gz")
        stem, lang = name.rsplit(".", 1)
        return _FakeResponse(gzip.compress(files[f"{remote[stem]}.{lang}"]))

    monkeypatch.setattr(download, "_open", fake_open)
    monkeypatch.setattr(corpora, "MULTI30K_SHA256", {k: hashlib.sha256(v).hexdigest() for k, v in files.items()})
    return requested


def _small_multi30k() -> dict[str, bytes]:
    files = {}
    for _, (_, local) in corpora.MULTI30K_SPLITS.items():
        files[f"{local}.en"] = f"a dog runs in {local}\nthe cat sleeps\n".encode()
        files[f"{local}.de"] = f"ein Hund läuft in {local}\ndie Katze schläft\n".encode()
    return files


def test_multi30k_download_path(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    requested = _fake_multi30k(monkeypatch, _small_multi30k())
    corpus = _build("multi30k", {}, None, cache)
    assert all(u.startswith("https://raw.githubusercontent.com/multi30k/dataset/") for u in requested)
    assert len(requested) == 8
    assert list(corpus.pairs("valid"))[0] == ("a dog runs in valid", "ein Hund läuft in valid")
    assert not list((cache / "downloads" / "multi30k").glob("*.part"))
    _build("multi30k", {}, None, cache)  # second time: nothing is downloaded again
    assert len(requested) == 8


def test_multi30k_checksum_mismatch_is_refused(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    files = _small_multi30k()
    _fake_multi30k(monkeypatch, files)
    monkeypatch.setitem(corpora.MULTI30K_SHA256, "train.en", "0" * 64)
    with pytest.raises(DataError, match=r"train\.en\.gz: decompressed content has sha256 .* expected 000000000000"):
        _build("multi30k", {}, None, cache)
    assert not (cache / "downloads" / "multi30k" / "train.en").exists()


def test_download_failure_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    import urllib.error

    def offline(request):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(download, "_open", offline)
    with pytest.raises(DataError, match=r"download failed \(no network\); .* data\.root="):
        _build("multi30k", {}, None, cache)
