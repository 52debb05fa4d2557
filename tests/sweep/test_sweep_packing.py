"""Packing: ``launcher.trials_per_device: k`` runs up to k one-device trials at once on one device.

On CPU the same logic runs with cores as the devices: two trials share one slot (one thread each). A
packed trial that runs out of memory (the fake trainer raises torch's OutOfMemoryError while it shares
its device) is retried once alone on a device, with no retry spent; out of memory alone is final.
Local here; Ray in test_sweep_ray.py; SLURM in test_sweep_slurm_packing.py.
"""

from __future__ import annotations

import os

import pytest
from sweep_harness import attempts_by_row, calls

from ablate.cli import main
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.launch.devices import pick_seats
from ablate.sweep.launch.local import LocalLauncher
from ablate.sweep.loader import load_results
from ablate.sweep.store.store import SweepStore

ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={32 * (i + 1)}"]} for i in range(4)]


def test_a_trial_takes_the_emptiest_device_and_a_retried_one_a_whole_device():
    assert pick_seats([0, 0, 1, 1], per_trial=1, per_device=2) == [0]
    assert pick_seats([0, 1, 1], per_trial=1, per_device=2) == [1]  # device 1 has no neighbour yet
    assert pick_seats([0, 1, 1], per_trial=1, per_device=2, alone=True) == [1, 1]
    assert pick_seats([0, 1], per_trial=1, per_device=2, alone=True) is None
    assert pick_seats([0, 1, 2, 2], per_trial=2, per_device=2) == [2, 0]
    assert pick_seats([], per_trial=1, per_device=2) is None


def test_packing_multiplies_the_trials_a_launcher_runs_at_once(write_sweep):
    path = write_sweep(launcher={"name": "local", "slots": 2, "trials_per_device": 4})
    assert LocalLauncher(load_sweep(path), SweepStore.for_sweep(load_sweep(path))).capacity() == 8


def test_packing_needs_one_device_trials(write_sweep, capsys):
    path = write_sweep(launcher={"name": "local", "slots": 4, "devices_per_trial": 2, "trials_per_device": 2})
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "trials_per_device > 1 packs one-device trials; set devices_per_trial: 1" in capsys.readouterr().err


@pytest.mark.integration
def test_two_trials_share_one_slot_at_once(write_sweep, fake_trainer):
    path = write_sweep(
        rows=ROWS[:2],
        launcher={"name": "local", "slots": 1, "trials_per_device": 2, "poll_s": 0.2},
        overrides=["train.max_steps=12"],
        fake={"*": {"step_s": 0.25}},
    )
    assert main(["sweep", str(path)]) == 0
    (a,), (b,) = attempts_by_row(path).values()
    assert a.attrs["devices"] == b.attrs["devices"] == [0] and a.attrs["packed"] == b.attrs["packed"] == 2
    (ra, rb) = load_results(path)
    ca, cb = calls(ra.run_dir)[0], calls(rb.run_dir)[0]
    assert ca["on_device"] == cb["on_device"] == "2" and ca["threads"]["omp"] == "1"
    ends = [c["time"] + r.metrics["wall_time_s"] for c, r in ((ca, ra), (cb, rb))]
    assert max(ca["time"], cb["time"]) < min(ends)  # each started before the other ended: they ran together


@pytest.mark.integration
def test_a_packed_trial_out_of_memory_is_retried_alone_without_spending_a_retry(write_sweep, fake_trainer, capsys):
    path = write_sweep(
        rows=ROWS[:2],
        launcher={"name": "local", "slots": 1, "trials_per_device": 2, "poll_s": 0.2},
        overrides=["train.max_steps=4"],
        fake={"r0": {"mode": "oom_packed"}},
        max_retries=0,
    )
    assert main(["sweep", str(path)]) == 0
    attempts = attempts_by_row(path)
    assert [(a.state, a.kind) for a in attempts["r0"]] == [("FAIL", "oom"), ("COMPLETE", None)]
    first, retry = attempts["r0"]
    assert "OutOfMemoryError: CUDA out of memory" in first.attrs["failure"] and first.attrs["packed"] == 2
    assert retry.attrs["alone"] is True and "packed" not in retry.attrs
    assert calls(retry.attrs["run_dir"])[-1]["on_device"] == "1"
    assert "retrying r0 seed 1 alone on a device: it ran out of memory packed" in capsys.readouterr().out


@pytest.mark.integration
def test_out_of_memory_alone_is_final(write_sweep, fake_trainer):
    path = write_sweep(
        rows=ROWS[:1],
        launcher={"name": "local", "slots": 1, "poll_s": 0.2},
        overrides=["train.max_steps=4"],
        fake={"r0": {"mode": "oom"}},
        max_retries=2,
    )
    assert main(["sweep", str(path)]) == 1
    assert [(a.state, a.kind) for a in attempts_by_row(path)["r0"]] == [("FAIL", "oom")]  # it would fail again


def test_a_sweep_shares_one_compile_cache_beside_its_runs(tmp_path, monkeypatch):
    from ablate.sweep.launch.worker import COMPILE_CACHE, share_compile_cache

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    share_compile_cache(tmp_path / "runs" / "t" / "abc123")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "runs" / "t" / COMPILE_CACHE)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/mine")
    share_compile_cache(tmp_path / "runs" / "t" / "abc123")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/mine"  # the user's own cache wins
