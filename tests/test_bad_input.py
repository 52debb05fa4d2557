"""`ablate train` / `ablate eval` at the edges: a result block at the end, run folders named after
their overrides, `ablate eval` writes what it computed, and a full disk is one line (no traceback).

In-process through ``ablate.cli.main`` on a tiny builtin-corpus model (a few seconds each)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

# Imported at collection: Lightning's log handler keeps the stderr of the moment it is imported, and a
# test's captured stderr is closed when the test ends ("--- Logging error ---" in the next test).
import lightning.pytorch  # noqa: F401
import pytest
import yaml

from ablate.cli import main
from ablate.rundir import RunDir

TINY = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {
        "corpus": "builtin",
        "vocab_size": 64,
        "max_len": 32,
        "max_tokens": 256,
        "args": {"n_train": 300, "n_valid": 12, "n_test": 10},
    },
    "train": {"max_steps": 4, "warmup_steps": 2, "val_every_steps": 2, "log_every_steps": 1},
    "eval": {"beam_size": 1, "max_len_b": 4},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ABLATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.chdir(tmp_path)
    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump({**TINY, "logging": {**TINY["logging"], "output_dir": str(tmp_path / "runs")}}))
    return exp


def test_train_prints_a_result_block_and_eval_writes_its_files(tiny, tmp_path, capsys):
    assert main(["train", str(tiny), "model.n_heads=4", "train.warmup_steps=3"]) == 0
    out = capsys.readouterr().out
    (run,) = (tmp_path / "runs").iterdir()
    assert "-n_heads4-warmup_steps3-" in run.name  # the overrides, at a glance
    rd = RunDir(run)
    metrics = rd.read_metrics()
    block = out[out.index(f"run runs/{run.name}: step 4") :]
    assert f"final weights {metrics['checkpoint']} (step {metrics['checkpoint_step']})" in block
    assert f"dev   PPL {metrics['val/ppl']:.2f}  BLEU {metrics['val/bleu']:.2f}" in block
    assert f"test  PPL {metrics['test/ppl']:.2f}  BLEU {metrics['test/bleu']:.2f}" in block
    assert f"checkpoints runs/{run.name}/checkpoints/" in block and "metrics.json" in block
    assert block.rstrip().endswith(f"next: ablate eval runs/{run.name} --split test")
    progress = rd.read_progress()  # the final model's numbers, not those of the last validation
    assert progress["status"] == "done" and progress["val/ppl"] == metrics["val/ppl"]

    assert main(["eval", str(run), "--split", "test", "--checkpoint", "last"]) == 0
    out = capsys.readouterr().out
    saved = json.loads((run / "outputs" / "eval-test-last.json").read_text())
    assert saved["split"] == "test" and saved["test/ppl"] > 1 and saved["checkpoint_step"] == 4
    hyps = (run / "outputs" / "eval-test-last.hyp").read_text().splitlines()
    assert len(hyps) == saved["test/bleu_sentences"]
    assert "eval-test-last.json and eval-test-last.hyp" in out


def test_disk_full_during_a_checkpoint_write_is_one_line(tiny, tmp_path, capsys, monkeypatch):
    from ablate.train.callbacks import AtomicCheckpointIO

    def full(self, checkpoint, path, storage_options=None):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(AtomicCheckpointIO, "save_checkpoint", full)
    assert main(["train", str(tiny), "--output", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith("error: disk full (No space left on device) writing ")
    assert "/checkpoints/" in err and "ablate train --output <run dir>" in err
    assert RunDir(tmp_path / "run").read_progress()["status"] == "failed"


def test_other_errors_are_not_hidden(monkeypatch):
    import ablate.registry

    def denied():
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(ablate.registry, "load_builtin_registries", denied)
    with pytest.raises(PermissionError):
        main(["variants"])


def test_overrides_hint_is_short_and_safe():
    from ablate.train.identity import overrides_hint

    assert overrides_hint(["model.n_heads=4", "logging.output_dir=/x", "model.positional={name: rope}"]) == (
        "n_heads4-positional_name__rope"
    )
    assert len(overrides_hint([f"model.k{i}=1234567" for i in range(20)])) <= 40
