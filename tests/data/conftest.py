"""Fixtures for the data tests: an isolated cache, small builtin configs, the shared real corpora."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ablate.config import load_config

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
MULTI30K = SHARED / "multi30k"
SMALL_BUILTIN = ["data.args.n_train=3000", "data.args.n_valid=200", "data.args.n_test=200"]


@pytest.fixture
def multi30k_root() -> Path:
    """The real Multi30k raw files (train.en, valid.en, test2016.en ...) or a skip saying why."""
    if not (MULTI30K / "train.en").is_file():
        pytest.skip(f"the real Multi30k files are not in {MULTI30K} (only the project's dev machines have them)")
    return MULTI30K


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder (also $ABLATE_CACHE, so nothing reaches the user's ~/.cache)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ABLATE_CACHE", str(folder))
    return folder


@pytest.fixture
def data_cfg(cache: Path) -> Callable[..., Any]:
    """``data_cfg("data.vocab_size=500", ...)`` -> a validated ``data`` section of a small builtin corpus."""

    def make(*overrides: str, builtin_small: bool = True) -> Any:
        base = [*SMALL_BUILTIN] if builtin_small else []
        return load_config(overrides=[*base, "data.vocab_size=600", *overrides]).data

    return make


def _write_pair(folder: Path, name: str, src: list[str] | bytes, tgt: list[str] | bytes) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / f"{name}.en", folder / f"{name}.de"
    for path, content in zip(paths, (src, tgt)):
        path.write_bytes(content if isinstance(content, bytes) else "".join(f"{line}\n" for line in content).encode())
    return paths


@pytest.fixture
def write_pair() -> Callable[..., tuple[Path, Path]]:
    """``write_pair(folder, "train", src_lines_or_bytes, tgt_lines_or_bytes)`` -> (train.en, train.de)."""
    return _write_pair
