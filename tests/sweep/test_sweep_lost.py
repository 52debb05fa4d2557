"""Attempts lost from outside the trial (killed, interrupted, stale) resume without spending a retry while
the trial makes progress; FREE_STALLS losses in a row at the same step spend retries as crashes."""

from __future__ import annotations

import json
from pathlib import Path

from ablate.sweep.store.state import FREE_STALLS, Attempt, free_retry


def _lost(run_dir: Path, step: int | None, kind: str = "killed", **attrs) -> Attempt:
    if step is not None:
        (run_dir / "progress.json").write_text(json.dumps({"step": step}))
    return Attempt(1, 1, "FAIL", {"run_dir": str(run_dir), "failure_kind": kind, **attrs})


def test_a_kill_with_progress_resumes_for_free(tmp_path):
    assert free_retry(_lost(tmp_path, None)) == {"resumed_at": 0, "stalls": 0}  # killed before its first step
    assert free_retry(_lost(tmp_path, 7, resumed_at=3, stalls=2)) == {"resumed_at": 7, "stalls": 0}
    for kind in ("interrupted", "stale"):
        assert free_retry(_lost(tmp_path, 7, kind, resumed_at=3)) is not None


def test_losses_that_reach_no_new_step_stop_being_free(tmp_path):
    attrs = {"resumed_at": 7, "stalls": 0}
    for _ in range(FREE_STALLS - 1):
        attrs = free_retry(_lost(tmp_path, 7, **attrs))
        assert attrs is not None and attrs["resumed_at"] == 7
    assert attrs["stalls"] == FREE_STALLS - 1
    assert free_retry(_lost(tmp_path, 7, **attrs)) is None  # the next one spends a retry, as a crash does
    assert free_retry(_lost(tmp_path, 8, **attrs)) == {"resumed_at": 8, "stalls": 0}  # a new step: free again
    # killed between two checkpoints: the run re-logs steps it had reached before; those are no progress
    assert free_retry(_lost(tmp_path, 5, resumed_at=7, stalls=0)) == {"resumed_at": 7, "stalls": 1}


def test_crashes_and_errors_are_never_free(tmp_path):
    for kind in ("crashed", "error", "oom", "diverged", "cancelled", None):
        assert free_retry(_lost(tmp_path, 9, kind)) is None


def test_a_slurm_job_killed_from_outside_is_a_loss_not_a_crash():
    from ablate.sweep.launch.slurm import ended_kind
    from ablate.sweep.launch.slurm_queue import exit_signal

    assert [exit_signal(c) for c in ("0:9", "0:15", "1:0", "0:0", "", "junk")] == [9, 15, None, None, None, None]
    assert ended_kind("FAILED", 9) == "killed" and ended_kind("NODE_FAIL", None) == "killed"
    assert ended_kind("FAILED", None) == "crashed" and ended_kind("FAILED", 11) == "crashed"  # SIGSEGV: a crash
    assert ended_kind("CANCELLED", 9) == "cancelled" and ended_kind("TIMEOUT", None) == "timeout"
    assert ended_kind("OUT_OF_MEMORY", 9) == "oom"  # SLURM's memory limit: it would repeat, not a kill


def test_a_retry_does_not_carry_a_free_retrys_marks(write_sweep):
    """A retry that spends one (after a crash) carries no mark of a free one, so the marks tell them apart."""
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store.store import SweepStore

    sweep = load_sweep(write_sweep())
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    (first,) = store.attempts()
    store.fail(first.storage_id, "killed", "killed")
    assert store.retry(store.get(first.storage_id), {"resumed_at": 4, "stalls": 0})
    second = store.attempts()[-1]
    assert second.attrs["resumed_at"] == 4
    store.fail(second.storage_id, "boom", "crashed")
    assert store.retry(store.get(second.storage_id))
    assert "resumed_at" not in store.attempts()[-1].attrs and "stalls" not in store.attempts()[-1].attrs


def test_a_kill_shown_only_in_a_step_of_the_job_is_a_kill():
    """What sacct printed on a real cluster for four workers killed with -9: one job's codes carried no
    signal (srun force-terminated its step, CANCELLED 0:9) and its kill was read as a crash."""
    from ablate.sweep.launch.slurm import ended_kind
    from ablate.sweep.launch.slurm_queue import parse_sacct

    out = "\n".join(
        [
            "10_0|FAILED|9:0|0:9",
            "10_0.batch|FAILED|9:0|",
            "10_0.0|FAILED|0:9|",
            "10_1|FAILED|9:0|0:0",
            "10_1.batch|FAILED|9:0|",
            "10_1.extern|COMPLETED|0:0|",
            "10_1.0|CANCELLED|0:9|",
            "10_4|COMPLETED|0:0|0:0",
            "10_4.batch|COMPLETED|0:0|",
            "11|FAILED|1:0|0:0",
            "11.batch|FAILED|1:0|",
            "12|CANCELLED by 0|0:0|0:0",
            "",
        ]
    )
    ended = parse_sacct(out)
    assert ended == {
        "10_0": ("FAILED", 9),
        "10_1": ("FAILED", 9),
        "10_4": ("COMPLETED", None),
        "11": ("FAILED", None),
        "12": ("CANCELLED", None),
    }
    kinds = {job: ended_kind(state, sig) for job, (state, sig) in ended.items() if state != "COMPLETED"}
    assert kinds == {"10_0": "killed", "10_1": "killed", "11": "crashed", "12": "cancelled"}
