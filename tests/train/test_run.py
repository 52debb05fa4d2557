"""End to end on the builtin corpus: `ablate train` writes the run directory, `ablate eval` re-reads it,
an interrupted run resumes onto the same loss curve, and the offline W&B run holds the metrics."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from ablate.cli import main
from ablate.config import load_config
from ablate.train.run import RunDirError, evaluate_run, train
from ablate.train.rundir import wandb_run_id

from .conftest import MINI, TINY_RUN

STEPS = 12


def losses(run_dir: Path) -> dict[int, float]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return {int(r["step"]): float(r["train/loss"]) for r in csv.DictReader(f) if r.get("train/loss")}


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted run through the CLI (fast, tiny): STEPS steps, validations every 4."""
    out = tmp_path_factory.mktemp("runs") / "straight"
    with pytest.MonkeyPatch.context() as mp:  # the autouse env fixture is function-scoped
        root = tmp_path_factory.getbasetemp()
        for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": root / "wandb",
                           "WANDB_CACHE_DIR": root / "wandb-cache", "ABLATE_CACHE": root / "ablate-cache"}.items():
            mp.setenv(key, str(value))
        mp.delenv("WANDB_API_KEY", raising=False)
        assert main(["train", str(MINI), *TINY_RUN, f"train.max_steps={STEPS}", "--output", str(out)]) == 0
    return out


def test_cli_train_writes_the_run_directory(straight_run):
    for name in ("config.yaml", "provenance.json", "metrics.csv", "metrics.json", "progress.json"):
        assert (straight_run / name).is_file(), name
    assert (straight_run / "checkpoints" / "last.ckpt").is_file()
    assert (straight_run / "checkpoints" / "best.ckpt").is_file()
    assert not list((straight_run / "checkpoints").glob(".*tmp*"))  # no temporary files left behind
    metrics = json.loads((straight_run / "metrics.json").read_text())
    for key in ("val/nll", "val/ppl", "val/bleu", "test/nll", "test/ppl", "test/bleu", "params", "tokens_per_sec",
                "wall_time_s", "step", "wandb_run_id", "run_dir"):
        assert key in metrics, key
    assert metrics["step"] == STEPS
    assert metrics["val/ppl"] == pytest.approx(math.exp(metrics["val/nll"]))
    assert metrics["val/bleu_signature"].startswith("nrefs:1|case:mixed")
    assert metrics["tokens_per_sec"] > 0 and metrics["params"] > 0
    progress = json.loads((straight_run / "progress.json").read_text())
    assert progress["step"] == STEPS and progress["max_steps"] == STEPS and progress["status"] == "done"
    assert {"train/loss", "val/ppl", "elapsed_s", "eta_s"} <= set(progress)
    prov = json.loads((straight_run / "provenance.json").read_text())
    assert {"git_sha", "git_dirty", "versions", "host", "devices"} <= set(prov)
    assert prov["versions"]["torch"]
    assert sorted(losses(straight_run)) == list(range(STEPS))  # train/loss at every step (log_every_steps=1)
    assert len((straight_run / "outputs" / "valid.hyp").read_text().splitlines()) == 40


def test_cli_eval_reloads_from_the_checkpoint(straight_run, capsys):
    capsys.readouterr()
    assert main(["eval", str(straight_run), "--split", "valid", "--beam", "1", "--checkpoint", "last"]) == 0
    printed = capsys.readouterr().out
    assert "val/ppl" in printed and "val/bleu" in printed
    again = evaluate_run(straight_run, split="test", checkpoint="best", print_results=False)
    final = json.loads((straight_run / "metrics.json").read_text())
    # best.ckpt is what train() evaluated at the end: the same test numbers come back
    assert again["test/ppl"] == pytest.approx(final["test/ppl"], rel=1e-5)
    assert again["test/bleu"] == pytest.approx(final["test/bleu"])
    with pytest.raises(RunDirError, match="no such checkpoint"):
        evaluate_run(straight_run, checkpoint="nope", print_results=False)
    assert main(["eval", str(straight_run.parent / "missing")]) == 2


def test_resume_continues_the_same_loss_curve(straight_run, tmp_path):
    out = tmp_path / "interrupted"
    half = load_config(MINI, overrides=[*TINY_RUN, f"train.max_steps={STEPS // 2}"])
    train(half, out)
    assert sorted(losses(out)) == list(range(STEPS // 2))
    full = load_config(MINI, overrides=[*TINY_RUN, f"train.max_steps={STEPS}"])
    metrics = train(full, out)  # finds checkpoints/last.ckpt at step 6 and resumes
    assert metrics["step"] == STEPS
    resumed, straight = losses(out), losses(straight_run)
    assert sorted(resumed) == list(range(STEPS))
    assert [resumed[s] for s in range(STEPS)] == pytest.approx([straight[s] for s in range(STEPS)], rel=1e-5)
    # both halves went to one W&B run id
    ids = {p.stem.removeprefix("run-") for p in (out / "wandb").glob("offline-run-*/run-*.wandb")}
    assert ids == {wandb_run_id(full, out)}
    # a different model in the same directory is refused
    with pytest.raises(RunDirError, match="different config"):
        train(load_config(MINI, overrides=[*TINY_RUN, "model.d_ff=48"]), out)


@pytest.mark.skipif(shutil.which("wandb") is None, reason="the wandb CLI is not on PATH")
def test_wandb_offline_run_holds_the_logged_metrics(straight_run):
    (run,) = list((straight_run / "wandb").glob("offline-run-*"))
    assert list(run.glob("run-*.wandb"))
    out = subprocess.run(["wandb", "leet", "inspect", "--summary", "--json", str(run)],
                         capture_output=True, text=True, timeout=120, check=True)
    summary = json.loads(out.stdout)["summary"]
    final = json.loads((straight_run / "metrics.json").read_text())
    assert summary["val/ppl"] == pytest.approx(final["val/ppl"])
    assert summary["test/bleu"] == pytest.approx(final["test/bleu"])
    assert "train/loss" in summary and "lr" in summary
