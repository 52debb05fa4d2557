"""A user-defined variant: the paper's sinusoids times one learned scalar, in one registered class.

Nothing in ablate changes to add it. A sweep file lists this module under ``imports:`` (the sweep
file's folder is searched first) and a row selects it with ``model.positional=scaled_sinusoidal``::

    imports: [scaled_sinusoidal]
    rows:
      - {name: scaled sinusoids, group: E, overrides: [model.positional=scaled_sinusoidal]}

Check it against the contract every built-in variant keeps, and see it listed::

    ablate check-variants examples/scaled_sinusoidal.py
    ablate variants --imports examples/scaled_sinusoidal.py
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ablate.model.positional import POSITIONAL, PositionalEncoding, sinusoid_table


@POSITIONAL.register("scaled_sinusoidal")
class ScaledSinusoidal(PositionalEncoding):
    """Sinusoids times a learned scalar, so the model sets their weight (Hua et al. 2022, FLASH)."""

    def __init__(self, d_model: int, max_positions: int = 1024) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.register_buffer("table", sinusoid_table(max_positions, d_model), persistent=False)

    @staticmethod
    def num_params(d_model: int, max_positions: int = 1024) -> int:
        return 1

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return x + self.scale * self.table[offset : offset + x.size(1)].to(x.dtype)
