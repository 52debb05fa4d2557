"""The Table 3 sweep files: valid YAML, every row loads as a config, and each row changes what the paper's does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ablate.config import load_config
from ablate.report.paper import PAPER, changed_settings, settings_of
from ablate.sweep.file.spec import load_sweep

SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"
TABLE3_FILES = ["table3.yaml", "table3-mini.yaml", "table3-multi30k.yaml"]


@pytest.mark.parametrize("name", TABLE3_FILES)
def test_every_row_loads_as_a_config(name: str) -> None:
    path = SWEEPS / name
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    experiment = path.parent / data["experiment"]
    assert [row["paper"] for row in data["rows"]] == list(PAPER)  # all 20 rows, in the paper's order
    for row in data["rows"]:
        assert row["group"] == PAPER[row["paper"]].group
        cfg = load_config(experiment, layers=[("sweep", data["overrides"]), (row["name"], row.get("overrides", []))])
        assert cfg.model.d_model > 0


@pytest.mark.parametrize("name", TABLE3_FILES)
def test_each_row_changes_the_cells_the_paper_changes(name: str) -> None:
    sweep = load_sweep(SWEEPS / name)
    assert len(sweep.trials) == 20 and len(sweep.rows) == 20
    base = settings_of(sweep.trials[0].config)
    for t in sweep.trials:
        changed = changed_settings(settings_of(t.config), base)
        # Scaled sweeps change other values, but always the same Table 3 columns as the paper's row.
        assert set(changed) == set(PAPER[t.paper].changes), t.row
        if name == "table3.yaml":  # paper scale: the very values of the paper
            assert changed == PAPER[t.paper].changes, t.row
    if name == "table3.yaml":
        assert base == PAPER["base"].settings


def test_paper_scale_recipe() -> None:
    sweep = load_sweep(SWEEPS / "table3.yaml")
    cfg = sweep.trials[0].config
    assert cfg["data"]["corpus"] == "wmt14_en_de" and cfg["data"]["vocab_size"] == 37000
    tokens = cfg["data"]["max_tokens"] * cfg["trainer"]["devices"] * cfg["train"]["accumulate_grad_batches"]
    assert tokens == 25_000  # ~25k source + 25k target tokens per step (section 5.1)
    assert (cfg["eval"]["beam_size"], cfg["eval"]["length_penalty"]) == (4, 0.6)
    assert sweep.launcher["name"] == "slurm" and sweep.launcher["gpus_per_node"] == cfg["trainer"]["devices"]
    big = next(t for t in sweep.trials if t.paper == "big")
    assert big.resources["timeout_min"] > sweep.launcher["timeout_min"]


def test_mini_sweep_runs_locally_on_cpu_offline() -> None:
    sweep = load_sweep(SWEEPS / "table3-mini.yaml")
    assert sweep.launcher["name"] == "local" and sweep.launcher["slots"] == 2
    for t in sweep.trials:
        assert t.config["data"]["corpus"] == "builtin" and t.config["trainer"]["accelerator"] == "cpu"
    steps = {t.paper: t.config["train"]["max_steps"] for t in sweep.trials}
    assert steps["big"] == 3 * steps["base"]  # as 300K / 100K in the paper
