"""Adaptive seeds: more seeds only for the rows still undecided, with the error rate kept over the looks.

``seeds: {start: 2, max: 8, until: decided}`` runs every row at seeds 1..start; then, each time every
trial of the sweep has ended (a *look*), each row whose PPL verdict against base (paired over seeds,
:mod:`ablate.report.verdicts`) is still *undecided* and has fewer than ``max`` seeds gets one more seed,
and base gets it too (rows pair with base by seed). The sweep ends when every row is decided (better,
worse or equivalent) or has ``max`` seeds. A row stopped early saves its remaining seeds' cost.

Looking again after every seed and stopping when a test rejects would inflate the error: a fixed-n test
applied at each look rejects a true null far more often than alpha overall. The rule here spends alpha
over the looks: with K = max - start + 1 possible looks, every look tests at alpha / K (Holm over the
table's rows within the look), so by the union bound the chance that any look marks a row that does not
differ stays <= alpha. It is conservative (a group-sequential boundary such as O'Brien-Fleming spends
less early and would stop sooner); it is simple, valid for any number of rows and any stopping pattern,
and tests/sweep/test_sweep_adaptive.py measures its error rate by simulation. ``ablate table`` applies the
same level to an adaptive sweep, so its marks are the decisions the controller made.

Rows that learned nothing (dev PPL not below 0.8 x the unigram floor, :mod:`ablate.stats.learning`) get
no more seeds, and a base that learned nothing or does not translate yet (dev chrF below 25, the same
module) ends the seeds: the table withholds those verdicts, so seeds spent on them would buy none, and
the controller must not say "every row decided" where the table marks none. The floor and the references
come from the prepared data where the controller runs; without them (a controller on a login node), as
in the table, nothing is withheld.

Stateless: each look is computed from the store, so a killed controller resumes like any sweep.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ablate.stats.learning import LEARNED_RATIO, MIN_BASE_CHRF, base_chrf, learned, translates
from ablate.sweep.file.seeds_spec import AdaptiveSeeds
from ablate.sweep.file.spec import Sweep, Trial, row_trial
from ablate.sweep.plan.base import PLANS, Plan, Read, Step, Wrapper


def base_row(rows: Sequence[str], groups: Mapping[str, str], papers: Mapping[str, Any]) -> str:
    """The row the others are compared with, chosen as the report chooses it (``_pick_base`` in
    ablate.report.table): the one reproducing the paper's base (``paper: base``), else the one in
    group ``base``, else the first; the controller must test the rows the table will mark."""
    return next(
        (r for r in rows if papers.get(r) == "base"), next((r for r in rows if groups.get(r) == "base"), rows[0])
    )


def look(
    spec: AdaptiveSeeds, by_row: Mapping[str, Mapping[int, float]], base: str, alpha: float, margin: float
) -> dict[str, str]:
    """Each row's PPL verdict at this look (better | worse | equivalent | undecided) at alpha / looks."""
    from ablate.stats.correction import DEFAULT_CORRECTION, adjust
    from ablate.stats.seeds import compare_seeds

    level = spec.level(alpha)
    tests = {}
    for row, ppl in by_row.items():
        if row != base:
            tests[row] = compare_seeds(by_row.get(base, {}), ppl, log=True, margin=margin)
    rows = [r for r, t in tests.items() if t is not None]
    p = adjust([tests[r].p_value for r in rows], DEFAULT_CORRECTION)
    p_eq = adjust([tests[r].p_equiv if tests[r].p_equiv is not None else 1.0 for r in rows], DEFAULT_CORRECTION)
    out = dict.fromkeys(tests, "undecided")
    for r, p_row, p_equiv in zip(rows, p, p_eq):
        if p_equiv < level:
            out[r] = "equivalent"
        elif p_row < level:
            out[r] = "worse" if tests[r].delta > 0 else "better"
    return out


def rows_to_extend(
    spec: AdaptiveSeeds, by_row: Mapping[str, Mapping[int, float]], base: str, alpha: float, margin: float
) -> list[str]:
    """The rows that get one more seed at this look: undecided, with fewer than ``max`` seeds."""
    verdicts = look(spec, by_row, base, alpha, margin)
    return [r for r, v in verdicts.items() if v == "undecided" and len(by_row[r]) < spec.max]


def seed_trial(sweep: Sweep, row: str, seed: int) -> Trial:
    """The trial of ``row`` at another ``seed``, added while the sweep runs."""
    return row_trial(sweep, row, seed, seed)


def materialize_seeds(sweep: Sweep, trial_rows: Mapping[str, Mapping[str, Any]]) -> Sweep:
    """The adaptive sweep with the seeds its controller added (``trial_rows``: the store's ablate id ->
    attributes) as trials, so status, the table and a resumed controller see them."""
    if sweep.adaptive is None:
        return sweep
    have = {(t.row, t.seed) for t in sweep.trials}
    added = []
    for attrs in trial_rows.values():
        key = (attrs.get("row"), attrs.get("seed"))
        if isinstance(key[0], str) and isinstance(key[1], int) and key not in have and key[0] in sweep.rows:
            added.append(seed_trial(sweep, key[0], key[1]))
            have.add(key)
    return replace(sweep, trials=tuple(sorted((*sweep.trials, *added), key=lambda t: (t.order, t.seed))))


@PLANS.register("seeds")
class SeedsPlan(Wrapper):
    """Adaptive seeds around the grid or a search: the next seeds of the undecided rows at each look.

    A look comes when every trial of the inner plan has ended (``seeds: {start, max, until}``)."""

    order = 10

    def __init__(self, sweep: Sweep, store: Any = None, *, inner: Plan, alpha: float = 0.05) -> None:
        super().__init__(sweep, store, inner=inner)
        self.alpha = alpha

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        # Over a search, seeds: {start, max} only names the search's seeds (1..start: the search at the
        # first, its best re-run at the others); adding seeds to sampled rows would re-run untuned configs.
        return sweep.adaptive is not None and sweep.search is None

    def materialize(self, sweep: Sweep, by_trial: Mapping[str, Sequence[Any]]) -> Sweep:
        return materialize_seeds(
            self.inner.materialize(sweep, by_trial), {aid: a[0].attrs for aid, a in by_trial.items() if a}
        )

    def dry_run_notes(self, device_hours: float | None) -> list[str]:
        a = self.sweep.adaptive
        assert a is not None
        bound = f" (at most {device_hours * a.max / a.start:.3g} device-hours)" if device_hours is not None else ""
        own = f"adaptive seeds: the {a.start} seeds above first; undecided rows get more, up to {a.max} each{bound}"
        return [*self.inner.dry_run_notes(device_hours), own]

    def start(self, created: Sequence[Any]) -> Step:
        """The seeds an earlier controller added join the sweep first."""
        inner = self.inner.start(created)
        sweep = self._with_seeds(inner.sweep, inner.sweep)
        spec = sweep.adaptive
        assert spec is not None
        own = (
            f"seeds: {spec.start} per row, up to {spec.max} while a row is undecided (each look at alpha/{spec.looks})"
        )
        return Step(sweep, (*inner.notes, own), inner.more)

    _seen: tuple[int, int] | None = None  # (inner sweep, trials in the store) the last answer was made from

    def _with_seeds(self, inner: Sweep, last: Sweep) -> Sweep:
        """``inner`` (the inner plan's sweep) with the seeds added so far, as the store records them; ``last``
        (the last Step's sweep, the same object) while neither changed: the store reader's memos go by the
        sweep object."""
        by_trial = self.store.by_trial()
        seen = (id(inner), len(by_trial))
        if seen == self._seen:
            return last
        self._seen = seen
        return materialize_seeds(inner, {aid: a[0].attrs for aid, a in by_trial.items() if a})

    _floor: float | None = None
    _floor_read = False

    def _learned_only(
        self, sweep: Sweep, by_row: dict[str, dict[int, float]], base: str
    ) -> tuple[dict[str, dict[int, float]], str]:
        """The rows the table will give a verdict (:mod:`ablate.stats.learning`: those that learned
        something); a line ending the seeds when base learned nothing (the table withholds every verdict,
        and more seeds would not give one). Without the data's floor here, every row."""
        if not self._floor_read:
            from ablate.data.lookup import floor_of
            from ablate.family import family_of

            config = next((t.config for t in sweep.trials if t.row == base), None)
            floor = floor_of(config, family_of(config).unigram_floor) if config else None
            self._floor, self._floor_read = floor, True
        means = {r: statistics.fmean(v.values()) for r, v in by_row.items() if v}
        if base in means and learned(means[base], self._floor) is False:
            return by_row, (
                f"seeds: base learned nothing (dev PPL {means[base]:.2f} >= {LEARNED_RATIO:g} x the unigram floor "
                f"{self._floor:.2f}): the table withholds every verdict and more seeds would not give one; done"
            )
        return {r: v for r, v in by_row.items() if learned(means.get(r, 0.0), self._floor) is not False}, ""

    @staticmethod
    def _not_translating(base_views: Sequence[Any]) -> str:
        """The line ending the seeds when base's dev outputs are not translations yet (chrF of its first
        finished seed, as the table computes it), else ''."""
        from ablate.data.lookup import dev_references
        from ablate.rundir import RunDir

        done = sorted((v for v in base_views if v.state == "done" and v.run_dir), key=lambda v: v.seed)
        if not done:
            return ""
        config = done[0].trial.config
        hyps = RunDir(done[0].run_dir).read_hypotheses(str((config.get("data") or {}).get("valid_split") or "valid"))
        refs = dev_references(config) if hyps else None
        chrf = base_chrf(hyps, refs) if hyps and refs else None
        if translates(chrf) is not False:
            return ""
        return (
            f"seeds: base's dev chrF is {chrf:.1f} (< {MIN_BASE_CHRF:g}): its outputs are not translations yet, so "
            "the table marks no row and more seeds would not give one; done"
        )

    def step(self, sweep: Sweep, room: int, read: Read) -> Step:
        """The inner plan first; then nothing while a trial is waiting or running; at a look, the next
        seeds (or the end)."""
        inner = self.inner.step(sweep, room, read)
        sweep = self._with_seeds(inner.sweep, sweep)
        if inner.more:
            return Step(sweep, inner.notes, True)
        return self._look(sweep, read(sweep), inner.notes)

    def _look(self, sweep: Sweep, trials: Sequence[Any], said: tuple[str, ...]) -> Step:
        """This pass's answer (after ``said``, the inner plan's notes): the sweep with the next seeds, if any,
        and whether more seeds may come."""
        if any(v.state in ("waiting", "running") for v in trials):
            return Step(sweep, said, True)
        spec = sweep.adaptive
        assert spec is not None
        by_row: dict[str, dict[int, float]] = {r: {} for r in sweep.rows}
        for v in trials:
            ppl = v.metrics.get("val/ppl")
            if v.state == "done" and isinstance(ppl, (int, float)) and ppl > 0:
                by_row[v.row][v.seed] = float(ppl)
        groups = {t.row: t.group for t in sweep.trials}
        base = base_row(sweep.rows, groups, {t.row: t.paper for t in sweep.trials})
        by_row, why = self._learned_only(sweep, by_row, base)
        why = why or self._not_translating([v for v in trials if v.row == base])
        if why:
            return Step(sweep, (*said, why), False)
        margin = float((sweep.report.get("equivalence") or {}).get("ppl", 0.02))
        rows = rows_to_extend(spec, by_row, base, self.alpha, margin)
        if not rows:
            return Step(sweep, (*said, f"seeds: every row decided or at {spec.max} seeds; done"), False)
        seeds = {r: {t.seed for t in sweep.trials if t.row == r} for r in (*rows, base)}
        plan = [(r, max(seeds[r]) + 1) for r in rows]  # a failed seed is not drawn again
        plan += [(base, s) for s in sorted({s for _, s in plan} - seeds[base])]  # base pairs with every seed
        new: list[Trial] = [seed_trial(sweep, row, seed) for row, seed in plan]
        sweep = replace(sweep, trials=(*sweep.trials, *new))
        self.store.sync(sweep)
        own = f"seeds: look at alpha/{spec.looks}: one more seed for {len(rows)} undecided row(s): {', '.join(rows)}"
        return Step(sweep, (*said, own), True)
