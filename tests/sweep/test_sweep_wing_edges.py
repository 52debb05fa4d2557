"""Edges of the sweep wing's one route: an empty ``search:``, a search with a seeds mapping, a wrapper that
settles, a stand-in trainer given to any launcher, a journal store that is a folder, a malformed trial_fn."""

from __future__ import annotations

import pytest

from ablate.errors import StoreUnreadable, SweepError
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.launch.local import LocalLauncher
from ablate.sweep.launch.worker import load_trial_fn
from ablate.sweep.plan.adaptive import SeedsPlan
from ablate.sweep.plan.base import Plan, Wrapper
from ablate.sweep.plan.grid import GridPlan
from ablate.sweep.plan.plans import plan_of
from ablate.sweep.plan.search_plan import SearchPlan
from ablate.sweep.store.store import SweepStore

SEARCH = {"metric": "val/ppl", "n_trials": 2, "params": {"train.lr_factor": {"low": 0.5, "high": 2.0}}}


def test_an_empty_search_block_is_no_search(write_sweep) -> None:
    sweep = load_sweep(write_sweep(search=None))
    assert sweep.search is None and isinstance(plan_of(sweep), GridPlan)


def test_seeds_of_a_search_name_its_seeds_and_add_none(write_sweep) -> None:
    """As before plans were wrappers: over a search, seeds: {start, max} gives the search seeds 1..start
    (the search at the first, its best re-run at the others); no adaptive look re-runs sampled rows."""
    sweep = load_sweep(write_sweep(search=SEARCH, seeds={"start": 2, "max": 4}))
    plan = plan_of(sweep)
    assert isinstance(plan, SearchPlan) and not isinstance(plan, SeedsPlan)
    assert sweep.source.seeds == (1, 2)


def test_a_wrapper_that_settles_keeps_settling(write_sweep) -> None:
    class Settling(Wrapper):
        settles = True

    inner: Plan = GridPlan(load_sweep(write_sweep()))
    assert Settling(inner.sweep, inner=inner).settles and not Wrapper(inner.sweep, inner=inner).settles


def test_every_launcher_takes_a_stand_in_trainer(write_sweep) -> None:
    sweep = load_sweep(write_sweep())
    launcher = LocalLauncher(sweep, SweepStore.for_sweep(sweep), trial_fn="pkg.module:train")
    assert launcher.trial_fn == "pkg.module:train"


def test_a_journal_store_that_is_a_folder_is_one_line(write_sweep, tmp_path) -> None:
    (tmp_path / "j.journal").mkdir()
    sweep = load_sweep(write_sweep(store="journal:j.journal"))
    with pytest.raises(StoreUnreadable, match="is not an Optuna journal file"):
        SweepStore.for_sweep(sweep).exists()


@pytest.mark.parametrize("spec", ["train", ":train", "x.py:", "missing_file.py:train"])
def test_a_malformed_trial_fn_is_one_line(spec: str) -> None:
    with pytest.raises(SweepError, match="trial_fn"):
        load_trial_fn(spec)
