"""Every corpus ablate ships, registered, and the two things done with a corpus name: check, open.

Importing this module fills :data:`CORPORA` (ablate/data/corpora.py and ablate/data/wmt14.py register
into ablate/data/registry.py, which imports neither). It imports no torch: the config loader uses
:func:`check_corpus` to reject bad ``data.args`` when a config is loaded, cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ablate.data import corpora, token_corpus, wmt14  # noqa: F401 - importing them registers their corpora
from ablate.data.registry import CORPORA, Corpus, OpenArgs, OptionError, open_corpus, resolve_options

__all__ = ["CORPORA", "build_corpus", "check_corpus"]


def check_corpus(name: str, args: Mapping[str, Any], splits: Mapping[str, str]) -> None:
    """Check a corpus name (RegistryError), its ``data.args`` and the named splits (OptionError).

    ``splits`` maps a config key to the split it names, e.g. ``{"data.valid_split": "valid"}``.
    """
    cls = CORPORA.get(name)
    options = resolve_options(name, cls, args)
    have = cls.split_names_for(options)
    for key, split in splits.items():
        if split not in have:
            raise OptionError(key, f"corpus {name} has no split {split!r} (has: {', '.join(have)})")


def build_corpus(name: str, args: Mapping[str, Any], *where: Any, **keywords: Any) -> Corpus:
    """Open corpus ``name`` (unknown -> RegistryError listing the corpora) with ``args`` and their defaults.

    ``where`` and ``keywords``: the fields of :class:`OpenArgs` (root, src_lang, tgt_lang, cache_dir,
    progress), in that order or by name.
    """
    at = OpenArgs(*where, **keywords)
    return open_corpus(name, CORPORA.get(name), args, at)
