"""The ``search:`` block as the sweep file's room reads it: the spec (:mod:`ablate.sweep.file.search_spec`)
and the trials a search sweep starts with, one unsampled template per row. Pure.

What the controller does with it: :mod:`ablate.sweep.plan.search` (each row's trials sampled by its own
Optuna study while the sweep runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.blocks import BLOCKS, SweepBlock
from ablate.sweep.file.expand import merge, set_dotted
from ablate.sweep.file.search_spec import SearchSpec, read_search
from ablate.sweep.file.spec import ROW_ORDER, Sweep, Trial, experiment_of, make_trial, row_layers


@BLOCKS.register("search")
class SearchBlock(SweepBlock):
    """search: tune each row with Optuna (metric, direction, n_trials, sampler, pruner, params)."""

    doc = "{metric, direction, n_trials, sampler, pruner, params}: tune each row (ablate.sweep.file.search_spec)"
    rows_optional = True  # without rows: the experiment tuned as one row
    read = staticmethod(read_search)

    @staticmethod
    def claims(value: Any) -> bool:
        return value is not None  # `search:` left empty: no search

    @staticmethod
    def build(sweep: Sweep, spec: SearchSpec, grid: Callable[[], Sweep]) -> Sweep:
        """No trials yet: one unsampled template per row (its config at the first seed)."""
        return replace(sweep, trials=(), templates=templates(sweep, spec))


def templates(sweep: Sweep, spec: SearchSpec) -> tuple[Trial, ...]:
    """One unsampled trial per row; every bound and choice of every param is resolved once (first row)."""
    sf, overrides = sweep.source, sweep.overrides
    rows = row_layers(sf)  # the rows' own errors first, as before the experiment was loaded once
    out, experiment = [], experiment_of(sf)
    for i, (row, label, paper, layer) in enumerate(rows):
        out.append(make_trial(sf, row, label, paper, layer, overrides, sf.seeds[0], i * ROW_ORDER, None, experiment))
        if i:
            continue
        for p in spec.params:
            for value in p.bounds():
                probe: dict[str, Any] = {}
                set_dotted(probe, p.key, value, f"{sf.path}: search.params.{p.key}")
                try:
                    make_trial(sf, row, label, paper, merge(layer, probe), overrides, sf.seeds[0], 0, None, experiment)
                except SweepError as exc:
                    raise SweepError(f"{sf.path}: search.params.{p.key} = {value!r}: {exc}") from None
    return tuple(out)
