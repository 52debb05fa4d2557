"""The chaos run, bounded: 30 faults from a fixed seed (kill -9 of workers and of the controller, SIGTERM
to the controller, a second controller) on a 12-trial sweep of the fake trainer; nothing lost, no retry
spent, every metric as in the undisturbed run; the same on a PostgreSQL server's store and on a real SLURM
cluster. The full runs: ``python tests/sweep/chaos.py --faults 100``
(and ``--trainer real``)."""

from __future__ import annotations

import pytest
from chaos import run

pytestmark = pytest.mark.integration


def test_a_chaos_run_loses_nothing_and_spends_no_retry(tmp_path):
    report = run(tmp_path, faults=30, seed=0, trainer="fake", rows=6)
    assert report.problems == [], "\n".join(report.lines())
    assert sum(report.faults.values()) == 30 and report.trials == 12
    assert report.compared >= 12 * 4  # val/ppl, val/bleu, test/bleu, step (at least) of every trial
    assert sum(report.lost.values()) > 0  # the faults did cost attempts, and each was resumed for free


def test_a_chaos_run_on_a_postgresql_store_loses_nothing(postgres_server, tmp_path):
    report = run(tmp_path, faults=15, seed=2, trainer="fake", rows=4, postgres=postgres_server)
    assert report.problems == [], "\n".join(report.lines())
    assert sum(report.faults.values()) >= 10 and report.trials == 8


@pytest.mark.slurm
def test_a_chaos_run_on_a_real_slurm_cluster_loses_nothing(slurm_cluster, tmp_path):
    report = run(tmp_path, faults=15, seed=1, trainer="fake", rows=4, steps=24, launcher="slurm")
    assert report.problems == [], "\n".join(report.lines())
    assert sum(report.faults.values()) >= 10 and report.trials == 8
