"""Provenance of a run: every repository its code came from (ablate, the sweep file's, plugins') with
SHA, dirty flag and the uncommitted diff as a patch file; every installed package."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from ablate.train import provenance as prov


def _repo(path: Path) -> Path:
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    (path / "plugin.py").write_text("X = 1\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    (path / "plugin.py").write_text("X = 2  # changed after the commit\n")
    (path / "new.py").write_text("")
    return path


def test_the_sweep_files_repository_is_recorded_with_its_diff(tmp_path: Path, monkeypatch) -> None:
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    repo = _repo(tmp_path / "research")
    monkeypatch.setenv(prov.SWEEP_DIR_ENV, str(repo))
    run = tmp_path / "run"
    run.mkdir()
    records = {Path(r["path"]).name: r for r in prov.repositories(run)}
    mine = records["research"]
    assert mine["dirty"] is True and len(mine["sha"]) == 40 and mine["untracked"] == ["new.py"]
    patch = (run / mine["patch"]).read_text()
    assert "-X = 1" in patch and "+X = 2  # changed after the commit" in patch


def test_plugin_modules_outside_ablate_are_code_folders(tmp_path: Path, monkeypatch) -> None:
    module = types.ModuleType("my_variants")
    module.__file__ = str(tmp_path / "lab" / "my_variants.py")
    monkeypatch.setitem(sys.modules, "my_variants", module)
    cls = type("Mine", (), {"__module__": "my_variants"})

    class Reg:
        def __iter__(self):
            return iter(["mine"])

        def get(self, name):
            return cls

    monkeypatch.setattr("ablate.registry.all_registries", lambda: {"positional": Reg()})
    assert (tmp_path / "lab") in prov._code_folders()


def test_every_installed_package_is_listed() -> None:
    packages = prov.installed_packages()
    assert {"torch", "lightning", "optuna", "scipy"} <= {k.lower() for k in packages}
    assert len(packages) > 30
