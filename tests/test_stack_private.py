"""Each private API of the stack that ablate uses (ablate/stack_private.py) against its public route, on
real objects: an upgrade of Optuna, OmegaConf or sacreBLEU that changes one fails here first."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from omegaconf import DictConfig

import ablate.stack_private as sp


def test_optuna_trial_id_is_the_storage_id_of_the_public_route(tmp_path) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 's.db'}")
    other = optuna.create_study(study_name="other", storage=storage)
    study = optuna.create_study(study_name="s", storage=storage)
    other.ask()  # so that storage ids and trial numbers differ
    asked = [study.ask() for _ in range(3)]
    study_id = storage.get_study_id_from_name("s")
    for trial, frozen in zip(asked, study.get_trials(deepcopy=False)):
        public = storage.get_trial_id_from_study_id_trial_number(study_id, frozen.number)
        assert sp.optuna_trial_id(frozen) == sp.optuna_trial_id(trial) == public
    assert {sp.optuna_trial_id(t) for t in study.get_trials()} != {t.number for t in study.get_trials()}


def test_omegaconf_node_keeps_the_schema_type() -> None:
    from ablate.config import load_config

    cfg = load_config("experiments/mini.yaml")
    node = sp.omegaconf_node(cfg, "model")
    assert isinstance(node, DictConfig) and node == cfg["model"]
    assert sp.omegaconf_node(cfg.model, "d_model")._value() == cfg.model.d_model


def test_bleu_from_recorded_statistics_is_the_corpus_bleu() -> None:
    from sacrebleu.metrics import BLEU

    refs = ["the cat sat on the mat", "a dog runs in the park", "it rains today"]
    hyps = ["the cat sat on a mat", "a dog runs in a park", "it is raining today"]
    metric = sp.recording_bleu()(references=[refs])
    stats = np.array(metric.statistics(hyps))
    assert stats.shape[0] == len(hyps)
    ours = sp.bleu_from_stats(metric, stats.sum(axis=0)).score
    assert ours == pytest.approx(BLEU().corpus_score(hyps, [refs]).score)


def test_an_untested_version_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import optuna

    sp.check_version.cache_clear()
    monkeypatch.setattr(optuna, "__version__", "99.0")
    with pytest.warns(UserWarning, match=r"optuna 5\.x only, and 99\.0 is installed"):
        assert sp.check_version("optuna") is False
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert sp.check_version("optuna") is False
    assert again == []  # once per library
    sp.check_version.cache_clear()


def test_the_installed_stack_is_a_tested_one() -> None:
    sp.check_version.cache_clear()
    assert all(sp.check_version(lib) for lib in sp.TESTED)


def test_the_recompile_limit_is_raised_never_lowered() -> None:
    import torch._dynamo.config as dynamo_config

    from ablate.stack_private import raise_recompile_limit

    name = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"
    before = getattr(dynamo_config, name)
    try:
        assert raise_recompile_limit(before + 100) == before + 100 == getattr(dynamo_config, name)
        assert raise_recompile_limit(1) == before + 100  # never lowered
    finally:
        setattr(dynamo_config, name, before)
