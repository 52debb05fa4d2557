"""A real search (tiny model, builtin corpus, the real trainer in local workers) driven by TWO
`ablate sweep` controllers started together on one store: each row's study gets exactly n_trials
trials, no trial is trained twice, the median pruner stops some trials early inside the training
loop, each row's best is re-run once at the other seed, `ablate status` shows the best per row and a
third `ablate sweep` launches nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.plan.search import study_name
from ablate.sweep.store.store import SweepStore

pytestmark = [pytest.mark.slow, pytest.mark.integration]

MAX_STEPS = 12
EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": MAX_STEPS, "warmup_steps": 2, "val_every_steps": 3, "log_every_steps": 1},
    "trainer": {"accelerator": "cpu"},
    "eval": {"beam_size": 1, "bleu_max_sentences": 10, "test": False},
    "logging": {"wandb": "disabled", "progress_bar": False},
}
N_TRIALS = 3  # per row: 6 search trials + 2 best re-runs
SWEEP = {
    "name": "tiny-search",
    "experiment": "exp.yaml",
    "seeds": [1, 2],
    "launcher": {"name": "local", "slots": 1, "poll_s": 0.5},  # x 2 controllers = 2 workers, 2 cores
    "wandb": {"mode": "disabled"},
    "search": {
        "metric": "val/ppl",
        "n_trials": N_TRIALS,
        "sampler": "tpe",
        # one finished trial is enough to compare against; a wide lr range makes some trials clearly worse
        "pruner": {"name": "median", "n_startup_trials": 1, "n_warmup_steps": 2},
        "params": {
            "train.lr_factor": {"low": 0.01, "high": 4.0, "log": True},
            "model.dropout": {"choices": [0.0, 0.1]},
        },
    },
    "rows": [
        {"name": "base", "group": "base", "paper": "base"},
        {"name": "h=1", "group": "A", "paper": "A1", "overrides": ["model.n_heads=1"]},
    ],
}


def _ablate(tmp_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ablate", *args, str(tmp_path / "s.yaml")]


def test_two_controllers_run_one_search_prune_and_finish_once(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    env = dict(os.environ)
    env.update(ABLATE_CACHE=str(tmp_path / "cache"), WANDB_MODE="disabled", WANDB_SILENT="true")
    logs = [tmp_path / "controller-a.log", tmp_path / "controller-b.log"]
    t0 = time.monotonic()
    procs = [
        subprocess.Popen(
            _ablate(tmp_path, "sweep"), cwd=tmp_path, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
        )
        for log in logs
    ]
    try:
        for p in procs:
            p.wait(timeout=400)
    finally:
        for p in procs:
            p.kill()
    took = time.monotonic() - t0
    outs = [log.read_text() for log in logs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-4000:]
        assert "Traceback" not in out, out[-4000:]

    sweep = load_sweep(tmp_path / "s.yaml")
    store = SweepStore.for_sweep(sweep)
    attempts = store.attempts()
    by_trial = store.by_trial()
    # no trial trained twice: one attempt per ablate trial, finished (no duplicate claims, no retries)
    seen = {k: [(x.state, x.attrs.get("failure")) for x in v] for k, v in by_trial.items()}
    assert all(len(v) == 1 for v in seen.values()), seen
    assert {a.state for a in attempts} <= {"COMPLETE", "PRUNED"}, seen
    assert len(attempts) == len(by_trial) == 2 * N_TRIALS + 2
    # each run directory was trained by one worker, from scratch
    run_dirs = [a.attrs["run_dir"] for a in attempts]
    assert len(set(run_dirs)) == len(run_dirs)
    for a in attempts:
        provenance = json.loads((Path(a.attrs["run_dir"]) / "provenance.json").read_text())
        assert provenance.get("resumed") is False, a.attrs["run_dir"]

    pruned = []
    for row in ("base", "h=1"):
        study = optuna.load_study(study_name=study_name("tiny-search", row), storage=store.storage)
        trials = study.get_trials()
        assert len(trials) == N_TRIALS  # exactly n_trials, though two controllers sampled
        assert {t.state for t in trials} <= {TrialState.COMPLETE, TrialState.PRUNED}
        assert len({t.user_attrs["ablate_id"] for t in trials}) == N_TRIALS
        for t in trials:
            (a,) = by_trial[t.user_attrs["ablate_id"]]
            metrics = a.attrs["metrics"]
            if t.state == TrialState.PRUNED:  # stopped inside the training loop, at a validation
                assert a.state == "PRUNED" and metrics["step"] < MAX_STEPS
                assert max(t.intermediate_values) == metrics["step"]
                pruned.append(t)
            else:
                assert a.state == "COMPLETE" and metrics["step"] == MAX_STEPS
                assert t.value == pytest.approx(metrics["val/ppl"])
        finals = [a for a in attempts if a.attrs["row"] == row and a.attrs["search"]["phase"] == "final"]
        assert len(finals) == 1 and finals[0].attrs["seed"] == 2 and finals[0].state == "COMPLETE"
        assert finals[0].attrs["search"]["params"] == pytest.approx(study.best_params, rel=1e-11)
    assert pruned, "the median pruner stopped no trial"

    # `ablate status` (piped): the per-row best line
    status = subprocess.run(_ablate(tmp_path, "status"), cwd=tmp_path, env=env, capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert f"search: val/ppl (minimize), {N_TRIALS} trials per row" in status.stdout
    lines = {ln.split()[0]: ln for ln in status.stdout.splitlines() if "sampled" in ln}
    assert set(lines) == {"base", "h=1"}, status.stdout
    for line in lines.values():
        assert f"{N_TRIALS}/{N_TRIALS} sampled" in line and "0 running" in line and "failed" not in line
        assert "best " in line and "train.lr_factor=" in line and "model.dropout=" in line
        assert line.endswith("best re-run: 1/1 done"), line

    # a third `ablate sweep`: nothing to launch, quick
    t1 = time.monotonic()
    again = subprocess.run(
        _ablate(tmp_path, "sweep"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    rerun_s = time.monotonic() - t1
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert len(store.attempts()) == len(attempts)
    assert not any(Path(a.attrs["run_dir"], "error.txt").exists() for a in attempts)
    assert rerun_s < 60, f"the rerun took {rerun_s:.0f} s (the search took {took:.0f} s)"
    print(f"search by two controllers: {took:.0f} s, {len(pruned)} pruned; rerun {rerun_s:.1f} s")
