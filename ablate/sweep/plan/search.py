"""Search mode at run time: one Optuna study per row samples that row's trials into the sweep's store.

Why one study per row (named ``<sweep>:<row>``) and not one study with the row as an attribute:
Optuna's samplers and pruners compare the trials of one study. In one shared study TPE would model
h=1 from base's results and the median pruner would stop an h=1 trial because base's curves are
lower at that step; per-row studies keep every comparison inside the row, and optuna-dashboard
lists each row as its own study with its parameters.

The trials themselves stay ablate trials in the sweep's own study (:mod:`ablate.sweep.store.store`), so
claims, heartbeats, reaping, retries, SLURM requeue and ``status`` work as for a grid. The link is
the row-study trial's ``ablate_id`` user attribute and the ablate trial's ``search`` attribute
``{phase, study, number, trial_id, params}``.

:meth:`Searcher.step` runs under the store's lock, so several controllers (or a controller and
a rerun) agree: it first *tells* each row study the results the store holds (done -> COMPLETE with
the metric, pruned -> PRUNED, diverged -> FAIL), then *asks* new configurations while a row has
fewer than ``n_trials`` trials and the launcher has room. A sampled config whose trial id the
store already holds is not trained again: the row-study trial is linked to that trial and told
its result. A row whose search is over re-runs its best configuration at the sweep's other
``seeds:`` (phase ``final``); the table reports each row at that configuration.
Each ask is seeded from ``search.seed``, the row and the row's trial count, so a restarted
controller does not draw the same first configurations again.

Why this file is long: telling and asking a row study happen under one lock in one pass (see above);
the Optuna objects and the plan around the searcher sit beside it so the search reads in one file.
"""

from __future__ import annotations

import itertools
import json
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.search_spec import SearchSpec
from ablate.sweep.file.spec import Sweep, Trial, row_trial
from ablate.sweep.plan.base import Step
from ablate.sweep.store.state import FINAL_KINDS, Attempt, decide

SEARCH_ATTR = "search"


def study_name(sweep_name: str, row: str) -> str:
    return f"{sweep_name}:{row}"


def sample_trial(sweep: Sweep, row: str, params: Mapping[str, Any], seed: int, search: Mapping[str, Any]) -> Trial:
    """The trial of a search sweep's ``row`` at ``seed`` with sampled ``params`` (dotted key -> value)."""
    return row_trial(sweep, row, seed, int(search.get("number", 0)) + 1, params=params, search=search)


# ----------------------------------------------------------------------------------------------
# Optuna objects from a SearchSpec
# ----------------------------------------------------------------------------------------------


def distributions(spec: SearchSpec) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out: dict[str, Any] = {}
    for p in spec.params:
        if p.choices is not None:
            out[p.key] = CategoricalDistribution(list(p.choices))
        elif p.is_int:
            out[p.key] = IntDistribution(int(p.low), int(p.high), log=p.log, step=int(p.step or 1))  # type: ignore[arg-type]
        else:
            out[p.key] = FloatDistribution(float(p.low), float(p.high), log=p.log, step=p.step)  # type: ignore[arg-type]
    return out


def make_sampler(spec: SearchSpec, seed: int) -> Any:
    import optuna

    opts = dict(spec.sampler_options)
    if spec.sampler == "grid":
        space = {p.key: p.grid_values() for p in spec.params}
        return optuna.samplers.GridSampler(space, seed=seed)
    cls = {
        "tpe": optuna.samplers.TPESampler,
        "random": optuna.samplers.RandomSampler,
        "cmaes": optuna.samplers.CmaEsSampler,
        "qmc": optuna.samplers.QMCSampler,
    }[spec.sampler]
    return cls(seed=seed, **opts)


def make_pruner(name: str, options: Mapping[str, Any]) -> Any:
    import optuna

    cls = {
        "none": optuna.pruners.NopPruner,
        "median": optuna.pruners.MedianPruner,
        "hyperband": optuna.pruners.HyperbandPruner,
        "successive_halving": optuna.pruners.SuccessiveHalvingPruner,
    }[name]
    return cls(**dict(options))


def pruning_spec(study_attrs: Mapping[str, Any], attrs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The sweep's search spec when this attempt is pruned as it trains (a search-phase trial of a sweep
    with a pruner), else None. Decided here, without Lightning, so a worker whose trial never prunes
    does not import it (2-3 CPU-seconds a process) only to learn that."""
    search, spec = attrs.get(SEARCH_ATTR), study_attrs.get("search") or {}
    if not isinstance(search, Mapping) or search.get("phase") != "search" or spec.get("pruner", "none") == "none":
        return None
    return spec


def _point_key(params: Mapping[str, Any]) -> str:
    return json.dumps({k: clean_value(v) for k, v in params.items()}, sort_keys=True)


def clean_value(value: Any) -> Any:
    """A sampled value as a config value: floats rounded to 12 significant digits (0.30000000000000004)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    return value


# ----------------------------------------------------------------------------------------------
# The store's sampled trials as Trials
# ----------------------------------------------------------------------------------------------


def materialize(sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> Sweep:
    """The search sweep with every trial its store holds (sampled, in row order) as ``trials``."""
    if sweep.search is None:
        return sweep
    templates = {t.row: t for t in sweep.templates}
    trials: dict[str, Trial] = {}
    for aid, attempts in by_trial.items():
        a = attempts[0].attrs
        if not isinstance(a.get(SEARCH_ATTR), Mapping) or a.get("row") not in templates:
            continue
        tmpl = templates[a["row"]]
        trials[aid] = Trial(
            trial_id=aid,
            row=tmpl.row,
            group=tmpl.group,
            paper=tmpl.paper,
            seed=int(a.get("seed", tmpl.seed)),
            order=int(a.get("order", tmpl.order)),
            overrides=tuple(a.get("overrides") or ()),
            config=dict(a.get("config") or tmpl.config),
            run_dir=str(a.get("run_dir") or tmpl.run_dir),
            resources=dict(tmpl.resources),
            search=dict(a[SEARCH_ATTR]),
        )
    ordered = sorted(trials.values(), key=lambda t: (t.order, t.seed, t.trial_id))
    return replace(sweep, trials=tuple(ordered))


# ----------------------------------------------------------------------------------------------
# Asking and telling
# ----------------------------------------------------------------------------------------------


@dataclass
class RowSearch:
    """What a row's study holds: trials asked, finished (told) and in flight."""

    row: str
    asked: int  # trials that count towards n_trials (a grid: distinct points)
    in_flight: int
    best: Any  # FrozenTrial or None
    params: list[dict[str, Any]] = field(default_factory=list)  # of every counted trial


class Searcher:
    """Drives the row studies of one search sweep (see the module doc). ``sweep`` is the opened one (its
    rows' templates); what was sampled is answered in each :meth:`step`'s Step."""

    def __init__(self, sweep: Sweep, store: Any) -> None:
        assert sweep.search is not None
        self.sweep, self.store, self.spec = sweep, store, sweep.search

    def _study(self, row: str, sampler: Any = None) -> Any:
        import optuna

        name = study_name(self.sweep.name, row)
        storage = self.store.storage
        try:
            storage.get_study_id_from_name(name)
        except KeyError:
            study = optuna.create_study(study_name=name, storage=storage, direction=self.spec.direction)
            for key, value in (("sweep", self.sweep.name), ("row", row), ("metric", self.spec.metric)):
                study.set_user_attr(key, value)
            study.set_user_attr("params", [p.describe() for p in self.spec.params])
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        if study.direction.name.lower() != self.spec.direction:
            raise SweepError(
                f"{self.sweep.path}: search.direction is {self.spec.direction} but the store's study {name!r} "
                f"was made to {study.direction.name.lower()}; give the sweep another name: to start a new search"
            )
        return study

    def _storage_id(self, study: Any, number: int) -> int:
        """The storage id of a row study's trial, through Optuna's public storage API (two small queries:
        an ask or an orphan is rare, unlike the store's reads of every trial)."""
        storage = self.store.storage
        return storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name), number)

    def step(self, room: int, cost: Mapping[str, float] | None = None) -> Step:
        """Tell finished results, then ask up to ``room`` new trials: the sweep with every sampled trial (read
        under the lock), notes for the user and whether a later step may still add trials.

        Rows take turns (the row with the fewest trials next); among those, the costliest row first
        (``cost``: row -> FLOPs), so the big rows do not start last and leave slots idle at the end."""
        notes: list[str] = []
        self.store.open_to_write()  # the sweep's own study must exist first
        with self.store.lock():
            by_trial: dict[str, Sequence[Attempt]] = dict(self.store.by_trial())  # + trials made in this step
            rows = [self._tell(t.row, by_trial) for t in self.sweep.templates]
            for r in rows:
                if r.asked >= self.spec.n_trials and r.in_flight == 0:
                    notes += self._finals(r, by_trial)
            while room > 0:
                open_rows = [r for r in rows if r.asked < self.spec.n_trials and self._row_room(r)]
                if not open_rows:
                    break
                r = min(open_rows, key=lambda r: (r.asked, -(cost or {}).get(r.row, 0.0)))
                created = self._ask(r, by_trial)
                r.asked += 1
                r.in_flight += 1
                room -= int(created)
            more = any(r.asked < self.spec.n_trials for r in rows)
            sampled = materialize(self.sweep, self.store.by_trial())
        return Step(sampled, tuple(notes), more)

    def _row_room(self, r: RowSearch) -> bool:
        return self.spec.parallel is None or r.in_flight < self.spec.parallel

    def _tell(self, row: str, by_trial: Mapping[str, Sequence[Attempt]]) -> RowSearch:
        """Tell the row study what the store knows; count its trials (orphans not) and those in flight.

        An orphan is a row-study trial asked but never enqueued (its controller was killed between the
        two, or the sampled config was refused): asks and enqueues happen under the store's lock, so a
        RUNNING trial without an ablate trial in the store is one. It is told FAIL and not counted."""
        from optuna.trial import TrialState

        study = self._study(row)
        trials = study.get_trials(deepcopy=False)
        in_flight, told = 0, False
        for ft in trials:
            if ft.state != TrialState.RUNNING:
                continue
            aid = ft.user_attrs.get("ablate_id")
            if aid is None or str(aid) not in by_trial:
                self.store.storage.set_trial_user_attr(self._storage_id(study, ft.number), "orphan", True)
                study.tell(ft.number, state=TrialState.FAIL, skip_if_finished=True)
                told = True
                continue
            state, deciding = decide(by_trial.get(str(aid), ()))
            told = told or state not in ("running", "waiting")
            if state == "done" and deciding is not None:
                value = (deciding.attrs.get("metrics") or {}).get(self.spec.metric)
                if isinstance(value, (int, float)) and math.isfinite(value):
                    study.tell(ft.number, float(value), skip_if_finished=True)
                else:
                    study.tell(ft.number, state=TrialState.FAIL, skip_if_finished=True)
            elif state == "pruned":
                study.tell(ft.number, state=TrialState.PRUNED, skip_if_finished=True)
            elif state == "failed" and deciding is not None and deciding.kind in FINAL_KINDS:
                study.tell(ft.number, state=TrialState.FAIL, skip_if_finished=True)
            elif state in ("running", "waiting"):
                in_flight += 1
        if told:  # read again only when this look changed the row study (a pass costs one read per row)
            trials = study.get_trials(deepcopy=False)
        trials = [t for t in trials if not t.user_attrs.get("orphan")]
        done = [t for t in trials if t.state == TrialState.COMPLETE]
        best = (min if self.spec.direction == "minimize" else max)(done, key=lambda t: t.value) if done else None
        grid = self.spec.sampler == "grid"
        asked = len({_point_key(t.params) for t in trials}) if grid else len(trials)
        return RowSearch(row, asked, in_flight, best, [dict(t.params) for t in trials])

    def _seed(self, row: str, count: int) -> int:
        return (self.spec.seed * 1_000_003 + zlib.crc32(row.encode()) + count) % 2**31

    def _grid_point(self, r: RowSearch) -> dict[str, Any] | None:
        """The next grid point of row ``r`` that none of its trials has (in a per-row shuffled order)."""
        import random

        keys = [p.key for p in self.spec.params]
        combos = itertools.product(*(p.grid_values() or [] for p in self.spec.params))
        points = [dict(zip(keys, combo)) for combo in combos]
        random.Random(self._seed(r.row, 0)).shuffle(points)
        seen = {_point_key(p) for p in r.params}
        return next((p for p in points if _point_key(p) not in seen), None)

    def _ask(self, r: RowSearch, by_trial: dict[str, Sequence[Attempt]]) -> bool:
        """Sample one configuration of row ``r``; True when it made a new trial to train.

        A grid is walked by the points the row's trials hold, not by Optuna's GridSampler: that one
        shuffles its grid with its seed, and a sampler made anew per ask (as here) re-drew points."""
        study = self._study(r.row, make_sampler(self.spec, self._seed(r.row, r.asked)))
        if self.spec.sampler == "grid":
            point = self._grid_point(r)
            if point is not None:
                study.enqueue_trial(point, skip_if_exists=False)
        trial = study.ask(distributions(self.spec))
        params = {k: clean_value(v) for k, v in trial.params.items()}
        r.params.append(dict(trial.params))
        info = {
            "phase": "search",
            "study": study.study_name,
            "number": trial.number,
            "trial_id": self._storage_id(study, trial.number),
            "params": params,
        }
        try:
            t = sample_trial(self.sweep, r.row, params, self.sweep.templates[0].seed, info)
        except SweepError:
            from optuna.trial import TrialState

            study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            raise
        trial.set_user_attr("ablate_id", t.trial_id)
        trial.set_user_attr("run_dir", t.run_dir)
        if t.trial_id in by_trial:  # the sampler proposed a configuration the store already holds
            trial.set_user_attr("same_as", t.trial_id)
            return False
        self.store.create_trial(t)
        by_trial[t.trial_id] = []  # a repeat later in this step is linked, not enqueued twice
        return True

    def _finals(self, r: RowSearch, by_trial: Mapping[str, Sequence[Attempt]]) -> list[str]:
        """The row's best configuration at the sweep's other seeds (created once)."""
        seeds = self.sweep.source.seeds[1:]
        if r.best is None or not seeds:
            return []
        params = {k: clean_value(v) for k, v in r.best.params.items()}
        made = 0
        for seed in seeds:
            info = {"phase": "final", "params": params, "best_of": r.best.number}
            t = sample_trial(self.sweep, r.row, params, seed, info)
            if t.trial_id not in by_trial:
                self.store.create_trial(t)
                made += 1
        return [f"{r.row}: search done; best #{r.best.number} re-runs at seeds {list(seeds)}"] if made else []
