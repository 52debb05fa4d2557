"""A user-defined variant: rotary position embeddings (RoPE, Su et al. 2021) in one registered class.

Nothing in ablate changes to add it. A sweep file lists this module under ``imports:`` (the sweep
file's folder is searched first) and a row selects it with ``model.positional=rope``::

    imports: [rope]
    rows:
      - {name: rope, group: E, overrides: [model.positional=rope]}

RoPE adds nothing to the embeddings; it rotates each pair of query/key features by an angle
proportional to the position, so attention scores depend on relative positions only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ablate.model.positional import POSITIONAL, PositionalEncoding


@POSITIONAL.register("rope")
class Rotary(PositionalEncoding):
    """Rotary position embedding on self-attention queries and keys (Su et al., 2021)."""

    rotates_qk = True

    def __init__(self, d_k: int, max_positions: int = 1024, base: float = 10000.0) -> None:
        super().__init__()
        if d_k % 2:
            raise ValueError(f"rope needs an even d_k, got {d_k}")
        inv_freq = base ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
        angles = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)  # [P, K/2]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    @staticmethod
    def num_params(**_: object) -> int:
        return 0

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        t = x.shape[-2]
        cos, sin = self.cos[offset : offset + t].to(x.dtype), self.sin[offset : offset + t].to(x.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # [B, H, T, K/2] each
        out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        return out.flatten(-2)
