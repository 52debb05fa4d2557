"""The README is the front door: its commands must exist and its Python example must run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(name: str) -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "readme_block.py"), str(ROOT / "README.md"), name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out


def test_ci_runs_the_marked_readme_blocks() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for name in ("tests", "main"):
        assert _block(name).strip(), f"README block ci:{name} is empty"
        assert f"readme_block {name}" in ci, f".ci/run does not run the README block ci:{name}"


def test_readme_installs_cpu_torch_before_the_project() -> None:
    for name in ("tests", "main"):
        block = _block(name)
        assert block.index("pip install torch==2.13.0") < block.index('pip install -e ".[dev]"')


def test_main_job_names_files_that_exist() -> None:
    lines = [ln for ln in _block("main").splitlines() if ln.strip().startswith("ablate ")]
    assert lines, "the README's main job runs no ablate command"
    for line in lines:
        for arg in shlex.split(line.split("#")[0])[2:]:
            if arg.endswith((".yaml", ".yml")):
                assert (ROOT / arg).is_file(), f"README main job names a missing file: {arg}"


def test_python_example_runs(tmp_path: Path) -> None:
    m = re.search(r"```python\n(.*?)```", README, re.S)
    assert m, "README has no Python example"
    proc = subprocess.run([sys.executable, "-c", m.group(1)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The example prints the parameter count of base with h=4, d_k=128: a positive integer.
    assert int(proc.stdout.strip().splitlines()[-1]) > 40_000_000
