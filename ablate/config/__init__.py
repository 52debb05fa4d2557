"""Configuration, one room: what a run is made of, from the YAML to the typed section the builders read.

- :mod:`ablate.config.schema`: the dataclasses (every key, its default and a one-line comment);
- :mod:`ablate.config.load`: layers (defaults <- experiment file <- sweep row <- command line) merged
  and checked once; :class:`ConfigError` names the key and the layer that set it;
- :mod:`ablate.config.check`: the checks across keys and sections (values, corpora, length limits);
- :mod:`ablate.config.variants`: the torch-free catalogue of the built-in model variants;
- :mod:`ablate.config.size`: slots, parameter counts and FLOPs in closed form (no torch).

This package imports neither torch nor Lightning, so ``status``, ``table`` and dry runs stay fast.
"""

from __future__ import annotations

from ablate.config.load import (
    ConfigError,
    default_config,
    from_dict,
    load_config,
    merge_layer,
    model_section,
    parse_dotlist,
    read_yaml,
    save_config,
    to_dict,
)
from ablate.config.schema import Config, ModelConfig, enc_dec_layers, head_dims

__all__ = [
    "Config",
    "ConfigError",
    "ModelConfig",
    "default_config",
    "enc_dec_layers",
    "from_dict",
    "head_dims",
    "load_config",
    "merge_layer",
    "model_section",
    "parse_dotlist",
    "read_yaml",
    "save_config",
    "to_dict",
]
