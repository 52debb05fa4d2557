"""WMT14 en-de: archive member selection, assembly, the test sets through sacreBLEU and resumable
downloads (no network: sacreBLEU's downloader and ablate's are replaced by local stand-ins)."""

from __future__ import annotations

import io
import tarfile
import urllib.request
from pathlib import Path

import pytest

from ablate.data import download, wmt14
from ablate.data.catalog import build_corpus
from ablate.data.errors import DataError


def _tgz(path: Path, members: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_member_selection_by_name(tmp_path: Path) -> None:
    archive = _tgz(
        tmp_path / "a.tgz",
        {
            "training/europarl-v7.de-en.en": "x\n",
            "training/europarl-v7.fr-en.en": "no\n",
            "training/europarl-v7.de-en.de": "X\n",
        },
    )
    en, de = wmt14.extract_members(archive, ("europarl-v7.de-en.en", "europarl-v7.de-en.de"), tmp_path / "out")
    assert en.read_text() == "x\n" and de.read_text() == "X\n"
    with pytest.raises(DataError, match=r"a\.tgz: no member named commoncrawl\.de-en\.en"):
        wmt14.extract_members(archive, ("commoncrawl.de-en.en",), tmp_path / "out")
    (tmp_path / "broken.tgz").write_bytes(b"not a tar")
    with pytest.raises(DataError, match=r"broken\.tgz: damaged archive"):
        wmt14.extract_members(tmp_path / "broken.tgz", ("x",), tmp_path / "out")


def _archives(folder: Path) -> None:
    """The five statmt.org archives in miniature, under their real names."""
    folder.mkdir(parents=True, exist_ok=True)
    _tgz(
        folder / "training-parallel-europarl-v7.tgz",
        {
            "training/europarl-v7.de-en.en": "Resumption of the session\n\nI declare\n",
            "training/europarl-v7.de-en.de": "Wiederaufnahme der Sitzungsperiode\nleer\nIch erkläre\n",
        },
    )
    # a latin-1 byte inside the German side of commoncrawl
    with tarfile.open(folder / "training-parallel-commoncrawl.tgz", "w:gz") as tar:
        for name, data in (
            ("commoncrawl.de-en.en", b"Crawl one\nbad\n"),
            ("commoncrawl.de-en.de", b"Crawl eins\n\xff\n"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    _tgz(
        folder / "training-parallel-nc-v9.tgz",
        {
            "training/news-commentary-v9.de-en.en": "News one\n",
            "training/news-commentary-v9.de-en.de": "Nachricht eins\n",
        },
    )
    for name in ("newstest2013", "newstest2014"):  # the test sets as sacreBLEU would give them
        (folder / f"{name}.src.en").write_text(f"{name} one\n{name} two\n", encoding="utf-8")
        (folder / f"{name}.ref.de").write_text(f"{name} eins\n{name} zwei\n", encoding="utf-8")


def _sacrebleu(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """sacreBLEU's test-set download, replaced by the files of ``folder``; returns the calls."""
    import sacrebleu.utils

    asked: list[tuple[str, str]] = []
    names = {v: k for k, v in wmt14.TEST_SETS.items()}

    def download_test_set(test_set: str, langpair: str) -> list[str]:
        asked.append((test_set, langpair))
        name = names[test_set]
        return [str(folder / f"{name}.src.en"), str(folder / f"{name}.ref.de")]

    monkeypatch.setattr(sacrebleu.utils, "download_test_set", download_test_set)
    return asked


def test_assembly_from_archives_in_root(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _archives(tmp_path / "root")

    def no_network(request):
        raise AssertionError(f"tried to download {request.full_url}")

    monkeypatch.setattr(download, "_open", no_network)
    asked = _sacrebleu(tmp_path / "root", monkeypatch)
    corpus = build_corpus("wmt14_en_de", {}, str(tmp_path / "root"), "en", "de", cache)
    train = list(corpus.pairs("train"))
    assert train == [
        ("Resumption of the session", "Wiederaufnahme der Sitzungsperiode"),
        ("I declare", "Ich erkläre"),
        ("Crawl one", "Crawl eins"),
        ("News one", "Nachricht eins"),
    ]
    assert list(corpus.pairs("valid")) == [
        ("newstest2013 one", "newstest2013 eins"),
        ("newstest2013 two", "newstest2013 zwei"),
    ]
    assert next(iter(corpus.pairs("test"))) == ("newstest2014 one", "newstest2014 eins")
    assert sorted(asked) == [("wmt13", "en-de"), ("wmt14/full", "en-de")]  # checksummed test sets
    stats = (cache / "downloads" / "wmt14_en_de" / "train.stats.json").read_text()
    assert '"skipped_empty": 1' in stats and '"skipped_not_utf8": 1' in stats
    de_en = build_corpus("wmt14_en_de", {}, str(tmp_path / "root"), "de", "en", cache)  # reuses the assembly
    assert next(iter(de_en.pairs("train"))) == ("Wiederaufnahme der Sitzungsperiode", "Resumption of the session")


def test_plain_files_in_root_are_used_directly(tmp_path: Path, cache: Path, write_pair) -> None:
    for name in ("train", "newstest2013", "newstest2014"):
        write_pair(tmp_path, name, [f"{name} a"], [f"{name} A"])
    corpus = build_corpus("wmt14_en_de", {}, str(tmp_path), "en", "de", cache)
    assert list(corpus.pairs("test")) == [("newstest2014 a", "newstest2014 A")]
    with pytest.raises(DataError, match=r"wmt14_en_de is en-de"):
        build_corpus("wmt14_en_de", {}, str(tmp_path), "en", "fr", cache)


def test_download_uses_the_statmt_urls(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _archives(tmp_path / "served")
    urls: list[str] = []

    def serve(request: urllib.request.Request):
        urls.append(request.full_url)
        return urllib.request.urlopen((tmp_path / "served" / request.full_url.rsplit("/", 1)[1]).as_uri())

    monkeypatch.setattr(download, "_open", serve)
    _sacrebleu(tmp_path / "served", monkeypatch)
    corpus = build_corpus("wmt14_en_de", {}, None, "en", "de", cache)
    assert len(list(corpus.pairs("train"))) == 4
    assert sorted(urls) == sorted(u for u, _, _ in wmt14.TRAIN_SOURCES)
    assert all(u.startswith("https://www.statmt.org/") for u in urls)


def test_a_test_set_sacrebleu_cannot_fetch_is_one_line(tmp_path: Path, cache: Path, monkeypatch) -> None:
    import sacrebleu.utils

    (tmp_path / "train.en").write_text("a\n", encoding="utf-8")
    (tmp_path / "train.de").write_text("A\n", encoding="utf-8")

    def offline(test_set: str, langpair: str) -> list[str]:
        raise SystemExit(1)  # what sacreBLEU does when its download fails

    monkeypatch.setattr(sacrebleu.utils, "download_test_set", offline)
    with pytest.raises(DataError, match=r"sacreBLEU could not fetch newstest2013 .*put newstest2013\.en and"):
        build_corpus("wmt14_en_de", {}, str(tmp_path), "en", "de", cache)


class _Resp(io.BytesIO):
    def __init__(self, data: bytes, status: int) -> None:
        super().__init__(data)
        self.status = status
        self.headers = {"Content-Length": str(len(data))}


def test_fetch_resumes_a_partial_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = bytes(range(256)) * 40
    dest = tmp_path / "big.tgz"
    dest.with_name("big.tgz.part").write_bytes(payload[:3000])  # an interrupted earlier run
    seen: list[str | None] = []

    def ranged(request: urllib.request.Request):
        rng = request.get_header("Range")
        seen.append(rng)
        start = int(rng.split("=")[1].rstrip("-")) if rng else 0
        return _Resp(payload[start:], 206 if rng else 200)

    monkeypatch.setattr(download, "_open", ranged)
    download.fetch("https://example.org/big.tgz", dest, sha256=download.hashlib.sha256(payload).hexdigest())
    assert seen == ["bytes=3000-"] and dest.read_bytes() == payload
    assert not dest.with_name("big.tgz.part").exists()


def test_fetch_restarts_when_the_server_ignores_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = b"abcdef" * 100
    dest = tmp_path / "f.gz"
    dest.with_name("f.gz.part").write_bytes(b"garbage")
    monkeypatch.setattr(download, "_open", lambda request: _Resp(payload, 200))
    download.fetch("https://example.org/f.gz", dest)
    assert dest.read_bytes() == payload
