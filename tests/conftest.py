"""Shared pytest fixtures (generic only; each test directory keeps its own specifics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TINY_VOCAB = 32  # vocabulary size that goes with tiny_model_cfg (4 special ids + 28 "words")


@pytest.fixture
def tiny_model_cfg() -> dict[str, Any]:
    """A ``model`` section small enough for any test: d_model 16, 2 heads, 1+1 layers (vocab: TINY_VOCAB).

    A fresh plain dict per test: change it freely, pass it to ablate.build_model(cfg, vocab_size=32).
    """
    return {
        "n_layers": 1,
        "d_model": 16,
        "d_ff": 32,
        "n_heads": 2,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "max_positions": 64,
    }


# A quiet one-process CPU Trainer: no logger, checkpoints, progress bar, model summary or sanity check.
CPU_TRAINER = {
    "accelerator": "cpu",
    "devices": 1,
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "num_sanity_val_steps": 0,
}


@pytest.fixture
def cpu_trainer() -> Any:
    """cpu_trainer(**overrides) -> a Lightning Trainer with :data:`CPU_TRAINER` and the overrides."""
    import lightning.pytorch as pl

    return lambda **kw: pl.Trainer(**{**CPU_TRAINER, **kw})


@pytest.fixture
def isolated_registries(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Variants a test registers (a plugin it imports) vanish after it, with the plugin's module: every
    model registry is a copy for the test, and the modules imported from the folders it put on sys.path
    are forgotten. Without it a
    plugin stays registered for the tests that run after it in the same process, and the tests that list
    the registries (the revisited sweeps' rows, the catalogue's error lines) fail in some orders only."""
    import os
    import sys

    from ablate.family import FAMILIES
    from ablate.model.slots import SLOT_REGISTRIES

    for reg in [*SLOT_REGISTRIES.values(), FAMILIES]:
        monkeypatch.setattr(reg, "_entries", dict(reg._entries))
        monkeypatch.setattr(reg, "_docs", dict(reg._docs))
    before, loaded = list(sys.path), set(sys.modules)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    added = [str(Path(p).resolve()) + os.sep for p in sys.path if p not in before]  # the plugins' folders
    # Only what the test imported from those folders: a sweep's imports put the working directory on the
    # path too (the repository, which may hold the venv), and forgetting torch or ablate there made the next
    # import of torch in the process re-initialise its C extension and crash the worker (CI, twice).
    installed = (str(Path(sys.prefix).resolve()) + os.sep, str(Path(__file__).resolve().parents[1] / "ablate") + os.sep)
    for name, module in list(sys.modules.items()):
        where = str(getattr(module, "__file__", None) or "")
        if name not in loaded and not where.startswith(installed) and any(where.startswith(f) for f in added):
            del sys.modules[name]


# Tests that share one cluster run in one xdist group, so that under `pytest -n 2 --dist loadgroup` two
# workers never race one SLURM queue or one Ray cluster (each group runs on one worker, in order).
CLUSTER_GROUPS = ("slurm", "ray")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in CLUSTER_GROUPS:
            if item.get_closest_marker(name) is not None:
                item.add_marker(pytest.mark.xdist_group(name))
                break


def pytest_configure(config: pytest.Config) -> None:
    """A prepared-data cache private to this test process, unless $ABLATE_CACHE is set by the user: tests
    never write to the user's ~/.cache, and data that one xdist worker prepares cannot change what a test
    of the other reads mid-test (a table's unigram floor appears once a split is prepared). A worker
    inherits its controller's environment, so a cache this hook made (``_TEST_CACHE``) is replaced."""
    import os
    import tempfile

    if os.environ.get("ABLATE_CACHE") in (None, "", os.environ.get(_TEST_CACHE)):
        folder = tempfile.mkdtemp(prefix="ablate-test-cache-")
        os.environ["ABLATE_CACHE"] = os.environ[_TEST_CACHE] = folder
        config.add_cleanup(_remove_tree(folder))


_TEST_CACHE = "ABLATE_TEST_SESSION_CACHE"  # the cache pytest_configure made, told apart from the user's


def _remove_tree(folder: str) -> Any:
    import shutil

    return lambda: shutil.rmtree(folder, ignore_errors=True)
