"""The model's slot kinds and their registries; how a slot is resolved, checked and counted.

:data:`SLOT_REGISTRIES` maps each slot kind of the ``model`` section to the registry its module
defines. Resolving, checking and counting a slot needs no torch and lives in ablate/config/size.py
(re-exported here): the config loader and the dry run use it before, or without, importing this package.
"""

from __future__ import annotations

from typing import Any

from ablate.config.size import Slot, check_slot, keywords, lookup_slot, model_slots
from ablate.model.attention import ATTENTION
from ablate.model.ffn import FFN
from ablate.model.norm import NORM
from ablate.model.positional import POSITIONAL
from ablate.model.residual import RESIDUAL
from ablate.registry import Registry

SLOT_REGISTRIES: dict[str, Registry[Any]] = {
    "positional": POSITIONAL,
    "attention": ATTENTION,
    "norm": NORM,
    "ffn": FFN,
    "residual": RESIDUAL,
}

__all__ = ["SLOT_REGISTRIES", "Slot", "check_slot", "keywords", "lookup_slot", "model_slots"]
