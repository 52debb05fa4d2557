"""The contract every registered corpus must keep, as plain functions (no torch, no pytest).

tests/data parametrizes over ``CHECKS`` x every registered corpus; ``ablate check-variants MODULE``
runs the same checks on the corpora a user module registers (ablate/variants_cli.py). Each check opens
the tiny offline instance the corpus describes with :meth:`Corpus.contract_options` (a corpus without
one is skipped: "no contract_options") and raises :class:`ContractError` (one line) when it breaks:

- ``splits``: the opened corpus has train, its splits are the ones ``split_names_for`` declares
  (what a config is checked against), and every one yields pairs
- ``aligned``: every pair is (source, target), both a non-empty ``str`` (a side that runs out, a
  ``None`` or an empty string means the two sides are not aligned)
- ``deterministic``: two opens give the same first pairs of every split and the same ``identity``
- ``unknown_option``: an unknown ``data.args`` key is refused with an error that names it
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from ablate.data.registry import CORPORA, Corpus, OpenArgs, open_corpus, resolve_options
from ablate.errors import ContractError

MAX_PAIRS = 10_000  # pairs read per split (a plugin's contract instance may not be tiny)
FIRST = 20  # pairs compared by ``deterministic``
UNKNOWN = "contract_unknown_option"


@dataclass(frozen=True)
class CorpusCase:
    """A registered corpus and the ``data`` settings of its tiny instance (from ``contract_options``)."""

    name: str
    cls: type[Corpus]
    setup: dict[str, Any]
    tmp_dir: Path

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.setup.get("args") or {})

    def open(self, args: dict[str, Any] | None = None) -> Corpus:
        """A fresh instance, opened the way build_corpus opens one (checked options, then ``open``)."""
        return open_corpus(self.name, self.cls, self.args if args is None else args, self.where())

    def where(self) -> OpenArgs:
        s = self.setup
        return OpenArgs(s.get("root"), s.get("src_lang", "en"), s.get("tgt_lang", "de"), self.tmp_dir / "cache")


def corpus_case(name: str, tmp_dir: Path) -> CorpusCase | None:
    """The contract case of corpus ``name`` (its files written into ``tmp_dir``); None: no contract_options."""
    cls = CORPORA.get(name)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    setup = cls.contract_options(tmp_dir)
    if setup is None:
        return None
    if not isinstance(setup, dict) or not set(setup) <= {"args", "root", "src_lang", "tgt_lang"}:
        raise ContractError(f"contract_options gave {setup!r}; give a dict of args, root, src_lang, tgt_lang")
    return CorpusCase(name, cls, setup, tmp_dir)


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise ContractError(what)


def check_splits(case: CorpusCase) -> None:
    corpus = case.open()
    opened = list(corpus.split_names())
    declared = list(case.cls.split_names_for(resolve_options(case.name, case.cls, case.args)))
    _require("train" in opened, f"the opened corpus has no train split (it has: {', '.join(opened) or 'none'})")
    _require(
        sorted(opened) == sorted(declared),
        f"split_names_for declares {declared} but the opened corpus has {opened} (configs are checked on the first)",
    )
    for split in opened:
        _require(next(iter(corpus.pairs(split)), None) is not None, f"split {split} yields no pairs")


def check_aligned(case: CorpusCase) -> None:
    corpus = case.open()
    for split in corpus.split_names():
        for i, pair in enumerate(islice(corpus.pairs(split), MAX_PAIRS)):
            where = f"pair {i} of split {split}"
            _require(
                isinstance(pair, tuple | list) and len(pair) == 2,
                f"{where} is {_short(pair)}, not a (source, target) pair",
            )
            for side, text in zip(("source", "target"), pair):
                _require(
                    isinstance(text, str),
                    f"{where}: the {side} is {_short(text)}, not a str (the two sides are not aligned?)",
                )
                _require(bool(text.strip()), f"{where}: the {side} is empty (the two sides are not aligned?)")


def check_deterministic(case: CorpusCase) -> None:
    first, second = case.open(), case.open()
    for split in first.split_names():
        a, b = list(islice(first.pairs(split), FIRST)), list(islice(second.pairs(split), FIRST))
        for i, (x, y) in enumerate(zip(a, b)):
            _require(x == y, f"two opens differ at pair {i} of split {split}: {_short(x)} vs {_short(y)}")
        _require(len(a) == len(b), f"two opens give {len(a)} and {len(b)} first pairs of split {split}")
    ids = [json.dumps(c.identity(case.tmp_dir / "cache"), sort_keys=True, default=repr) for c in (first, second)]
    _require(ids[0] == ids[1], f"two opens give different identity() (the cache key): {ids[0][:80]} vs {ids[1][:80]}")


def check_unknown_option(case: CorpusCase) -> None:
    # {..} is no option type's value: a corpus that takes any name (extra_option) must still refuse it
    args = {**case.args, UNKNOWN: {"not": "an option"}}
    try:
        case.open(args)
    except Exception as exc:  # noqa: BLE001 - any error will do, if it names the key
        _require(UNKNOWN in str(exc), f"data.args.{UNKNOWN} was refused without naming it: {_first_line(exc)}")
        return
    raise ContractError(f"an unknown option data.args.{UNKNOWN} was accepted silently")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


CHECKS: dict[str, Callable[[CorpusCase], None]] = {
    "splits": check_splits,
    "aligned": check_aligned,
    "deterministic": check_deterministic,
    "unknown_option": check_unknown_option,
}


@dataclass(frozen=True)
class CheckResult:
    name: str
    check: str
    status: str  # PASS | FAIL | SKIP
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "FAIL"

    def line(self) -> str:
        return f"{self.status}  corpus={self.name:<12} {self.check:<16} {self.message}".rstrip()


def run_check(name: str, check: str, tmp_dir: Path) -> CheckResult:
    """One check on corpus ``name`` (its files under ``tmp_dir``); an exception is a failure, not a crash."""
    try:
        case = corpus_case(name, tmp_dir)
        if case is None:
            return CheckResult(name, check, "SKIP", "no contract_options")
        CHECKS[check](case)
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; report it as one line
        prefix = "" if isinstance(exc, ContractError) else f"{type(exc).__name__}: "
        return CheckResult(name, check, "FAIL", prefix + _first_line(exc))
    return CheckResult(name, check, "PASS")


def run_contract(names: Iterable[str], checks: Iterable[str] | None = None) -> list[CheckResult]:
    """Run ``checks`` (default: all) on each registered corpus, each in a fresh temporary folder."""
    results = []
    for name in names:
        for check in checks if checks is not None else CHECKS:
            with tempfile.TemporaryDirectory(prefix=f"ablate-contract-{name}-") as tmp:
                results.append(run_check(name, check, Path(tmp)))
    return results
