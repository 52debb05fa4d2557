"""ablate: architecture ablations of Transformers (encoder-decoder translators and decoder-only language models).

Public API (kept import-light: torch and Lightning load only when used)::

    cfg = ablate.load_config("experiments/base.yaml", overrides=["model.n_heads=4"])
    model = ablate.build_model(cfg.model, vocab_size=37000)
"""

from __future__ import annotations

from typing import Any

import ablate.families  # noqa: F401  (registers the built-in model families; torch-free, light)
from ablate.registry import Registry, RegistryError

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``ablate.load_config`` / ``ablate.ConfigError`` load OmegaConf on first use, not with ``import
    ablate`` (every ``ablate`` command imports this package; ``ablate --help`` needs no config)."""
    if name in ("load_config", "ConfigError"):
        import ablate.config

        return getattr(ablate.config, name)
    raise AttributeError(f"module 'ablate' has no attribute {name!r}")


__all__ = ["ConfigError", "Registry", "RegistryError", "build_model", "count_parameters", "load_config"]


def build_model(model_cfg: Any, vocab_size: int, pad_id: int = 0) -> Any:
    """Build the Transformer a ``model`` config section describes (``cfg.model``, a ModelConfig or a
    stored mapping; see ablate.model.build)."""
    from ablate.config import model_section
    from ablate.model.build import build_model as _build

    return _build(model_section(model_cfg), vocab_size=vocab_size, pad_id=pad_id)


def count_parameters(model_cfg: Any, vocab_size: int) -> int:
    """Closed-form parameter count of ``model_cfg`` without allocating the model."""
    from ablate.config import model_section
    from ablate.config.size import count_parameters as _count

    return _count(model_section(model_cfg), vocab_size=vocab_size)
