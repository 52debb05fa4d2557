"""Published figures of another study beside the rows that make the same change: does the effect transfer?

Narang et al. (2021, "Do Transformer Modifications Transfer Across Implementations and Applications?",
EMNLP, Table 1) trained dozens of Transformer modifications in one codebase (T5's Mesh TensorFlow)
and report, among other tasks, WMT'14 English-German BLEU without pre-training, one run each, against
their vanilla Transformer's 26.62. Their vanilla model differs from the paper's and from ours: it is
pre-norm with relative position biases and no dropout schedule of ours. A figure here says what the
change did there, not what it should do here; a revisited table shows it as a column beside ours.

A row gets a figure when the only setting it changes against base is one slot whose variant is the
modification they measured (``model.ffn=swiglu`` -> their SwiGLU). Values as printed in their Table 1. The
column, its fields and its legend are one provider (:data:`PUBLISHED_COLUMN`, :mod:`ablate.report.provider`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ablate.report.provider import LAST, ColumnProvider

NARANG = (
    "Narang et al. 2021 (EMNLP), Table 1: WMT'14 En-De BLEU, no pre-training, one run each, Δ against their "
    "vanilla Transformer (26.62; pre-norm, relative position biases): what the change did there, not a target"
)
NARANG_BASE_BLEU = 26.62
HEADER = "Narang ΔBLEU"
SHORT_HEADER = "Narang Δ"  # the terminal's (the legend says whose, and of what)

# (slot, our variant) -> (their row, their BLEU)
_NARANG_ROWS: dict[tuple[str, str], tuple[str, float]] = {
    ("ffn", "gelu"): ("GeLU", 26.47),
    ("ffn", "glu"): ("GLU", 27.12),
    ("ffn", "geglu"): ("GeGLU", 26.87),
    ("ffn", "reglu"): ("ReGLU", 27.02),
    ("ffn", "swiglu"): ("SwiGLU", 27.02),
    ("ffn", "liglu"): ("LiGLU", 26.53),
    ("norm", "rmsnorm"): ("RMS Norm", 27.14),
    ("residual", "rezero"): ("Rezero", 26.37),
}


@dataclass(frozen=True)
class Published:
    """Another study's figure for the change a row makes."""

    their_row: str
    bleu: float
    base_bleu: float = NARANG_BASE_BLEU

    @property
    def bleu_delta(self) -> float:
        return round(self.bleu - self.base_bleu, 2)


def published_for(changed: Mapping[str, Any]) -> Published | None:
    """The figure for a row whose only change against base is one slot's variant that they measured."""
    if len(changed) != 1:
        return None
    ((slot, variant),) = changed.items()
    found = _NARANG_ROWS.get((slot, str(variant)))
    return Published(*found) if found is not None else None


def has_published(table: Any) -> bool:
    return any(getattr(row, "published", None) is not None for row in table.rows)


def published_cell(row: Any) -> str:
    p = getattr(row, "published", None)
    return f"{p.bleu_delta:+.2f}" if p is not None else ""


def published_legend(table: Any) -> list[str]:
    return [f"Narang Δ(BLEU): {NARANG}."] if has_published(table) else []


def published_record(row: Any) -> dict[str, Any]:
    """CSV / JSON fields of a row (None without a figure)."""
    p = getattr(row, "published", None)
    return {
        "published_row": f"Narang et al. 2021: {p.their_row}" if p is not None else None,
        "published_bleu": p.bleu if p is not None else None,
        "published_bleu_delta": p.bleu_delta if p is not None else None,
    }


class PublishedColumn(ColumnProvider):
    """Their BLEU change for the row's change, after the table's own columns, and whose it is in the legend."""

    place = LAST
    # not among the W&B summary table's columns, as before these figures: another column set would change
    # the summary's hash, and every finished sweep would log its summary run again
    summary = False

    def headers(self, table: Any, layout: str) -> list[str]:
        if not has_published(table):
            return []
        return [SHORT_HEADER if layout == "text" else HEADER]

    def cells(self, table: Any, row: Any, layout: str) -> list[str]:
        return [published_cell(row)]

    def record(self, table: Any | None, row: Any) -> dict[str, Any]:
        return published_record(row)  # every row's JSON has them (None without a figure)

    def fields(self, table: Any) -> list[str]:
        return list(published_record(table.rows[0])) if has_published(table) else []  # CSV: only with a figure

    def legend(self, table: Any) -> list[str]:
        return published_legend(table)


PUBLISHED_COLUMN = PublishedColumn()
