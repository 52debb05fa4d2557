"""Trial ids are stored forever (the store, run dirs, W&B run ids): renaming a config key must not change them."""

from __future__ import annotations

from pathlib import Path

import yaml

from ablate.sweep.file.spec import load_sweep, trial_id

SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"

# The ids of sweeps/table3-mini.yaml as ablate 0.1 computed them (before model.norm_placement became
# the model.residual slot), when its recipe was the paper's post-norm. A change here re-runs every
# finished sweep of every user: do not update these values without a migration. (The file's recipe
# changed later, each time a deliberate change of every trial: pre-norm, then 1,200 steps of 512
# tokens, then a corpus with synonyms and fewer training pairs; without LATER_LINES and with the
# overrides below it is the configuration these ids were computed from.)
PINNED = {"base": "c8ce1ac013439da3", "N=4": "4547b7f23320bbc3"}
EARLIER_RECIPE = [
    "model.residual=post",
    "data.max_tokens=2048",
    "train.max_steps=300",
    "train.warmup_steps=100",
    "train.val_every_steps=100",
]
LATER_LINES = ("data.args.synonyms=", "data.args.n_train=")  # new keys: an override cannot remove them


def test_table3_mini_ids_are_those_of_earlier_versions(tmp_path: Path) -> None:
    data = yaml.safe_load((SWEEPS / "table3-mini.yaml").read_text(encoding="utf-8"))
    kept = [o for o in data["overrides"] if not o.startswith(LATER_LINES)]
    assert len(kept) == len(data["overrides"]) - len(LATER_LINES)
    data.update(overrides=kept, experiment=str((SWEEPS / data["experiment"]).resolve()))
    earlier = tmp_path / "table3-mini.yaml"  # a trial's id does not depend on the file's place or name
    earlier.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    ids = {t.row: t.trial_id for t in load_sweep(earlier, EARLIER_RECIPE).trials}
    assert {row: ids[row] for row in PINNED} == PINNED


def test_residual_hashes_as_the_flag_it_replaced() -> None:
    new = {"model": {"residual": "pre", "d_model": 8}, "train": {"seed": 1}}
    old = {"model": {"norm_placement": "pre", "d_model": 8}, "train": {"seed": 1}}
    assert trial_id(new) == trial_id(old)
    other = {"model": {"residual": "sandwich", "d_model": 8}, "train": {"seed": 1}}
    assert trial_id(other) != trial_id(new)


def test_a_key_added_later_changes_the_id_only_when_set() -> None:
    before = {"data": {"vocab_size": 600}, "train": {"seed": 1}}
    unset = {"data": {"vocab_size": 600, "max_train_pairs": None}, "train": {"seed": 1}}
    assert trial_id(unset) == trial_id(before)
    assert trial_id({"data": {"vocab_size": 600, "max_train_pairs": 500}, "train": {"seed": 1}}) != trial_id(before)


def test_a_rows_ids_at_other_seeds_are_those_of_its_configs(tmp_path: Path) -> None:
    """The seeds after a row's first are given ids from the row's id text with each seed written in
    (ablate.sweep.file.ids.SeedIds): each must be the id of that trial's own config, byte for byte."""
    data = yaml.safe_load((SWEEPS / "table3-mini.yaml").read_text(encoding="utf-8"))
    data.update(experiment=str((SWEEPS / data["experiment"]).resolve()), seeds=[1, 2, 7, 10, 123456789])
    path = tmp_path / "seeds.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    trials = load_sweep(path, ["model.residual=post"]).trials  # an old key's value is hashed as before
    assert len({t.trial_id for t in trials}) == len(trials)
    for t in trials:
        assert t.trial_id == trial_id(t.config), (t.row, t.seed)
        assert t.config["train"]["seed"] == t.seed
    data.update(seeds=[7])  # the seed loaded on its own: the same trial as the copy made from seed 1
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    alone = {t.row: t for t in load_sweep(path, ["model.residual=post"]).trials}
    for t in (t for t in trials if t.seed == 7):
        same = alone[t.row]
        assert (t.trial_id, t.run_dir, t.config) == (same.trial_id, same.run_dir, same.config)


def test_seed_ids_fall_back_when_the_mark_is_not_alone() -> None:
    from ablate.sweep.file.ids import _SEED_MARK, SeedIds

    config = {"train": {"seed": 1}, "model": {"note": _SEED_MARK}}  # the mark twice: no shortcut
    ids = SeedIds(config)
    assert not ids._parts and ids(5) == trial_id({**config, "train": {"seed": 5}})
