"""End to end on the builtin corpus: `ablate train` writes the run directory, `ablate eval` re-reads it,
an interrupted run resumes onto the same loss curve, and the offline W&B run holds the metrics."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

from ablate.cli import main
from ablate.config import load_config
from ablate.rundir import RunDir
from ablate.train.identity import wandb_run_id
from ablate.train.run import RunDirError, evaluate_run, train

from .conftest import MINI, STEPS, STRAIGHT, labels, losses


def test_cli_train_writes_the_run_directory(straight_run):
    rd = RunDir(straight_run)
    for path in (
        rd.config,
        rd.provenance,
        rd.metrics_csv,
        rd.metrics_file,
        rd.progress_file,
        rd.last_ckpt,
        rd.best_ckpt,
    ):
        assert path.is_file(), path
    assert not list(rd.checkpoints.glob(".*tmp*"))  # no temporary files left behind
    metrics = rd.read_metrics()
    for key in (
        "val/nll",
        "val/ppl",
        "val/bleu",
        "test/nll",
        "test/ppl",
        "test/bleu",
        "params",
        "tokens_per_sec",
        "wall_time_s",
        "step",
        "wandb_run_id",
        "run_dir",
        "checkpoint",
        "checkpoint_step",
    ):
        assert key in metrics, key
    assert metrics["step"] == STEPS
    assert metrics["checkpoint"] in ("best", "last") and metrics["checkpoint_step"] in (4, 8, 12)
    assert metrics["val/ppl"] == pytest.approx(math.exp(metrics["val/nll"]))
    assert metrics["val/bleu_signature"].startswith("nrefs:1|case:mixed")
    assert metrics["tokens_per_sec"] > 0 and metrics["params"] > 0
    progress = rd.read_progress()
    assert progress["step"] == STEPS and progress["max_steps"] == STEPS and progress["status"] == "done"
    assert {"train/loss", "val/ppl", "elapsed_s", "eta_s"} <= set(progress)
    prov = rd.read_provenance()
    assert {"git_sha", "git_dirty", "versions", "host", "devices"} <= set(prov)
    assert prov["versions"]["torch"]
    assert sorted(losses(straight_run)) == list(range(STEPS))  # train/loss at every step (log_every_steps=1)


def test_dev_bleu_during_training_is_a_callback_on_its_schedule(straight_run):
    # eval.bleu_every=2 with validations after steps 4, 8, 12 (labels 3, 7, 11): BLEU at the 2nd only
    # (the final numbers are logged at the final step, 12)
    assert labels(straight_run, "val/ppl") == [3, 7, 11, 12]
    assert labels(straight_run, "val/bleu") == [7, 12]


def test_final_decode_is_bounded_and_outputs_are_aligned(straight_run):
    rd = RunDir(straight_run)
    metrics = rd.read_metrics()
    # eval.bleu_max_sentences=25 bounds the final dev decode too: the first 25 dev sentences, in split order
    assert metrics["val/bleu_sentences"] == 25 and len(rd.read_hypotheses("valid")) == 25
    assert metrics["test/bleu_sentences"] == 30 and len(rd.read_hypotheses("test")) == 30  # test: never bounded
    # PPL covers the whole split; the per-sentence NLL file holds every sentence and sums to it
    for prefix, split, n in (("val", "valid", 40), ("test", "test", 30)):
        nll = rd.read_sentence_nll(split)
        assert nll is not None and len(nll) == n and all(x > 0 for x in nll)
        assert sum(nll) / metrics[f"{prefix}/tokens"] == pytest.approx(metrics[f"{prefix}/nll"], rel=1e-9)


def test_cli_eval_reloads_from_the_checkpoint(straight_run, capsys):
    capsys.readouterr()
    assert main(["eval", str(straight_run), "--split", "valid", "--beam", "1", "--checkpoint", "last"]) == 0
    printed = capsys.readouterr().out
    assert "val/ppl" in printed and "val/bleu" in printed
    final = RunDir(straight_run).read_metrics()
    again = evaluate_run(straight_run, split="test", checkpoint=final["checkpoint"], print_results=False)
    # the checkpoint metrics.json names is what train() evaluated at the end: the same test numbers come back
    assert again["checkpoint_step"] == final["checkpoint_step"]
    assert again["test/ppl"] == pytest.approx(final["test/ppl"], rel=1e-5)
    assert again["test/bleu"] == pytest.approx(final["test/bleu"])
    with pytest.raises(RunDirError, match="no such checkpoint"):
        evaluate_run(straight_run, checkpoint="nope", print_results=False)
    assert main(["eval", str(straight_run.parent / "missing")]) == 2


def test_resume_continues_the_same_loss_curve(straight_run, tmp_path):
    out = tmp_path / "interrupted"
    half = load_config(MINI, overrides=[*STRAIGHT, f"train.max_steps={STEPS // 2}"])
    train(half, out)
    assert sorted(losses(out)) == list(range(STEPS // 2))
    full = load_config(MINI, overrides=STRAIGHT)
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
        train(load_config(MINI, overrides=[*STRAIGHT, "model.d_ff=48"]), out)


@pytest.mark.skipif(shutil.which("wandb") is None, reason="the wandb CLI is not on PATH")
def test_wandb_offline_run_holds_the_logged_metrics(straight_run):
    (run,) = list((straight_run / "wandb").glob("offline-run-*"))
    assert list(run.glob("run-*.wandb"))
    out = subprocess.run(
        ["wandb", "leet", "inspect", "--summary", "--json", str(run)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    summary = json.loads(out.stdout)["summary"]
    final = json.loads((straight_run / "metrics.json").read_text())
    # val/ppl is defined with summary "min" (W&B's run table shows the best): here the final model's
    assert summary["val/ppl"] == {"min": pytest.approx(final["val/ppl"], rel=1e-5)}
    assert summary["test/bleu"] == pytest.approx(final["test/bleu"])
    assert "train/loss" in summary and "lr" in summary
