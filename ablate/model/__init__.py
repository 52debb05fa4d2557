"""The paper's encoder-decoder Transformer (Vaswani et al. 2017, section 3) and its swappable parts.

Importing this package fills the model registries (``positional``, ``attention``, ``norm``, ``ffn``,
``residual``) and never imports Lightning. Entry points: :func:`build_model` (ablate/model/build.py,
the only code that builds from the ``model`` config section) and, re-exported from their one home
(ablate/config/size.py, torch-free), :func:`count_parameters` and :func:`train_flops`; all three take
the section as ``ablate.config.model_section`` gives it. The registries are defined in their slot's module;
ablate/model/slots.py maps slot kinds to them; ablate/model/contract.py checks any registered variant.
"""

from __future__ import annotations

from ablate.config.size import count_parameters, train_flops
from ablate.model.attention import ATTENTION, Attention, MultiHeadAttention
from ablate.model.build import build_model
from ablate.model.ffn import FFN, ReluFFN
from ablate.model.norm import NORM, LayerNorm
from ablate.model.positional import POSITIONAL, LearnedPositional, PositionalEncoding, SinusoidalPositional
from ablate.model.residual import RESIDUAL, Residual
from ablate.model.slots import SLOT_REGISTRIES
from ablate.model.transformer import DecoderCache, DecoderLayer, EncoderLayer, Transformer

__all__ = [
    "ATTENTION",
    "FFN",
    "NORM",
    "POSITIONAL",
    "RESIDUAL",
    "SLOT_REGISTRIES",
    "Attention",
    "DecoderCache",
    "DecoderLayer",
    "EncoderLayer",
    "LayerNorm",
    "LearnedPositional",
    "MultiHeadAttention",
    "PositionalEncoding",
    "ReluFFN",
    "Residual",
    "SinusoidalPositional",
    "Transformer",
    "build_model",
    "count_parameters",
    "train_flops",
]
