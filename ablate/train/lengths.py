"""Lengths the data asks of the positional encoding, checked before training starts.

The config loader keeps ``model.max_positions`` above every length ``data.max_len`` lets into training,
but dev and test sentences are kept whole (a dev set is never filtered), and the decoder may generate up
to ``eval.max_len_a * source length + eval.max_len_b`` tokens. An encoding with a fixed table of
positions (``learned``, or a plugin's) fails on a longer sequence at the first validation, and again at
every retry; so the prepared splits are measured here, once, and a shortfall is one ConfigError naming the
split, its longest sentence and the setting to change.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from ablate.config.schema import positions_needed
from ablate.errors import ConfigError


def positions_for_split(cfg: DictConfig, prepared: Any, split: str) -> tuple[int, int, int]:
    """(positions needed, longest source, longest target) of a prepared split, decoding included."""
    shard = prepared.split(split)
    if not len(shard):
        return 0, 0, 0
    src, tgt = int(shard.src_lengths.max()), int(shard.tgt_lengths.max())
    train, decode = positions_needed(src, float(cfg.eval.max_len_a), int(cfg.eval.max_len_b))
    return max(train, tgt + 1, decode), src, tgt


def check_positions(cfg: DictConfig, prepared: Any, model: Any) -> None:
    """ConfigError if a dev/test sentence (or its translation's length limit) needs more positions than a
    positional encoding of ``model`` that cannot extrapolate has."""
    from ablate.model.positional import fixed_positions

    fixed = fixed_positions(model)
    if not fixed:
        return
    limit = int(cfg.model.max_positions)
    splits = [str(cfg.data.valid_split)] + ([str(cfg.data.test_split)] if cfg.eval.test else [])
    for split in splits:
        need, src, tgt = positions_for_split(cfg, prepared, split)
        if need > limit:
            raise ConfigError(
                f"data split {split!r}: its longest sentence ({src} source / {tgt} target subwords) needs {need} "
                f"positions with decoding (eval.max_len_a * {src + 1} + eval.max_len_b), but model.max_positions="
                f"{limit} and {', '.join(fixed)} cannot go past it; set model.max_positions={need} "
                "(or lower eval.max_len_a / eval.max_len_b)"
            )
