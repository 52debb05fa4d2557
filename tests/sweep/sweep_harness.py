"""Helpers of the sweep tests (a module with a unique name, so tests import it whatever conftest
pytest saw first): the fake trainer's injection and environment, its call log, and the CLI as a
subprocess."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

TINY_EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": 6, "warmup_steps": 2, "val_every_steps": 3, "log_every_steps": 1},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
}

# What a trial trains with in the tests, on every launcher (a local slot, a SLURM task, a Ray job).
FAKE_TRIAL_FN = f"{HERE / 'fake_trainer.py'}:train"


def use_fake_trainer(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Make the launchers of this process train with the fake trainer (their own settings)."""
    from ablate.sweep.launch.local import LocalLauncher
    from ablate.sweep.launch.ray_jobs import RayLauncher
    from ablate.sweep.launch.slurm import SlurmLauncher

    set_attr(LocalLauncher, "trial_fn", FAKE_TRIAL_FN)
    set_attr(SlurmLauncher, "trial_fn", FAKE_TRIAL_FN)
    set_attr(RayLauncher, "trial_fn", FAKE_TRIAL_FN)


def fake_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of a controller subprocess: quiet, offline, this folder importable (SLURM jobs)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    env.update({"WANDB_MODE": "disabled", "WANDB_SILENT": "true"})
    env.update(extra or {})
    return env


def calls(run_dir: str | Path) -> list[dict[str, Any]]:
    """The fake trainer's record of its executions in one run directory."""
    p = Path(run_dir) / "calls.log"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def ablate_cmd(*args: str) -> list[str]:
    """``ablate ARGS`` as a subprocess whose launchers run the fake trainer."""
    return [sys.executable, str(HERE / "fake_controller.py"), *args]


def wait_for(cond: Callable[[], Any], timeout: float = 180.0, what: str = "condition", every: float = 0.3) -> Any:
    """Poll ``cond`` until it returns something true (returned), or fail after ``timeout`` seconds."""
    end = time.time() + timeout
    while time.time() < end:
        got = cond()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def first_trial_attempts(path: Path) -> list[Any]:
    """The attempts of the first trial of the sweep file at ``path``, oldest first."""
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store.store import SweepStore

    sweep = load_sweep(path)
    return SweepStore.for_sweep(sweep).by_trial().get(sweep.trials[0].trial_id, [])


def attempts_by_row(path: Path) -> dict[str, list[Any]]:
    """Each row's attempts, oldest first, in file order (these tests' sweeps run one seed a row)."""
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store.store import SweepStore

    sweep = load_sweep(path)
    by = SweepStore.for_sweep(sweep).by_trial()
    return {t.row: by.get(t.trial_id, []) for t in sweep.trials}


def attempt_marks(path: Path) -> dict[str, list[tuple[int, str, str | None]]]:
    """(attempt number, state, failure kind) of each row's attempts."""
    return {row: [(a.attempt, a.state, a.kind) for a in got] for row, got in attempts_by_row(path).items()}


def release(run_dir: str | Path) -> None:
    """Let a fake trial held at its ``hold_at`` step go on (fake_trainer.py)."""
    (Path(run_dir) / "release").touch()


def one_line_error(capsys: Any) -> str:
    """What a command printed on stderr: exactly one line, ``error: ...``, no traceback."""
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: "), err
    assert "Traceback" not in err
    return err


def two_controllers(path: Path, timeout: float = 300) -> None:
    """Run two ``ablate sweep PATH`` controllers at once to their end; both must exit 0."""
    import subprocess

    procs = [
        subprocess.Popen(
            ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=timeout)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs


# A tiny language model (model.arch: decoder) for sweeps with the real trainer: blocks of 16 tokens,
# evaluated at L and 2L; each test adds its steps.
LM_TINY = [
    "model.arch=decoder",
    "model.max_positions=32",
    "data.block_size=16",
    "eval.lengths=[16,32]",
    "eval.test=false",
]
