"""The corpus registry and what a corpus declares: its options (``data.args``), splits and how to open it.

This module imports no implementation (and no torch): ablate/data/corpora.py and ablate/data/wmt14.py
import it and register their classes; ablate/data/catalog.py imports them all. A corpus is one class::

    @CORPORA.register("mycorpus")
    class MyCorpus(Corpus):
        '''One line shown by `ablate variants`.'''

        options = {"n_train": Option(int, 1000, "training pairs", minimum=1)}

        @classmethod
        def open(cls, options, **where) -> Corpus:
            at = OpenArgs(**where)  # at.root, at.src_lang, at.tgt_lang, at.cache_dir, at.progress
            ...

``data.args`` is checked against ``options`` when the config is loaded (unknown names with the nearest
valid one, wrong types, values below ``minimum``); ``open`` receives the checked options with defaults,
then the fields of :class:`OpenArgs` as keywords (an ``open`` may also name the ones it reads, e.g.
``*, root, src_lang, tgt_lang, **_where``). :func:`open_corpus` is the one place that calls it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from ablate.data.errors import DataError
from ablate.errors import did_you_mean
from ablate.registry import Registry

SPLITS = ("train", "valid", "test")


class SplitFiles:
    """Option type of a split's files: a prefix (``train`` -> train.en, train.de), [src, tgt], {src, tgt} or
    {text}: one plain-text file, a line a document, for a language model (which reads the target side)."""


@dataclass(frozen=True)
class Option:
    """One entry of ``data.args`` a corpus accepts."""

    type: type  # int, float, bool, str or SplitFiles
    default: Any = None  # value when data.args does not set it (None: absent)
    help: str = ""  # one line for listings
    minimum: float | None = None  # smallest accepted number
    required: bool = False  # data.args must set it


class OptionError(DataError):
    """A ``data.args`` entry is invalid; ``key`` is its full config key (for the config's source lookup)."""

    def __init__(self, key: str, what: str) -> None:
        super().__init__(f"{key}: {what}")
        self.key = key


@dataclass(frozen=True)
class OpenArgs:
    """Where and how a corpus is opened: the keywords ``Corpus.open`` receives after its options."""

    root: str | None  # data.root: a folder of local files, or None
    src_lang: str
    tgt_lang: str
    cache_dir: Path | None  # downloads go under it; None: a corpus that must download refuses
    progress: bool = False  # show download progress

    def keywords(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Corpus(ABC):
    """Named splits of raw (source, target) sentence pairs, streamed.

    A registered subclass declares ``options`` (and ``extra_option`` when any other name is accepted,
    e.g. a split name) and implements the classmethod ``open``.
    """

    name: str
    options: ClassVar[Mapping[str, Option]] = {}
    extra_option: ClassVar[Option | None] = None  # type of data.args names not in ``options``; None: refused
    splits: ClassVar[tuple[str, ...]] = SPLITS  # the splits this corpus provides
    # open() only looks at local files (downloads nothing, reads no text): `ablate sweep` and its dry run
    # open such a corpus before anything runs, so a missing file is one line then, not at the first trial
    opens_offline: ClassVar[bool] = False
    # already tokens (ablate/data/token_corpus.py): a language model reads its ``token_data`` in place,
    # with no tokenizer and nothing prepared
    in_tokens: ClassVar[bool] = False

    @classmethod
    def split_names_for(cls, options: Mapping[str, Any]) -> list[str]:
        """The splits a corpus opened with ``options`` will have (known before opening it)."""
        return list(cls.splits)

    @classmethod
    def open(cls, options: dict[str, Any], **where: Any) -> Corpus:
        """Build the corpus from checked ``options`` (files are located / downloaded here); ``where``: the
        fields of :class:`OpenArgs`, as keywords."""
        raise NotImplementedError(f"{cls.__name__} is not a registered corpus (it has no open())")

    @classmethod
    def contract_options(cls, tmp_dir: Path) -> dict[str, Any] | None:
        """The ``data`` settings of a tiny offline instance, for the corpus contract (ablate/data/contract.py).

        A dict with ``args`` (data.args) and, where needed, ``root``, ``src_lang`` and ``tgt_lang``; write
        any small local files it needs into ``tmp_dir``. None (the default): the contract skips the corpus.
        """
        return None

    @abstractmethod
    def split_names(self) -> list[str]:
        """The splits this corpus provides; always includes train."""

    @abstractmethod
    def identity(self, cache_dir: Path) -> dict[str, Any]:
        """What determines the pairs (content hashes or generator settings): part of the cache key."""

    @abstractmethod
    def pairs(self, split: str) -> Iterator[tuple[str, str]]:
        """Stream the pairs of ``split``, validated."""

    def describe(self) -> str:
        return self.name


CORPORA: Registry[type[Corpus]] = Registry(
    "corpus", "corpora: sentence pairs, plain text or token shards (data.corpus; options in data.args)"
)


def open_corpus(name: str, cls: type[Corpus], args: Mapping[str, Any], where: OpenArgs) -> Corpus:
    """Open ``cls`` (registered as ``name``) at ``where`` with ``args`` checked and completed (OptionError)."""
    return cls.open(resolve_options(name, cls, args), **where.keywords())


def resolve_options(name: str, cls: type[Corpus], args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` checked against ``cls.options`` and completed with their defaults; errors are OptionErrors."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        option = cls.options.get(key, cls.extra_option)
        if option is None:
            valid = sorted(cls.options)
            close = did_you_mean(key, valid)
            hint = f"; did you mean {close}?" if close else f" (valid: {', '.join(valid) or 'none'})"
            raise OptionError(f"data.args.{key}", f"not an option of the {name} corpus{hint}")
        _check_value(f"data.args.{key}", option, value)
        out[key] = value
    for key, option in cls.options.items():
        if key in out:
            continue
        if option.required:
            unknown = [k for k in args if k not in cls.options]
            close = did_you_mean(key, unknown)
            hint = f" (data.args.{close} is not one; a typo?)" if close else ""
            raise OptionError(f"data.args.{key}", f"the {name} corpus needs this option{hint}")
        if option.default is not None:
            out[key] = option.default
    return out


def _check_value(key: str, option: Option, value: Any) -> None:
    kind = option.type
    if kind is SplitFiles:
        ok = isinstance(value, str) or (
            isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, str) for v in value)
        )
        ok = ok or (isinstance(value, Mapping) and set(value) in ({"src", "tgt"}, {"text"}))
        if not ok:
            what = (
                "give a file prefix, [source file, target file], {src: ..., tgt: ...} or, for a language model, "
                f"{{text: FILE}} (one plain-text file); got {value!r}"
            )
            raise OptionError(key, what)
        return
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise OptionError(key, f"must be {'an' if kind is int else 'a'} {kind.__name__}, got {value!r}")
    if option.minimum is not None and value < option.minimum:
        raise OptionError(key, f"must be >= {option.minimum:g}, got {value!r}")
