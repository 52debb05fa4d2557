"""The dry run's budget columns: steps, epochs and target tokens per trial, from the prepared data."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from ablate.cli import main


def test_dry_run_prints_epochs_and_target_tokens_once_the_data_is_prepared(write_sweep, capsys, monkeypatch, tmp_path):
    from ablate.data.prepare import prepare_data

    monkeypatch.setenv("ABLATE_CACHE", str(tmp_path / "cache"))
    rows = [{"name": "base", "group": "base"}, {"name": "two", "group": "C", "overrides": ["train.epochs=2"]}]
    path = write_sweep(rows=rows)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "epochs and target tokens of 2 trial(s) (base, two): known once their data is prepared" in text
    data = yaml_data(path)
    stats = prepare_data(OmegaConf.create(data), progress=False).epoch_stats(data["max_tokens"])
    assert main(["sweep", str(path), "--dry-run", "--json"]) == 0
    base, two = json.loads(capsys.readouterr().out)["trials"]
    assert (base["budget"], base["steps"]) == ("train.max_steps", 6)
    assert base["epochs"] == pytest.approx(6 / stats.batches)
    assert (two["budget"], two["steps"], two["epochs"]) == ("train.epochs", 2 * stats.batches, 2.0)
    assert two["target_tokens"] == pytest.approx(2 * stats.target_tokens) and two["flops"] > base["flops"]


def yaml_data(sweep_path):
    """The data section a trial of the sweep file gets (the tiny experiment's, over the defaults)."""
    from ablate.sweep.file.spec import load_sweep

    return load_sweep(sweep_path).trials[0].config["data"]
