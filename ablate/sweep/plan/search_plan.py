"""The search as a plan (:class:`SearchPlan`): what the launcher and the commands ask of it, and what a
search sweep shows before and while it runs (the dry-run plan, the `ablate status` lines).

The cost bound of a search is ``n_trials`` x the row's cost (its own config, at the first seed) plus
its best configuration re-run at the other seeds. Pruning can only lower it; the expected saving is
an assumption, printed as one: half of the trials after the pruner's start-up trials stop at half
of their steps (a median pruner's textbook behaviour on curves that do not cross).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ablate.sweep.file.search_spec import SearchSpec
from ablate.sweep.file.spec import Sweep, Trial
from ablate.sweep.plan.base import PLANS, Plan, Read, Step
from ablate.sweep.plan.search import Searcher, materialize
from ablate.sweep.store.state import Attempt, TrialView


def _estimate(sweep: Sweep, t: Trial) -> dict[str, Any]:
    """The dry run's cost of a trial (ablate.sweep.plan.cost, imported here only: `table` and `status`
    read a search without it)."""
    from ablate.sweep.plan.cost import estimate

    return estimate(sweep, t)


PRUNED_SHARE, PRUNED_AT = 0.5, 0.5  # the assumption behind the expected saving (see the module doc)


def blind_pruner(sweep: Sweep) -> str | None:
    """One line when the search's pruner can never act: it ranks by dev BLEU, which a trial measures
    only every ``eval.bleu_every`` validations and, at 0 (the default), only once, at the end."""
    spec = sweep.search
    if spec is None or spec.pruner == "none" or spec.metric != "val/bleu":
        return None
    blind = [t.row for t in sweep.templates if not int((t.config.get("eval") or {}).get("bleu_every") or 0)]
    if not blind:
        return None
    return (
        f"search.pruner {spec.pruner} never stops a trial of {', '.join(blind)}: val/bleu is measured only at "
        "the end there (eval.bleu_every: 0); set eval.bleu_every, or rank by val/ppl"
    )


def pruning_saving(spec: SearchSpec) -> float:
    """The expected share of the search's cost that pruning saves, under the stated assumption."""
    if spec.pruner == "none":
        return 0.0
    startup = int(spec.pruner_options.get("n_startup_trials", 5 if spec.pruner == "median" else 0))
    prunable = max(0, spec.n_trials - startup) / spec.n_trials
    return prunable * PRUNED_SHARE * (1 - PRUNED_AT)


def search_plan(sweep: Sweep) -> dict[str, Any]:
    spec = sweep.search
    assert spec is not None
    seeds = sweep.source.seeds
    rows = []
    for t in sweep.templates:
        e = _estimate(sweep, t)
        runs = spec.n_trials + len(seeds) - 1
        rows.append(
            {
                **e,
                "trials": spec.n_trials,
                "final_seeds": list(seeds[1:]),
                "bound_device_hours": _times(e["device_hours"], runs),
                "bound_flops": _times(e["flops"], runs),
            }
        )
    saving = pruning_saving(spec)
    bound = _sum(r["bound_device_hours"] for r in rows)
    return {
        "sweep": sweep.name,
        "file": str(sweep.path),
        "launcher": sweep.launcher["name"],
        "store": sweep.store,
        "search": {
            "metric": spec.metric,
            "direction": spec.direction,
            "n_trials": spec.n_trials,
            "sampler": spec.sampler,
            "pruner": spec.pruner,
            "params": [p.describe() for p in spec.params],
            "search_seed": seeds[0],
            "final_seeds": list(seeds[1:]),
        },
        "rows": rows,
        "total": {
            "bound_device_hours": bound,
            "bound_flops": _sum(r["bound_flops"] for r in rows),
            "expected_pruning_saving": saving,
            "expected_device_hours": _times(bound, 1 - saving),
        },
    }


def _times(x: float | None, n: float) -> float | None:
    return None if x is None else x * n


def _sum(xs: Iterable[float | None]) -> float | None:
    """The sum, or None when one term is unknown (a budget in epochs whose data is not prepared yet)."""
    values = list(xs)
    return None if any(x is None for x in values) else float(sum(x for x in values if x is not None))


def _g(x: float | None) -> str:
    return "?" if x is None else f"{x:.3g}"


def print_search_plan(sweep: Sweep, as_json: bool) -> int:
    plan = search_plan(sweep)
    if as_json:
        print(json.dumps(plan, indent=2))
        return 0
    s, total = plan["search"], plan["total"]
    print(
        f"search {sweep.name} ({sweep.path}): {len(plan['rows'])} row(s) x {s['n_trials']} trials, "
        f"launcher {sweep.launcher['name']}"
    )
    finals = f"; best re-run at seeds {s['final_seeds']}" if s["final_seeds"] else ""
    print(
        f"  {s['metric']} ({s['direction']}), {s['sampler']} sampler, {s['pruner']} pruner, "
        f"search at seed {s['search_seed']}{finals}"
    )
    for p in s["params"]:
        print(f"  {p}")
    width = max(len(r["row"]) for r in plan["rows"])
    print(f"{'row':<{width}}  {'params':>8}  {'dev-h/trial':>11}  {'runs':>4}  {'bound dev-h':>11}  overrides")
    for r in plan["rows"]:
        runs = r["trials"] + len(r["final_seeds"])
        print(
            f"{r['row']:<{width}}  {r['params'] / 1e6:>7.1f}M  {_g(r['device_hours']):>11}  {runs:>4}  "
            f"{_g(r['bound_device_hours']):>11}  {' '.join(r['overrides'])}"
        )
    print(
        f"bound: {_g(total['bound_flops'])} FLOPs, {_g(total['bound_device_hours'])} device-hours (every trial to "
        "the end, at each row's own config)"
    )
    if total["expected_pruning_saving"]:
        print(
            f"expected with pruning: {_g(total['expected_device_hours'])} device-hours "
            f"(-{total['expected_pruning_saving']:.0%}; assumption: {PRUNED_SHARE:.0%} of the trials after the "
            f"pruner's start-up trials stop at {PRUNED_AT:.0%} of their steps)"
        )
    return 0


def search_status_lines(sweep: Sweep, trials: Sequence[TrialView]) -> list[str]:
    """Per row: search trials done / pruned / running / failed of n_trials, and the best so far."""
    from ablate.sweep.plan.search_results import best_per_row

    spec = sweep.search
    assert spec is not None
    best = best_per_row(spec, trials)
    lines = [f"search: {spec.metric} ({spec.direction}), {spec.n_trials} trials per row"]
    width = max([len(r) for r in sweep.rows] + [3])
    for row in sweep.rows:
        b = best.get(row)
        if b is None:
            lines.append(f"  {row:<{width}}  0/{spec.n_trials} sampled")
            continue
        counts = f"{b.done} done, {b.pruned} pruned, {b.running} running" + (f", {b.failed} failed" if b.failed else "")
        shown = (
            "best -"
            if b.best_value is None
            else f"best {b.best_value:.4g} at " + ", ".join(f"{k}={v}" for k, v in b.best_params.items())
        )
        finals = [v for v in trials if v.row == row and v.trial.search.get("phase") == "final"]
        tail = f"; best re-run: {sum(v.state == 'done' for v in finals)}/{len(finals)} done" if finals else ""
        lines.append(f"  {row:<{width}}  {b.trials}/{spec.n_trials} sampled ({counts}); {shown}{tail}")
    return lines


@PLANS.register("search")
class SearchPlan(Plan):
    """A ``search:`` block: each row's trials sampled by its own Optuna study while the sweep runs."""

    settles = True  # a trial that ended after the last tell is told at one more pass (then the best re-runs)

    def __init__(self, sweep: Sweep, store: Any = None) -> None:
        super().__init__(sweep, store)
        self.searcher = Searcher(sweep, store) if store is not None else None
        self._row_costs: dict[str, float] | None = None  # rows by training FLOPs (costliest sampled first)
        self._more = True  # until a pass says otherwise (a pass without room asks nothing)

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        return sweep.search is not None

    def materialize(self, sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> Sweep:
        return materialize(sweep, by_trial)

    def notes(self) -> list[str]:
        blind = blind_pruner(self.sweep)
        return [blind] if blind else []

    def detach_problem(self) -> str | None:
        return (
            f"{self.sweep.path}: --detach: a search samples each next trial from the results so far, so it needs "
            "its controller; run `ablate sweep` without --detach (e.g. inside a small CPU job of the cluster)"
        )

    def to_prepare(self, todo: set[str]) -> list[Trial]:
        return list(self.sweep.shapes)  # the rows' templates: their data is known before any trial is sampled

    def tally(self) -> tuple[str, ...]:
        return ("done", "pruned", "failed", "waiting", "running")

    def dry_run(self, as_json: bool) -> int:
        return print_search_plan(self.sweep, as_json)

    def status_lines(self, trials: Sequence[TrialView]) -> list[str]:
        return search_status_lines(self.sweep, trials)

    def to_add(self, added: int) -> int:
        """Search trials not sampled yet (the re-runs of each row's best not counted)."""
        assert self.sweep.search is not None
        return max(0, self.sweep.search.n_trials * len(self.sweep.rows) - added)

    def start(self, created: Sequence[Any]) -> Step:
        assert self.searcher is not None, "a search runs with its store"
        s = self.searcher.spec
        return Step(
            self.sweep,
            (
                f"store {self.store.url}: search of {len(self.sweep.rows)} row(s), {s.n_trials} trials each "
                f"({s.sampler} sampler, {s.pruner} pruner, {s.metric} {s.direction})",
            ),
            True,
        )

    def step(self, sweep: Sweep, room: int, read: Read) -> Step:
        """Tell results and sample new trials into ``room`` (none: every slot busy, ``sweep`` as it was; told
        when one ends)."""
        assert self.searcher is not None, "a search runs with its store"
        if room <= 0:
            return Step(sweep, (), self._more)
        if self._row_costs is None:
            self._row_costs = {t.row: float(_estimate(self.sweep, t)["flops"] or 0.0) for t in self.sweep.templates}
        step = self.searcher.step(room, self._row_costs)
        self._more = step.more
        return step
