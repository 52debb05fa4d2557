"""The dev loss of a language model trained on GPT-2-tokenized token shards, and the published GPT-2-small
figure beside its base row.

Researchers who ablate GPT-2-small shapes compare against published validation losses, not perplexity:
llm.c's reproduction of GPT-2 (124M) reaches a FineWeb validation loss of 3.28 after 10B training tokens
(1,024-token context), and that 3.28 is the target of the modded-nanogpt speedrun, whose run-to-run standard
deviation is about 0.002. A table qualifies when its base row trained a language model on the ``shards``
corpus with GPT-2's vocabulary (its separator 50256, or its 50,257 ids, padded or not): every row then gets
its dev loss (``val loss``: the mean over seeds of ln(dev PPL), nats per token, the figure llm.c prints) and
the base row the published 3.28 (``llm.c``), with its source under the table. The figure is a reference
point for the GPT-2-small recipe on FineWeb at 10B tokens; on other data or budgets it is context, not a
target. The column, its fields and its note are one provider (:mod:`ablate.report.provider`).
"""

from __future__ import annotations

import math
from typing import Any

from ablate.report.provider import REFERENCES, ColumnProvider

LLMC_LOSS = 3.28  # FineWeb validation loss of llm.c's GPT-2 (124M) at 10B tokens
SOURCE = (
    "llm.c's GPT-2 (124M) reproduction (Karpathy 2024): FineWeb validation loss 3.28 after 10B training "
    "tokens at 1,024-token context, the modded-nanogpt speedrun's target (run-to-run sd about 0.002)"
)
GPT2_EOS = 50256  # GPT-2's <|endoftext|>
GPT2_VOCAB = (50257, 50304)  # GPT-2's vocabulary, and padded to a multiple of 64


def applies(table: Any) -> bool:
    """A language model's table whose base trained on GPT-2-tokenized token shards."""
    data = table.base_config.get("data") or {}
    gpt2 = data.get("eos_id") == GPT2_EOS or data.get("vocab_size") in GPT2_VOCAB
    return bool(table.family.per_length and data.get("corpus") == "shards" and gpt2)


def dev_loss(row: Any) -> float | None:
    """The mean over seeds of ln(dev PPL): the dev loss in nats per token."""
    stat = row.ppl
    if stat is None:
        return None
    values = stat.values or (stat.mean,)
    return sum(math.log(v) for v in values) / len(values)


class LlmcColumn(ColumnProvider):
    """Each row's dev loss, and llm.c's published 3.28 beside base."""

    place = REFERENCES

    def headers(self, table: Any, layout: str) -> list[str]:
        return ["val loss", "llm.c"] if applies(table) else []

    def cells(self, table: Any, row: Any, layout: str) -> list[str]:
        loss = dev_loss(row)
        return [f"{loss:.3f}" if loss is not None else "", f"{LLMC_LOSS:.2f}" if row.is_base else ""]

    def record(self, table: Any | None, row: Any) -> dict[str, Any]:
        if table is None or not applies(table):
            return {}
        loss = dev_loss(row)
        return {
            "val_loss": round(loss, 4) if loss is not None else None,
            "llmc_val_loss": LLMC_LOSS if row.is_base else None,
        }

    def notes(self, table: Any) -> list[str]:
        return [f"llm.c: {SOURCE}; val loss = mean over seeds of ln(dev PPL)."] if applies(table) else []


LLMC_COLUMN = LlmcColumn()
