"""The tuned Table 3 of a search sweep: each row at its best configuration, and how the search went.

A search sweep (``search:``, :mod:`ablate.sweep.plan.search`) trains many configurations per row; pooling
them would average good and bad learning rates. The table reports each row at its best search trial
(by the search metric and direction) together with that configuration's re-runs at the sweep's
other seeds (phase ``final``): :func:`ablate.sweep.plan.search_results.tuned_views`. Every statistic of the table
(mean ± std over seeds, the test over seeds, the paired bootstraps against base) is then one of those trials.

The seed-1 value of a tuned row is the best of its search trials on that seed and dev set, so it is
optimistic (a winner's curse); the re-runs at the other seeds are not selected and show how much.

What a row's "changes" cell shows stays what the row ablates: the settings come from the row's
unsampled template (:attr:`ablate.sweep.file.spec.Sweep.templates`), and the Table 3 columns a searched
key moves (``model.dropout`` -> P_drop) read ``tuned``; the tuned values are in the row's
:class:`TunedRow` (the ``tuned`` line or column of every layout). Pure: no Optuna, no matplotlib.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ablate.report.columns import OTHER_KEY, other_changes
from ablate.report.paper import changed_settings, settings_of
from ablate.report.rows import AblationTable
from ablate.sweep.file.expand import set_dotted
from ablate.sweep.file.search_spec import SearchSpec
from ablate.sweep.file.spec import Sweep
from ablate.sweep.plan.search_results import RowBest, best_per_row, tuned_views
from ablate.sweep.store.state import TrialView

TUNED = "tuned"  # the cell of a Table 3 setting the search chooses per row


@dataclass(frozen=True)
class SearchPoint:
    """One finished search trial of a row: its number in the row's study and its metric value."""

    number: int
    state: str  # done | pruned
    value: float | None  # the final value (done) or the one it was pruned at
    step: int | None  # the step it was pruned at (None when done)
    trial_id: str


@dataclass(frozen=True)
class TunedRow:
    """How a row's search went: its counts, its best trial and every finished trial (for the history)."""

    best: RowBest
    budget: int  # n_trials of the search
    best_number: int | None  # the best trial's number in the row's study
    best_run: str | None  # the best trial's W&B run id
    history: tuple[SearchPoint, ...]

    @property
    def params_text(self) -> str:
        return fmt_params(self.best.best_params) if self.best.best_params else "n/a (no trial finished)"

    @property
    def counts(self) -> str:
        """``"6 trials, 3 pruned"`` (``"4/6 trials, ..."`` while the row's search runs)."""
        b = self.best
        text = f"{b.trials} trials" if b.trials >= self.budget else f"{b.trials}/{self.budget} trials"
        rest = [f"{n} {what}" for n, what in ((b.pruned, "pruned"), (b.failed, "failed"), (b.running, "running")) if n]
        return ", ".join([text, *rest])

    def record(self) -> dict[str, Any]:
        b = self.best
        return {
            "best_params": dict(b.best_params),
            "best_value": _round(b.best_value),
            "best_trial": self.best_number,
            "best_id": b.best_id,
            "best_run": self.best_run,
            "trials": b.trials,
            "done": b.done,
            "pruned": b.pruned,
            "running": b.running,
            "failed": b.failed,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def fmt_value(value: Any) -> str:
    """A sampled value for display: floats with 3 significant digits (0.397115826441 -> 0.397)."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def fmt_params(params: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={fmt_value(value)}" for key, value in params.items())


def _options(options: Mapping[str, Any]) -> str:
    return f" ({', '.join(f'{k}={v}' for k, v in options.items())})" if options else ""


def spec_text(spec: SearchSpec) -> str:
    """``best of 6 trials by val/ppl (minimize); tpe sampler, median pruner (...)``."""
    pruner = "no pruner" if spec.pruner == "none" else f"{spec.pruner} pruner{_options(spec.pruner_options)}"
    return (
        f"best of {spec.n_trials} trials by {spec.metric} ({spec.direction}); "
        f"{spec.sampler} sampler{_options(spec.sampler_options)}, {pruner}"
    )


def spec_record(spec: SearchSpec) -> dict[str, Any]:
    return spec.record()


def title(table: AblationTable) -> str:
    what = "Table 3 reproduction" if table.has_paper else "Ablation table"  # rows without paper values
    if table.search is not None:
        what = "Tuned Table 3" if table.has_paper else "Tuned ablation table"
    return f"{what}: {table.name}" if table.name else what


def legend_lines(table: AblationTable) -> list[str]:
    """The lines a tuned table adds to the legend (none for a grid sweep)."""
    if table.search is None:
        return []
    return [
        f"Tuned: each row at the best of its {table.search.n_trials} search trials; mean ± std over that "
        "configuration's seeds (seed 1: the best search trial; the other seeds: its re-runs). The seed-1 value "
        "was selected on that seed and dev set, so it is optimistic; the re-runs are not. Settings marked "
        f"{TUNED} are searched per row.",
    ]


def csv_record(row: Any) -> dict[str, Any]:
    """The CSV columns of a tuned row (params as JSON, so scripts read them back)."""
    tuned: TunedRow | None = row.search
    if tuned is None:
        return {}
    rec = tuned.record()
    return {
        "tuned_params": json.dumps(rec["best_params"], sort_keys=True),
        **{f"search_{k}": rec[k] for k in ("trials", "done", "pruned", "failed")},
        **{k: rec[k] for k in ("best_value", "best_trial", "best_run")},
    }


CSV_FIELDS = [
    "tuned_params",
    "search_trials",
    "search_done",
    "search_pruned",
    "search_failed",
    "best_value",
    "best_trial",
    "best_run",
]


# ----------------------------------------------------------------------------------------------
# From the store's trial views to the tuned table
# ----------------------------------------------------------------------------------------------


def _value(v: TrialView, metric: str) -> float | None:
    value = v.metrics.get(metric)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _history(spec: SearchSpec, views: Sequence[TrialView]) -> tuple[SearchPoint, ...]:
    points = []
    for v in views:
        if v.state not in ("done", "pruned"):
            continue
        step = v.metrics.get("pruned_at", v.metrics.get("step")) if v.state == "pruned" else None
        number = int(v.trial.search.get("number", len(points)))
        points.append(SearchPoint(number, v.state, _value(v, spec.metric), step, v.trial_id))
    return tuple(sorted(points, key=lambda p: p.number))


def tuned_rows(spec: SearchSpec, views: Sequence[TrialView]) -> dict[str, TunedRow]:
    """Per row that has search trials: its counts, best trial and history."""
    search = [v for v in views if v.trial.search.get("phase") == "search"]
    out = {}
    for row, best in best_per_row(spec, search).items():
        mine = [v for v in search if v.row == row]
        top = next((v for v in mine if v.trial_id == best.best_id), None)
        run = (top.attrs.get("wandb_id") or top.trial_id) if top is not None else None
        number = top.trial.search.get("number") if top is not None else None
        out[row] = TunedRow(best, spec.n_trials, number, None if run is None else str(run), _history(spec, mine))
    return out


def table_views(spec: SearchSpec, views: Sequence[TrialView]) -> list[TrialView]:
    """What the table is built from: each row at its best configuration; a row with no finished search
    trial yet keeps its search trials that are still to come (so it shows as waiting or running)."""
    tuned = tuned_views(spec, views)
    rows = {v.row for v in tuned}
    return tuned + [v for v in views if v.row not in rows and v.state in ("waiting", "running")]


def _tuned_columns(spec: SearchSpec, config: Mapping[str, Any]) -> set[str]:
    """The Table 3 columns a searched key moves: those whose setting differs between its bounds."""
    columns: set[str] = set()
    for p in spec.params:
        seen = []
        for value in p.bounds():
            probe = copy.deepcopy(dict(config))
            set_dotted(probe, p.key, value, "search")
            seen.append(settings_of(probe))
        columns |= {k for k in seen[0] if any(s.get(k) != seen[0].get(k) for s in seen[1:])}
    return columns


def apply_search(table: AblationTable, sweep: Sweep, views: Sequence[TrialView]) -> AblationTable:
    """Mark ``table`` (built from :func:`table_views`) as tuned: the search per row, the settings from the
    rows' templates (searched columns ``tuned``), rows whose search finished nothing marked failed."""
    spec = sweep.search
    assert spec is not None
    table.search = spec
    tuned = tuned_rows(spec, views)
    templates = {t.row: t for t in sweep.templates}
    base = table.base
    base_tmpl = templates.get(base.name) if base is not None else None
    columns = _tuned_columns(spec, base_tmpl.config) if base_tmpl is not None else set()

    def settings(row: str) -> dict[str, Any] | None:
        tmpl = templates.get(row)
        return None if tmpl is None else {**settings_of(tmpl.config), **dict.fromkeys(columns, TUNED)}

    base_settings = settings(base.name) if base is not None else None
    for row in table.rows:
        row.search = tuned.get(row.name)
        own = settings(row.name)
        if own is not None:
            row.settings = own
            if base_settings is not None:
                row.changed = changed_settings(own, base_settings)
                # what no column shows, the searched keys aside (a row's optimizer, say): as an untuned table
                searched = [p.key for p in spec.params]
                other = other_changes(templates[row.name].config, base_tmpl.config, searched) if base_tmpl else None
                row.changed.update({OTHER_KEY: other} if other else {})
        if row.search is not None and row.search.best.best_id is None and not row.n_trials:
            b = row.search.best  # no search trial of the row finished with a result, none in flight
            if b.trials < spec.n_trials:
                row.states = {"waiting": 1}  # the controller samples more
            else:
                row.states = {"failed": b.trials}
                row.failures.append(f"no search trial finished ({b.pruned} pruned, {b.failed} failed)")
    return table
