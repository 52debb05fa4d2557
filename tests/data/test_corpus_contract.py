"""The corpus contract (ablate/data/contract.py) over every registered corpus, and its ability to catch
broken plugin corpora. A corpus registered anywhere is covered here with no new test code."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ablate.data.catalog import CORPORA
from ablate.data.contract import CHECKS, ContractError, corpus_case, run_check, run_contract
from ablate.data.registry import Corpus, Option


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("name", CORPORA.names())
def test_every_corpus_keeps_the_contract(name: str, check: str, tmp_path: Path) -> None:
    case = corpus_case(name, tmp_path)
    if case is None:
        pytest.skip(f"corpus {name}: no contract_options")
    CHECKS[check](case)


class _Plugin(Corpus):
    """A user's corpus: three pairs per split, built in memory (subclasses break one thing)."""

    name = "plugin"
    src = ["a b", "c d", "e f"]
    tgt = ["A B", "C D", "E F"]

    @classmethod
    def open(cls, options: dict[str, Any], **where: Any) -> Corpus:
        return cls()

    @classmethod
    def contract_options(cls, tmp_dir: Path) -> dict[str, Any]:
        return {"args": {}}

    def split_names(self) -> list[str]:
        return ["train", "valid", "test"]

    def identity(self, cache_dir: Path) -> dict[str, Any]:
        return {"corpus": self.name}

    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        return iter(zip(self.src, self.tgt))


class _Misaligned(_Plugin):
    """Zips sides of different lengths without noticing: the last source has no target."""

    src = ["a b", "c d", "e f", "g h"]

    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        from itertools import zip_longest

        return iter(zip_longest(self.src, self.tgt))  # type: ignore[arg-type]


class _Shuffled(_Plugin):
    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        pairs = list(zip(self.src, self.tgt))
        random.shuffle(pairs)
        return iter(pairs)


class _Lenient(_Plugin):
    extra_option = Option(dict, help="takes anything")


class _NoTrain(_Plugin):
    def split_names(self) -> list[str]:
        return ["valid", "test"]


class _Unprepared(_Plugin):
    @classmethod
    def contract_options(cls, tmp_dir: Path) -> None:
        return None


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch):
    def add(name: str, cls: type[Corpus]) -> str:
        monkeypatch.setitem(CORPORA._entries, name, cls)
        return name

    return add


def test_a_misaligned_plugin_fails_with_a_clear_line(register, tmp_path: Path) -> None:
    name = register("misaligned-test", _Misaligned)
    with pytest.raises(ContractError, match=r"pair 3 of split train: the target is None, not a str"):
        CHECKS["aligned"](corpus_case(name, tmp_path))
    results = {r.check: r for r in run_contract([name])}
    assert not results["aligned"].ok and results["splits"].ok and results["unknown_option"].ok
    assert results["aligned"].line() == (
        "FAIL  corpus=misaligned-test aligned          "
        "pair 3 of split train: the target is None, not a str (the two sides are not aligned?)"
    )


@pytest.mark.parametrize(
    ("cls", "check", "message"),
    [
        (_Shuffled, "deterministic", "two opens differ at pair"),
        (_Lenient, "unknown_option", "an unknown option data.args.contract_unknown_option was accepted silently"),
        (_NoTrain, "splits", "the opened corpus has no train split (it has: valid, test)"),
    ],
)
def test_broken_plugins_fail_the_check_they_break(register, tmp_path: Path, cls, check: str, message: str) -> None:
    random.seed(0)
    result = run_check(register("broken-test", cls), check, tmp_path)
    assert result.status == "FAIL" and result.message.startswith(message), result.line()


def test_a_corpus_without_contract_options_is_skipped(register) -> None:
    results = run_contract([register("unprepared-test", _Unprepared)])
    assert [r.status for r in results] == ["SKIP"] * len(CHECKS)
    assert results[0].line() == "SKIP  corpus=unprepared-test splits           no contract_options"


def test_a_good_plugin_passes(register) -> None:
    assert all(r.status == "PASS" for r in run_contract([register("plugin-test", _Plugin)]))


CORPUS_PLUGIN = '''
"""A plugin corpus: good pairs for train, misaligned ones (an empty target) for test."""
from ablate.data.registry import CORPORA, Corpus


@CORPORA.register("tiny_pairs")
class TinyPairs(Corpus):
    """Two pairs per split, the test split misaligned."""

    name = "tiny_pairs"

    @classmethod
    def open(cls, options, **where):
        return cls()

    @classmethod
    def contract_options(cls, tmp_dir):
        return {"args": {}}

    def split_names(self):
        return ["train", "valid", "test"]

    def identity(self, cache_dir):
        return {"corpus": self.name}

    def pairs(self, split):
        yield "a dog", "ein Hund"
        yield "a cat", "" if split == "test" else "eine Katze"
'''


def test_check_variants_runs_the_corpus_contract_on_a_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from ablate.cli import main

    monkeypatch.setattr(CORPORA, "_entries", dict(CORPORA._entries))
    monkeypatch.setattr(CORPORA, "_docs", dict(CORPORA._docs))
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "corpus_plugin.py").write_text(CORPUS_PLUGIN, encoding="utf-8")
    try:
        rc = main(["check-variants", str(tmp_path / "corpus_plugin.py")])
    finally:
        sys.modules.pop("corpus_plugin", None)
    out = capsys.readouterr().out.splitlines()
    assert rc == 1, out
    assert out[:4] == [
        "PASS  corpus=tiny_pairs   splits",
        "FAIL  corpus=tiny_pairs   aligned          pair 1 of split test: the target is empty "
        "(the two sides are not aligned?)",
        "PASS  corpus=tiny_pairs   deterministic",
        "PASS  corpus=tiny_pairs   unknown_option",
    ]
    assert out[-1] == "4 checks on 1 corpus(es): 1 failed"
