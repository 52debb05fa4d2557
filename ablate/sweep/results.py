"""A sweep's results for the report: one :class:`TrialResult` per trial of the sweep file.

Read-only: a sweep that has not started yet gives every trial as ``waiting`` and creates no store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablate.sweep.spec import Sweep, load_sweep
from ablate.sweep.store import SweepStore, summarize


@dataclass(frozen=True)
class TrialResult:
    """One trial (a row at one seed) and what the store knows about it."""

    trial_id: str  # 16 hex digits, stable (hash of the config parts that change the result)
    row: str
    group: str
    paper: str | None  # the paper's Table 3 row key (base, A1, ...), if any
    seed: int
    state: str  # done | running | waiting | failed
    overrides: list[str]  # what the row changes (dotlist items)
    config: dict[str, Any]  # the fully resolved config
    params: int | None  # trainable parameters (measured when done, else from the config)
    metrics: dict[str, Any] = field(default_factory=dict)  # val/ppl, val/bleu, test/*, tokens_per_sec, ...
    failure: str | None = None  # one line, for failed trials
    run_dir: str = ""
    attempts: int = 0  # attempts made so far (retries and requeues resume the same run dir)


def _params_from_config(config: dict[str, Any]) -> int | None:
    try:
        from ablate.config import from_dict
        from ablate.model.build import count_parameters

        cfg = from_dict(config)
        return int(count_parameters(cfg.model, cfg.data.vocab_size))
    except ImportError:
        return None


def results_of(sweep: Sweep) -> list[TrialResult]:
    store = SweepStore.for_sweep(sweep)
    by_trial = store.by_trial() if store.exists() else {}
    out = []
    for t in sweep.trials:
        attempts = by_trial.get(t.trial_id, [])
        state, deciding = summarize(attempts)
        attrs = deciding.attrs if deciding is not None else {}
        metrics = dict(attrs.get("metrics") or {}) if state == "done" else {}
        params = metrics.get("params")
        out.append(
            TrialResult(
                trial_id=t.trial_id,
                row=t.row,
                group=t.group,
                paper=t.paper,
                seed=t.seed,
                state=state,
                overrides=list(t.overrides),
                config=t.config,
                params=int(params) if isinstance(params, (int, float)) else _params_from_config(t.config),
                metrics=metrics,
                failure=attrs.get("failure") if state == "failed" else None,
                run_dir=str(attrs.get("run_dir", t.run_dir)),
                attempts=len(attempts),
            )
        )
    return out


def load_results(sweep_file: str | Path, overrides: Sequence[str] = ()) -> list[TrialResult]:
    """Every trial of ``sweep_file`` (in file order, seeds inner) with its state and metrics."""
    return results_of(load_sweep(sweep_file, overrides))
