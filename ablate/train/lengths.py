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
    from ablate.model.positional import PositionalEncoding

    if cfg.model.arch == "decoder":  # a language model: its training block is checked at load, longer
        return  # evaluation lengths are reported as out of reach (ablate.eval.lm_eval), not refused
    fixed = sorted(
        {type(m).__name__ for m in model.modules() if isinstance(m, PositionalEncoding) and not m.extrapolates}
    )
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


def check_blocks(cfg: Any) -> None:
    """A language model's splits each hold one training block (a DataError, one line, otherwise; the data
    is prepared, and cached, for it). Nothing to check for the translator."""
    if cfg.model.arch != "decoder":
        return
    from ablate.data.lm_blocks import split_blocks
    from ablate.data.prepare import prepare_data

    prepared = prepare_data(cfg.data, progress=cfg.logging.progress_bar)
    splits = ["train", str(cfg.data.valid_split)] + ([str(cfg.data.test_split)] if cfg.eval.test else [])
    for split in splits:
        split_blocks(prepared.split(split), int(cfg.data.block_size), split)
