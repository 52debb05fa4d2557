"""What a sweep's checks and controller read of a trial's data without preparing it: whether a local
corpus's files are there (before anything runs), and the dev references and unigram floor of data
already prepared here (the adaptive-seeds controller's gates, as the table computes them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ablate.data.catalog import CORPORA, build_corpus
from ablate.data.prepare import cache_root, find_prepared


def missing_files(data: Mapping[str, Any]) -> str | None:
    """Why a corpus that opens offline (``opens_offline``: local files only) cannot be opened with the
    data section ``data`` (a missing file, a wrong data.root), or None; other corpora are not opened."""
    from ablate.data.errors import DataError

    if not CORPORA.get(str(data.get("corpus"))).opens_offline:
        return None
    cache = cache_root(data.get("cache_dir"))
    try:
        corpus = build_corpus(
            str(data["corpus"]),
            dict(data.get("args") or {}),
            data.get("root"),
            str(data.get("src_lang")),
            str(data.get("tgt_lang")),
            cache,
        )
        if corpus.in_tokens:  # its ids against data.vocab_size and its separator (a scan per file, cached)
            corpus.token_data(int(data["vocab_size"]), data.get("eos_id"), cache, int(data["max_tokens"]))
    except DataError as exc:
        return str(exc)
    return None


def dev_references(config: Any) -> list[str] | None:
    """The target side of a trial's dev split, raw, from its prepared data (its ``data`` section as a mapping);
    None when that data is not prepared here or cannot be read (as :func:`floor_of`)."""
    from omegaconf import OmegaConf

    data = dict(config.get("data") or {})
    try:
        prepared = find_prepared(OmegaConf.create(data))
        return list(prepared.raw(str(data.get("valid_split") or "valid"), "tgt")) if prepared is not None else None
    except Exception:  # noqa: BLE001 - no references: nothing is withheld, as the table does without them
        return None


def floor_of(config: Any, floor: Callable[[Any, str], float]) -> float | None:
    """The unigram floor on a trial's dev split, from its prepared data, as ``floor(prepared, split)``
    gives it (its kind of model's: ``family_of(config).unigram_floor``); None when that data is not
    prepared here (a controller on a login node) or cannot be read."""
    from omegaconf import OmegaConf

    data = dict(config.get("data") or {})
    try:
        prepared = find_prepared(OmegaConf.create(data))
        return floor(prepared, str(data.get("valid_split") or "valid")) if prepared is not None else None
    except Exception:  # noqa: BLE001 - no floor: nothing is withheld, as the table does without one
        return None
