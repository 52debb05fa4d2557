"""The recipe's config surface (ablate/recipe/check.py): names, args and the keys a recipe reads are
checked at load in one line; the default recipe keeps every trial id; a plugin schedule in one file
registers and is accepted; ``ablate variants`` lists both registries."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.config import load_config, to_dict
from ablate.errors import ConfigError
from ablate.plugins import import_user_module
from ablate.recipe import OPTIMIZERS, SCHEDULES
from ablate.sweep.file.ids import trial_id

REPO = Path(__file__).resolve().parents[2]
LM = REPO / "experiments" / "lm-mini.yaml"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.optimizer=mun"], "unknown optimizer 'mun'; did you mean 'muon'?"),
        (["train.schedule=cosin", "train.lr=1e-3"], "did you mean 'cosine'?"),
        (["train.optimizer={name: adamw, args: {momentum: 0.9}}"], "'adamw' does not take the argument(s) momentum"),
        (["train.schedule={name: wsd, args: {shape: sqr}}", "train.lr=1e-3"], "wsd: shape must be one of"),
        (["train.schedule=cosine"], "schedule 'cosine' needs the peak learning rate: set train.lr"),
        (["train.optimizer=schedulefree_adamw", "train.schedule=linear", "train.lr=1e-3"], "runs under constant only"),
        (
            ["train.optimizer=lion", "train.schedule=linear", "train.lr=1e-4", "train.adam_beta2=0.95"],
            "does not read it",
        ),
        (["train.schedule=linear", "train.lr=1e-3", "train.max_steps=50"], "max_steps must exceed"),
        (["train.lr=1e-3", "train.lr_factor=2"], "noam's peak is train.lr when it is set"),
    ],
)
def test_a_bad_recipe_is_one_line_at_load(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(LM, overrides=overrides)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert "command line" in str(info.value).split(": train.")[0]  # the layer that set it


def test_an_inherited_key_of_the_replaced_recipe_is_not_an_error() -> None:
    # lm-mini sets lr_factor (noam's); a later layer choosing cosine replaces that recipe
    cfg = load_config(LM, overrides=["train.optimizer=lion", "train.schedule=cosine", "train.lr=3e-4"])
    assert cfg.train.optimizer == "lion" and cfg.train.lr == 3e-4


def test_the_default_recipe_keeps_every_trial_id() -> None:
    plain = to_dict(load_config(REPO / "experiments" / "mini.yaml"))
    before = {**plain, "train": {k: v for k, v in plain["train"].items() if k not in ("optimizer", "schedule", "lr")}}
    assert trial_id(plain) == trial_id(before)
    moved = {**plain, "train": {**plain["train"], "optimizer": "adamw"}}
    assert trial_id(moved) != trial_id(plain)


def test_a_plugin_schedule_in_one_file_registers_and_loads() -> None:
    import_user_module("inverse_sqrt_cooldown", [REPO / "examples"])
    assert "inverse_sqrt_cooldown" in SCHEDULES
    cfg = load_config(LM, overrides=["train.schedule=inverse_sqrt_cooldown", "train.lr=3e-3"])
    assert cfg.train.schedule == "inverse_sqrt_cooldown"


def test_ablate_variants_lists_the_recipe_registries() -> None:
    from ablate.variants_cli import listing

    kinds = {kind: [name for name, *_ in entries] for kind, _, entries in listing()}
    assert {"adam", "adamw", "muon", "lion", "schedulefree_adamw"} <= set(kinds["optimizer"])
    assert {"noam", "cosine", "wsd", "linear", "constant"} <= set(kinds["schedule"])
    for registry in (OPTIMIZERS, SCHEDULES):
        assert all(doc and "\n" not in doc for _, doc in registry.describe())
