"""The paper's Table 3 (Vaswani et al. 2017, "Attention Is All You Need", section 6.2) as data.

Each row is keyed by a stable id (``base``, ``A1``..``A4``, ``B1``, ``B2``, ``C1``..``C7``,
``D1``..``D4``, ``E``, ``big``) that sweep files name under ``paper:``. A row holds the Table 3
settings it changes against the base model (the paper leaves the unchanged cells blank), and the
paper's dev-set results: perplexity per wordpiece and BLEU on newstest2013 (English-to-German, no
checkpoint averaging), and the parameter count in millions.

The values were checked cell by cell against the paper (arXiv 1706.03762v5, Table 3). Some write-ups
of the paper misprint rows, e.g. the base (h=8) row as "25.9 / 4.91"; the paper's base row is
PPL 4.92, BLEU 25.8. The paper prints no parameter count for rows A, D and E.

This module also defines the Table 3 columns and how to read them from one of our configs
(:func:`settings_of`), so the report and the tests compare our rows with the paper's in its terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ablate.config import enc_dec_layers, head_dims, model_section
from ablate.report.errors import ReportError

# The Table 3 columns, in the paper's order: (key, header as the paper prints it).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("N", "N"),
    ("d_model", "d_model"),
    ("d_ff", "d_ff"),
    ("h", "h"),
    ("d_k", "d_k"),
    ("d_v", "d_v"),
    ("P_drop", "P_drop"),
    ("eps_ls", "eps_ls"),
    ("train_steps", "steps"),
    ("positional", "pos"),
)
COLUMN_KEYS: tuple[str, ...] = tuple(key for key, _ in COLUMNS)

# The base model's settings (Table 3, first row; section 6.1).
BASE_SETTINGS: dict[str, Any] = {
    "N": 6,
    "d_model": 512,
    "d_ff": 2048,
    "h": 8,
    "d_k": 64,
    "d_v": 64,
    "P_drop": 0.1,
    "eps_ls": 0.1,
    "train_steps": 100_000,
    "positional": "sinusoidal",
}

# What each group varies, in the paper's words (used as captions).
GROUP_TITLES: dict[str, str] = {
    "base": "base model",
    "A": "number of heads (computation kept constant)",
    "B": "attention key size d_k",
    "C": "model size",
    "D": "dropout and label smoothing",
    "E": "learned positional embedding instead of sinusoids",
    "big": "big model",
}


@dataclass(frozen=True)
class PaperRow:
    """One row of Table 3: what it changes against base and what the paper measured."""

    id: str  # stable key: base, A1..A4, B1, B2, C1..C7, D1..D4, E, big
    group: str  # base, A, B, C, D, E or big
    label: str  # short human-readable name of the change
    ppl: float  # dev (newstest2013) perplexity per wordpiece
    bleu: float  # dev (newstest2013) BLEU
    params_m: float | None  # parameters x10^6 (None: the paper prints none for rows A, D, E)
    changes: Mapping[str, Any] = field(default_factory=dict)  # Table 3 columns that differ from base

    @property
    def settings(self) -> dict[str, Any]:
        """All ten Table 3 settings of this row (base settings with the changes applied)."""
        return {**BASE_SETTINGS, **self.changes}


def _row(id_: str, group: str, label: str, ppl: float, bleu: float, params: float | None, **changes: Any) -> PaperRow:
    unknown = set(changes) - set(COLUMN_KEYS)
    if unknown:  # a typo here would silently drop a cell of the paper's table
        raise ValueError(f"unknown Table 3 column(s) {sorted(unknown)} in row {id_}")
    return PaperRow(id_, group, label, ppl, bleu, params, dict(changes))


# Vaswani et al. 2017, Table 3 (dev = newstest2013). Order as printed.
_ROWS: tuple[PaperRow, ...] = (
    _row("base", "base", "base", 4.92, 25.8, 65),
    _row("A1", "A", "h=1, d_k=d_v=512", 5.29, 24.9, None, h=1, d_k=512, d_v=512),
    _row("A2", "A", "h=4, d_k=d_v=128", 5.00, 25.5, None, h=4, d_k=128, d_v=128),
    _row("A3", "A", "h=16, d_k=d_v=32", 4.91, 25.8, None, h=16, d_k=32, d_v=32),
    _row("A4", "A", "h=32, d_k=d_v=16", 5.01, 25.4, None, h=32, d_k=16, d_v=16),
    _row("B1", "B", "d_k=16", 5.16, 25.1, 58, d_k=16),
    _row("B2", "B", "d_k=32", 5.01, 25.4, 60, d_k=32),
    _row("C1", "C", "N=2", 6.11, 23.7, 36, N=2),
    _row("C2", "C", "N=4", 5.19, 25.3, 50, N=4),
    _row("C3", "C", "N=8", 4.88, 25.5, 80, N=8),
    _row("C4", "C", "d_model=256, d_k=d_v=32", 5.75, 24.5, 28, d_model=256, d_k=32, d_v=32),
    _row("C5", "C", "d_model=1024, d_k=d_v=128", 4.66, 26.0, 168, d_model=1024, d_k=128, d_v=128),
    _row("C6", "C", "d_ff=1024", 5.12, 25.4, 53, d_ff=1024),
    _row("C7", "C", "d_ff=4096", 4.75, 26.2, 90, d_ff=4096),
    _row("D1", "D", "P_drop=0.0", 5.77, 24.6, None, P_drop=0.0),
    _row("D2", "D", "P_drop=0.2", 4.95, 25.5, None, P_drop=0.2),
    _row("D3", "D", "eps_ls=0.0", 4.67, 25.3, None, eps_ls=0.0),
    _row("D4", "D", "eps_ls=0.2", 5.47, 25.7, None, eps_ls=0.2),
    _row("E", "E", "positional embedding instead of sinusoids", 4.92, 25.7, None, positional="learned"),
    _row("big", "big", "big", 4.33, 26.4, 213, d_model=1024, d_ff=4096, h=16, P_drop=0.3, train_steps=300_000),
)

PAPER: dict[str, PaperRow] = {row.id: row for row in _ROWS}
PAPER_IDS: tuple[str, ...] = tuple(PAPER)
CITATION = "Vaswani et al. 2017, Attention Is All You Need, Table 3 (dev: newstest2013)"


def paper_row(paper_id: str) -> PaperRow:
    """The paper's row ``paper_id``; an unknown id is a one-line error listing the valid ids."""
    try:
        return PAPER[paper_id]
    except KeyError:
        raise ReportError(f"unknown Table 3 row {paper_id!r} (valid: {', '.join(PAPER_IDS)})") from None


def paper_delta(paper_id: str) -> tuple[float, float]:
    """(PPL, BLEU) of row ``paper_id`` minus the paper's base row, rounded to the printed precision."""
    row, base = PAPER[paper_id], PAPER["base"]
    return round(row.ppl - base.ppl, 2), round(row.bleu - base.bleu, 1)


# ----------------------------------------------------------------------------------------------
# Reading the Table 3 columns out of one of our resolved configs
# ----------------------------------------------------------------------------------------------


def _get(cfg: Any, dotted: str, default: Any = None) -> Any:
    node = cfg
    for part in dotted.split("."):
        if node is None:
            return default
        try:
            node = node[part]
        except (KeyError, TypeError, AttributeError):
            return default
    return node


def _slot_name(spec: Any) -> Any:
    """A registry slot is ``"name"`` or ``{name, args}``; the table shows the name."""
    if isinstance(spec, str) or spec is None:
        return spec
    name = _get(spec, "name")
    args = _get(spec, "args")
    if args:  # two rows that differ only in args must not look the same in the table
        items = ", ".join(f"{k}={args[k]}" for k in sorted(args))
        return f"{name}({items})"
    return name


# The model keys that decide the N, d_k and d_v columns (read through the config's own helpers).
_MODEL_KEYS = ("n_layers", "n_enc_layers", "n_dec_layers", "d_model", "n_heads", "d_k", "d_v")


def settings_of(cfg: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The ten Table 3 settings of a resolved config (a nested dict or DictConfig).

    d_k / d_v and the encoder / decoder depths follow the config's own rules
    (:func:`ablate.config.head_dims`, :func:`ablate.config.enc_dec_layers`); an encoder and decoder
    of different depths show as ``"enc/dec"`` in the N column.
    """
    model = model_section({key: _get(cfg, f"model.{key}") for key in _MODEL_KEYS}, "a trial's config")
    n_enc, n_dec = enc_dec_layers(model) if model.n_layers is not None else (None, None)
    d_k, d_v = head_dims(model) if model.d_model and model.n_heads else (model.d_k, model.d_v)
    return {
        "N": n_enc if n_enc == n_dec else f"{n_enc}/{n_dec}",
        "d_model": model.d_model,
        "d_ff": _get(cfg, "model.d_ff"),
        "h": model.n_heads,
        "d_k": d_k,
        "d_v": d_v,
        "P_drop": _get(cfg, "model.dropout"),
        "eps_ls": _get(cfg, "train.label_smoothing"),
        "train_steps": _budget(cfg),
        "positional": _slot_name(_get(cfg, "model.positional")),
    }


def _budget(cfg: Mapping[str, Any] | Any) -> Any:
    """The steps cell: the steps, or the budget in epochs / target tokens the row declares instead."""
    epochs, tokens = _get(cfg, "train.epochs"), _get(cfg, "train.target_tokens")
    if epochs is not None:
        return f"{epochs:g} ep"
    if tokens is not None:
        return f"{tokens / 1e6:.3g}M tok"
    return _get(cfg, "train.max_steps")


def changed_settings(settings: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """The Table 3 cells of ``settings`` that differ from ``base`` (the paper leaves the rest blank)."""
    return {key: settings.get(key) for key in COLUMN_KEYS if settings.get(key) != base.get(key)}
