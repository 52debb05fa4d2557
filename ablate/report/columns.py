"""The table's columns beyond the paper's ten: the variant slots the paper never varied, and any other change.

A "Table 3 revisited" row changes the residual placement, the norm, the attention or the FFN; a user's
row may change anything else (attention dropout, a slot's args, the batch, the beam). The paper's
layout has no column for those, so a table gets one column per slot that some row changes, in the
order of :data:`SLOT_COLUMNS`, and an ``other`` column listing every remaining setting a row changes
against base as ``dotted.key=value``. A table whose rows change only the paper's ten settings keeps
exactly the paper's columns.

Read from the trials' resolved configs, like the paper's columns (:func:`ablate.report.paper.settings_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ablate.report.paper import COLUMNS, _get, _slot_name

# (settings key, header): the registry slots that the paper's columns do not show (pos is one of them).
SLOT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("residual", "residual"),
    ("norm", "norm"),
    ("attention", "attn"),
    ("ffn", "ffn"),
)
OTHER_KEY = "other"
OTHER_COLUMN = (OTHER_KEY, "other changes")

# Config sections whose changes shape the result; logging and trainer (devices, names) do not.
_SECTIONS = ("model", "train", "data", "eval")
# Config keys the paper's columns and the slot columns already show (a slot's args included).
_SHOWN = (
    "model.n_layers",
    "model.n_enc_layers",
    "model.n_dec_layers",
    "model.d_model",
    "model.d_ff",
    "model.n_heads",
    "model.d_k",
    "model.d_v",
    "model.dropout",
    "train.label_smoothing",
    "train.max_steps",
    "model.positional",
    "model.residual",
    "model.norm_placement",
    "model.norm",
    "model.attention",
    "model.ffn",
)


# The paper's choice in each slot (section 3): a base row with another one is not the paper's base model.
PAPER_SLOTS: dict[str, str] = {"residual": "post", "norm": "layernorm", "attention": "mha", "ffn": "relu"}


def paper_deviations(settings: Mapping[str, Any]) -> str | None:
    """``"residual=pre (paper: post)"``: the slots in which a base row's settings differ from the paper's."""
    out = [f"{k}={settings[k]} (paper: {v})" for k, v in PAPER_SLOTS.items() if settings.get(k) not in (None, v)]
    return ", ".join(out) or None


def slot_settings(cfg: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The slot columns of a resolved config: each slot's variant (``name`` or ``name(arg=value)``).

    A config stored before the residual slot existed names it ``model.norm_placement``; a slot the
    config does not name is left out.
    """
    out = {key: _slot_name(_get(cfg, f"model.{key}")) for key, _ in SLOT_COLUMNS}
    if out["residual"] is None:
        out["residual"] = _get(cfg, "model.norm_placement")
    return {key: value for key, value in out.items() if value is not None}


def _flat(node: Any, prefix: str) -> dict[str, Any]:
    if isinstance(node, Mapping) and "name" in node and set(node) <= {"name", "args"}:  # a slot: cosine(floor=0.1)
        return {prefix: _slot_name(node)}
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flat(value, f"{prefix}.{key}"))
        return out or {prefix: {}}
    return {prefix: node}


def _shown(key: str, ignore: Iterable[str]) -> bool:
    # train.seed: a row's seeds are its runs column, not a change; a corpus seed (data.args.seed) is one
    return key == "train.seed" or any(key == k or key.startswith(k + ".") for k in (*_SHOWN, *ignore))


def other_changes(cfg: Mapping[str, Any], base: Mapping[str, Any], ignore: Iterable[str] = ()) -> str | None:
    """``"model.attention_dropout=0.1 data.max_tokens=4096"``: what a row changes that no column shows.

    ``ignore``: dotted keys not to list (a search's parameters, which its own column shows).
    """
    return flat_changes(flat_config(cfg), flat_config(base), ignore)


def flat_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A config's settings as ``{dotted key: value}`` (a slot as its variant's name): what
    :func:`flat_changes` compares (a table flattens its base once, not once per row)."""
    return {k: v for s in _SECTIONS for k, v in _flat(_get(cfg, s) or {}, s).items()}


def flat_changes(mine: Mapping[str, Any], theirs: Mapping[str, Any], ignore: Iterable[str] = ()) -> str | None:
    """:func:`other_changes` of two flattened configs."""
    ignore = tuple(ignore)
    keys = [k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k) and not _shown(k, ignore)]
    return " ".join(f"{k}={mine.get(k)}" for k in keys) or None


def table_columns(rows: Iterable[Any]) -> tuple[tuple[str, str], ...]:
    """The paper's columns, then each slot column and ``other`` where some row changes it."""
    rows = list(rows)
    extra = [col for col in (*SLOT_COLUMNS, OTHER_COLUMN) if any(col[0] in r.changed for r in rows)]
    return (*COLUMNS, *extra)
