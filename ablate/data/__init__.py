"""ablate.data: corpora, the shared SentencePiece vocabulary, binarized shards, token-bucketed batches.

``prepare_data(data_cfg)`` (ablate/data/prepare.py) turns a corpus into a cached prepared folder;
``CorpusDataModule`` (ablate/data/datamodule.py, the only module here that imports Lightning)
serves it to a Trainer. Corpora register in ablate/data/registry.py (torch-free; ablate/data/catalog.py
imports every shipped corpus). Names are resolved lazily so importing ablate.data stays cheap.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "prepare_data": "ablate.data.prepare",
    "Prepared": "ablate.data.prepare",
    "cache_root": "ablate.data.prepare",
    "CorpusDataModule": "ablate.data.datamodule",
    "TokenBucketBatchSampler": "ablate.data.batching",
    "Tokenizer": "ablate.data.tokenizer",
    "Shard": "ablate.data.shards",
    "CORPORA": "ablate.data.catalog",
    "Corpus": "ablate.data.registry",
    "build_corpus": "ablate.data.catalog",
    "DataError": "ablate.data.errors",
    "PAD_ID": "ablate.data.special",
    "UNK_ID": "ablate.data.special",
    "BOS_ID": "ablate.data.special",
    "EOS_ID": "ablate.data.special",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ablate.data' has no attribute {name!r}")
