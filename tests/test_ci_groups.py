"""The integration tier runs on 2 xdist workers with ``--dist loadgroup``: the tests marked ``slurm`` share
one group and those marked ``ray`` another (tests/conftest.py), so two workers never race one cluster.

pytest-xdist groups by a suffix it writes into each test's node id. pytest 9.2 keeps the node id where
xdist 3.8 cannot write it: the groups were silently ignored and SLURM tests ran on both workers at once
(hence ``pytest<9.2`` in the dev extra). This runs a tiny suite the way CI runs the tier and checks each
group stayed on one worker, so a version that breaks it again fails here, not as a flaky cluster test.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent

CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("ablate_tests_conftest", {str(HERE / "conftest.py")!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
pytest_collection_modifyitems = module.pytest_collection_modifyitems
"""

TESTS = """
import pytest

@pytest.mark.slurm
@pytest.mark.parametrize("i", range(4))
def test_on_slurm(i):
    pass

@pytest.mark.ray
@pytest.mark.parametrize("i", range(4))
def test_on_ray(i):
    pass

@pytest.mark.parametrize("i", range(4))
def test_anywhere(i):
    pass
"""


def test_each_cluster_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_groups.py").write_text(textwrap.dedent(TESTS))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slurm: x\n    ray: x\n")
    cmd = [sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, name, group in re.findall(r"\[(gw\d)\].*PASSED \S+::(test_\w+)\[\d\](?:@(\w+))?", done.stdout):
        workers[group or "none"].add(worker)
        assert (group or None) == {"test_on_slurm": "slurm", "test_on_ray": "ray"}.get(name), (name, group)
    assert len(workers["slurm"]) == 1 and len(workers["ray"]) == 1, dict(workers)
