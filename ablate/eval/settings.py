"""The search settings: one object built once from ``cfg.eval`` and handed to every decoder.

Vaswani et al. 2017, section 6.1: beam 4, length penalty alpha = 0.6, maximum output length = source
length + 50 (``max_len_a * source length + max_len_b``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ablate.data.special import BOS_ID, EOS_ID

__all__ = ["BOS_ID", "EOS_ID", "DecodeSettings"]


@dataclass(frozen=True)
class DecodeSettings:
    """How to search: beam width (1 = greedy), GNMT length penalty, length limit, decoding batch."""

    beam_size: int = 4  # beam width; 1 = greedy search
    alpha: float = 0.6  # GNMT length penalty exponent: score = logprob / ((5 + |Y|) / 6)^alpha
    max_len_a: float = 1.0  # at most floor(max_len_a * source length + max_len_b) tokens, EOS included
    max_len_b: int = 50  # see max_len_a (the paper: source length + 50)
    batch_size: int = 64  # sentences per decoding batch
    bos_id: int = BOS_ID  # first decoder input
    eos_id: int = EOS_ID  # ends a hypothesis

    def __post_init__(self) -> None:
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {self.beam_size}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    @classmethod
    def from_config(cls, eval_cfg: Any, *, beam_size: int | None = None) -> DecodeSettings:
        """From a config's ``eval`` section (``beam_size`` overrides its beam, e.g. ``ablate eval --beam``)."""
        return cls(
            beam_size=int(beam_size if beam_size is not None else eval_cfg.beam_size),
            alpha=float(eval_cfg.length_penalty),
            max_len_a=float(eval_cfg.max_len_a),
            max_len_b=int(eval_cfg.max_len_b),
            batch_size=int(eval_cfg.batch_size),
        )

    def replace(self, **changes: Any) -> DecodeSettings:
        return dataclasses.replace(self, **changes)
