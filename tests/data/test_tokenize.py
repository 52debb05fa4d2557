"""`ablate tokenize`: shards that read back as the tokenizer's own encoding, a killed run resumed to the
same bytes, every input kind, and every bad input as one line before anything is written."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from ablate.cli import main  # noqa: E402  (after the skip: the lm extra is optional)
from ablate.data import tokenize_sink  # noqa: E402
from ablate.data.token_files import inspect_file  # noqa: E402
from ablate.data.tokenize import TokenizeOptions, tokenize  # noqa: E402
from ablate.data.tokenize_encode import load_tokenizer  # noqa: E402

WORDS = "the a model attention head layer token shard résumé naïve 日本語 ümlaut data loss of in to is".split()
SHARD = 400  # tokens a shard: a few documents each, so documents straddle shard boundaries
VALID = 12  # documents held out


def _documents(n: int = 120, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 40))) for _ in range(n)]


@pytest.fixture
def docs() -> list[str]:
    return _documents()


@pytest.fixture
def txt(tmp_path: Path, docs: list[str]) -> Path:
    path = tmp_path / "corpus.txt"
    text = "\n".join(docs[:50]) + "\n\n   \n" + "\n".join(docs[50:]) + "\n"  # blank lines are no documents
    path.write_text(text, encoding="utf-8")
    return path


def _run(*args: object) -> int:
    return main(["tokenize", *map(str, args)])


def _make(inputs: list[Path], out: Path, *extra: object) -> int:
    options = ("--train-bpe", 300, "--shard-tokens", SHARD, "--valid-docs", VALID, "--jobs", 1, *extra)
    return _run(*inputs, "--out", out, *options)


def _split_tokens(out: Path, split: str) -> np.ndarray:
    manifest = json.loads((out / "manifest.json").read_text())
    parts = [np.asarray(inspect_file(out / name).tokens()) for name in manifest["splits"][split]]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


def _expected(out: Path, docs: list[str]) -> tuple[list[int], list[int]]:
    """[EOS] + the tokenizer's own ids of each document: the validation documents, then the rest."""
    tok = load_tokenizer(out / "tokenizer.json")
    eos = tok.token_to_id("<|endoftext|>")
    streams = [[eos, *tok.encode(doc, add_special_tokens=False).ids] for doc in docs]
    return sum(streams[:VALID], []), sum(streams[VALID:], [])


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


def test_shards_are_the_tokenizers_own_encoding(tmp_path: Path, txt: Path, docs: list[str], capsys) -> None:
    out = tmp_path / "shards"
    assert _make([txt], out) == 0
    valid, train = _expected(out, docs)
    assert _split_tokens(out, "valid").tolist() == valid
    assert _split_tokens(out, "train").tolist() == train
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["eos_position"] == "before"
    assert manifest["eos_id"] == load_tokenizer(out / "tokenizer.json").token_to_id("<|endoftext|>")
    assert manifest["vocab_size"] == 300
    assert manifest["tokens"] == {"valid": len(valid), "train": len(train)}
    assert manifest["total_tokens"] == len(valid) + len(train)
    assert manifest["documents"] == {"valid": VALID, "train": len(docs) - VALID}
    names = manifest["splits"]["train"]
    assert names[0] == "shard_train_000000.bin" and len(names) == -(-len(train) // SHARD)
    assert all(inspect_file(out / n).layout == "llmc" for n in names)
    assert [inspect_file(out / n).n_tokens for n in names[:-1]] == [SHARD] * (len(names) - 1)
    assert "train:" in capsys.readouterr().out


def test_the_shards_corpus_reads_them_back(tmp_path: Path, txt: Path, docs: list[str]) -> None:
    """The reading side: `data.corpus: shards` over the folder, its vocabulary and separator from the manifest."""
    import ablate.data.catalog  # noqa: F401  (registers the shipped corpora)
    from ablate.data.registry import CORPORA

    out = tmp_path / "shards"
    assert _make([txt], out) == 0
    corpus = CORPORA.get("shards").open({"train": "shard_train_*.bin", "valid": "shard_valid_*.bin"}, root=str(out))
    valid, train = _expected(out, docs)
    for split, expected in (("valid", valid), ("train", train)):
        read = np.concatenate([np.asarray(f.tokens()) for f in corpus.files[split]])
        assert read.tolist() == expected, split
    tok = load_tokenizer(out / "tokenizer.json")
    assert corpus.manifest["vocab_size"] == tok.get_vocab_size()
    assert corpus.manifest["eos_id"] == tok.token_to_id("<|endoftext|>")


def test_jobs_do_not_change_the_bytes(tmp_path: Path, txt: Path) -> None:
    assert _make([txt], tmp_path / "one") == 0
    assert _make([txt], tmp_path / "two", "--jobs", 2) == 0
    assert _files(tmp_path / "one") == _files(tmp_path / "two")


class _Killed(BaseException):
    """Stands for a SIGKILL: nothing below the writer catches it."""


@pytest.mark.parametrize("after", [1, 5], ids=["in-valid", "in-train"])
def test_killed_run_resumes_to_the_same_bytes(tmp_path: Path, txt: Path, monkeypatch, after: int) -> None:
    whole = tmp_path / "whole"
    assert _make([txt], whole) == 0
    out = tmp_path / "killed"
    real = tokenize_sink.write_tokens
    written: list[Path] = []

    def write_then_die(path: Path, tokens: np.ndarray) -> Path:
        if len(written) == after:
            path.with_name(f".{path.name}.tmp-99999").write_bytes(b"half a shard")  # the kill, mid-write
            raise _Killed
        written.append(real(path, tokens))
        return written[-1]

    monkeypatch.setattr(tokenize_sink, "write_tokens", write_then_die)
    opts = TokenizeOptions(out=out, inputs=(str(txt),), train_bpe=300, shard_tokens=SHARD, valid_docs=VALID, jobs=1)
    with pytest.raises(_Killed):
        tokenize(opts)
    stopped = json.loads((out / "manifest.json").read_text())
    assert not stopped["complete"] and sum(map(len, stopped["splits"].values())) == after
    assert stopped["resume"]["skip_tokens"] > 0  # it stopped inside a document, which must continue intact
    monkeypatch.setattr(tokenize_sink, "write_tokens", real)
    result = tokenize(opts)
    assert 0 < result.encoded < result.manifest["total_tokens"]  # it resumed, it did not start over
    assert _files(out) == _files(whole)
    assert not list(out.glob(".*.tmp-*"))


def test_a_complete_folder_is_left_alone(tmp_path: Path, txt: Path, capsys) -> None:
    out = tmp_path / "shards"
    assert _make([txt], out) == 0
    before = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    assert _make([txt], out) == 0
    assert {p: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert "complete already" in capsys.readouterr().out


def test_jsonl_parquet_and_loaded_tokenizer_make_the_same_shards(tmp_path: Path, txt: Path, docs: list[str]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    assert _make([txt], tmp_path / "txt") == 0
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "body": d}) + "\n" for i, d in enumerate(docs)), encoding="utf-8")
    parquet = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"body": docs[:60]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"body": docs[60:]}), parquet)
    assert _make([jsonl], tmp_path / "jsonl", "--field", "body") == 0
    assert _make([tmp_path / "a.parquet", parquet], tmp_path / "parquet", "--field", "body") == 0
    loaded = ("--tokenizer", tmp_path / "txt" / "tokenizer.json", "--shard-tokens", SHARD, "--valid-docs", VALID)
    assert _run(txt, "--out", tmp_path / "loaded", *loaded) == 0
    shards = {k: v for k, v in _files(tmp_path / "txt").items() if k.endswith(".bin")}
    for made in ("jsonl", "parquet", "loaded"):
        assert {k: v for k, v in _files(tmp_path / made).items() if k.endswith(".bin")} == shards, made


def test_paragraphs_are_documents(tmp_path: Path) -> None:
    path = tmp_path / "paragraphs.txt"
    path.write_text("one line\nand its second\n\n\nanother document\n", encoding="utf-8")
    out = tmp_path / "shards"
    assert _run(path, "--out", out, "--train-bpe", 260, "--valid-docs", 0, "--txt-docs", "paragraphs") == 0
    tok = load_tokenizer(out / "tokenizer.json")
    expected = [0, *tok.encode("one line\nand its second").ids, 0, *tok.encode("another document").ids]
    assert _split_tokens(out, "train").tolist() == expected
    assert json.loads((out / "manifest.json").read_text())["splits"]["valid"] == []


@pytest.mark.slow  # importing `datasets` alone takes seconds
def test_a_local_dataset_streams(tmp_path: Path, txt: Path, docs: list[str], monkeypatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "hub-like"
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    assert _make([txt], tmp_path / "txt") == 0
    assert _make([], tmp_path / "ds", "--dataset", folder) == 0
    assert _split_tokens(tmp_path / "ds", "train").tolist() == _split_tokens(tmp_path / "txt", "train").tolist()


def _write_bad_files(tmp: Path) -> None:
    (tmp / "notes.md").write_text("x\n")
    (tmp / "no-field.jsonl").write_text('{"text": "fine"}\n{"body": "no text here"}\n')
    (tmp / "broken.json").write_text("{ not json")
    (tmp / "a-file").write_text("")


def _bad_inputs(tmp: Path, txt: Path) -> dict[str, tuple[list[object], str]]:
    """case -> (arguments, what the error line says)"""
    bpe = ["--train-bpe", 300]
    return {
        "missing": ([tmp / "absent.txt", *bpe], "absent.txt: no such file"),
        "extension": ([tmp / "notes.md", *bpe], "unknown input kind '.md'"),
        "jsonl-field": ([tmp / "no-field.jsonl", *bpe], "no-field.jsonl:2: no field 'text'"),
        "tokenizer": ([txt, "--tokenizer", tmp / "broken.json"], "not a tokenizer.json"),
        "no-tokenizer": ([txt], "give --tokenizer PATH"),
        "bpe-size": ([txt, "--train-bpe", 100], "--train-bpe 100"),
        "no-train-docs": ([txt, *bpe, "--valid-docs", 500], "no training documents"),
        "dataset-and-files": ([txt, "--dataset", "x", *bpe], "one of the two"),
        "out-under-a-file": ([txt, *bpe, "--out", tmp / "a-file" / "sub"], "cannot create it"),
        "out-is-a-file": ([txt, *bpe, "--out", tmp / "a-file"], "a file of that name"),
    }


@pytest.mark.parametrize("case", list(_bad_inputs(Path("/nonexistent"), Path("x.txt"))))
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, txt: Path, capsys, case: str) -> None:
    _write_bad_files(tmp_path)
    args, expected = _bad_inputs(tmp_path, txt)[case]
    out = tmp_path / "shards"
    code = _run(*args, "--out", out) if "--out" not in args else _run(*args)
    lines = capsys.readouterr().err.splitlines()  # a progress line ("training a BPE ...") may come first
    assert code == 2
    assert lines and lines[-1].startswith("error: ") and expected in lines[-1], lines
    assert not any(line.startswith("error") for line in lines[:-1])
    assert not out.exists()


@pytest.mark.parametrize("package", ["tokenizers", "pyarrow.parquet", "datasets"])
def test_a_missing_package_says_what_to_install(tmp_path: Path, txt: Path, monkeypatch, capsys, package) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # an import of it then raises ImportError
    (tmp_path / "rows.parquet").write_bytes(b"PAR1")
    inputs = {"pyarrow.parquet": [tmp_path / "rows.parquet"], "datasets": ["--dataset", "HuggingFaceFW/fineweb"]}
    assert _run(*inputs.get(package, [txt]), "--train-bpe", 300, "--out", tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "pip install 'ablate[lm]'" in err, err
    assert not (tmp_path / "o").exists()


def test_a_rerun_with_other_options_is_refused(tmp_path: Path, txt: Path, capsys) -> None:
    out = tmp_path / "shards"
    assert _make([txt], out) == 0
    before = _files(out)
    assert _make([txt], out, "--shard-tokens", SHARD * 2) == 2
    assert "another source (shard_tokens: 400 there, 800 now)" in capsys.readouterr().err
    assert _files(out) == before


@pytest.mark.integration
def test_sigkilled_run_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    """A real SIGKILL of `python -m ablate tokenize` once its first shard is listed; the rerun ends equal."""
    path = tmp_path / "big.txt"
    path.write_text("\n".join(_documents(40_000, seed=1)) + "\n", encoding="utf-8")
    args = [path, "--train-bpe", 400, "--shard-tokens", 20_000, "--valid-docs", 100, "--jobs", 1]
    assert _run(*args, "--out", tmp_path / "whole") == 0
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "ablate", "tokenize", *map(str, args), "--out", str(out)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    manifest = out / "manifest.json"
    deadline = time.monotonic() + 120
    while not manifest.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not json.loads(manifest.read_text())["complete"], "it finished before the kill: give it more text"
    assert _run(*args, "--out", out) == 0
    assert _files(out) == _files(tmp_path / "whole")
