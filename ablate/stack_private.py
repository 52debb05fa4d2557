"""The stack's private APIs that ablate still uses, each behind one function, on tested versions only.

Each is used because the public route costs what a user would feel, measured:

- Optuna's storage id of a trial (``FrozenTrial._trial_id``): the public route,
  ``storage.get_trial_id_from_study_id_trial_number``, is one query a trial, 10,000 per read of a
  10,000-trial sweep, where a controller pass takes 28 ms in all.
- OmegaConf's child node (``DictConfig._get_node``): ``cfg[key]`` gives the value, and an optional
  section left unset reads as None, losing the schema type that the unknown-key check walks.
- torch.compile's recompile limit (``torch._dynamo.config.recompile_limit``, 8 a function by default):
  ``train.cuda_graphs`` compiles one static-shape graph per bucketed batch shape, a few dozen on
  Multi30k and a few hundred on WMT-sized data, and past the limit every new shape would run eager
  with only a log line. PyTorch has no public setting for it.
- sacreBLEU's sentence statistics (``_extract_corpus_statistics``, ``_compute_score_from_stats``): its
  paired bootstrap reports no interval of the difference; computing one from its own resamples needs
  the statistics it extracted, and recomputing them would tokenize every hypothesis a second time.

:func:`check_version` runs once per library: on a version other than those tested it warns once,
naming the pin to use, before the private name is touched. ``tests/test_stack_private.py`` compares
each function with the public route on real objects, so an upgrade that changes one fails there first.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Sequence
from typing import Any

TESTED = {"optuna": "5.", "omegaconf": "2.", "sacrebleu": "2.", "torch": "2."}  # version prefixes the tests ran on


@functools.cache
def check_version(lib: str) -> bool:
    """Whether ``lib`` is a version ablate's use of its private API was tested with; warns once if not.
    Read from the module (imported by then): ``importlib.metadata`` would add 32 ms to every command."""
    version = str(getattr(importlib.import_module(lib), "__version__", "unknown"))
    if version.startswith(TESTED[lib]):
        return True
    warnings.warn(
        f"ablate uses a private API of {lib} tested with {lib} {TESTED[lib]}x only, and {version} is installed: "
        f"if ablate fails in {lib}, install {lib}=={TESTED[lib]}*",
        stacklevel=3,
    )
    return False


def optuna_trial_id(trial: Any) -> int:
    """The storage id of an Optuna trial (a FrozenTrial or a Trial): the key of its row in the store."""
    check_version("optuna")
    return int(trial._trial_id)  # noqa: SLF001 - see the module doc


def omegaconf_node(cfg: Any, key: str) -> Any:
    """The child node of a DictConfig at ``key``, typed as its schema declares it (see the module doc)."""
    check_version("omegaconf")
    return cfg._get_node(key)  # noqa: SLF001 - see the module doc


def bleu_from_stats(metric: Any, stats: Any) -> Any:
    """sacreBLEU's score of summed sentence statistics (a BLEUScore; ``.score`` is the BLEU)."""
    check_version("sacrebleu")
    return metric._compute_score_from_stats(stats)  # noqa: SLF001 - see the module doc


def recording_bleu() -> type:
    """sacreBLEU's BLEU, keeping the sentence statistics its paired test extracts (``statistics``
    returns them for the very list of hypotheses), so they are not computed a second time."""
    check_version("sacrebleu")
    from sacrebleu.metrics import BLEU

    class RecordingBLEU(BLEU):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._seen: list[tuple[Sequence[str], Any]] = []

        def _extract_corpus_statistics(self, hypotheses: Sequence[str], references: Any) -> Any:
            stats = super()._extract_corpus_statistics(hypotheses, references)
            if references is None:  # scored against the cached references, as every call here is
                self._seen.append((hypotheses, stats))
            return stats

        def statistics(self, hypotheses: Sequence[str]) -> Any:
            """Sentence statistics of ``hypotheses`` (this very list) against the cached references."""
            for seen, stats in self._seen:
                if seen is hypotheses:
                    return stats
            return super()._extract_corpus_statistics(hypotheses, None)

    return RecordingBLEU


def raise_recompile_limit(at_least: int) -> int:
    """torch.compile's per-function recompile limit raised to ``at_least`` (never lowered); returns it."""
    check_version("torch")
    import torch._dynamo.config as dynamo_config  # noqa: PLC2701 - see the module doc

    name = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"
    setattr(dynamo_config, name, max(int(getattr(dynamo_config, name)), int(at_least)))
    return int(getattr(dynamo_config, name))
