"""Fixtures for the training tests: quiet offline W&B and a private data cache, tiny run configs, and one
uninterrupted tiny run shared by the run and resume tests."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "experiments" / "mini.yaml"

# A run small enough for a test: a 1+1-layer d_model 32 model on a 1,500-pair builtin corpus.
TINY_RUN = [
    "model.n_layers=1",
    "model.d_model=32",
    "model.d_ff=64",
    "model.n_heads=2",
    "model.dropout=0.1",
    "data.args.n_train=1500",
    "data.args.n_valid=40",
    "data.args.n_test=30",
    "data.vocab_size=300",
    "data.max_tokens=600",
    "train.warmup_steps=10",
    "train.log_every_steps=1",
    "train.val_every_steps=4",
    "eval.beam_size=2",
    "eval.max_len_b=4",
    "eval.batch_size=16",
    "logging.progress_bar=false",
]
STEPS = 12  # the straight run: validations at 4, 8, 12
# dev BLEU at every 2nd validation (step 8) on the first 25 of the 40 dev sentences, also at the end
STRAIGHT = [*TINY_RUN, f"train.max_steps={STEPS}", "eval.bleu_every=2", "eval.bleu_max_sentences=25"]


def _env(root: Path) -> dict[str, str]:
    return {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(root / "wandb"),
        "WANDB_CACHE_DIR": str(root / "wandb-cache"),
        "WANDB_CONFIG_DIR": str(root / "wandb-config"),
        "ABLATE_CACHE": str(root / "ablate-cache"),
    }


@pytest.fixture(autouse=True)
def quiet_offline_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """W&B offline and silent, its files in tmp; prepared data cached once per session in tmp."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    for key, value in _env(tmp_path_factory.getbasetemp()).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="session")
def straight_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted run through the CLI (fast, tiny): STEPS steps, validations every 4."""
    from ablate.cli import main

    out = tmp_path_factory.mktemp("runs") / "straight"
    with pytest.MonkeyPatch.context() as mp:  # the autouse env fixture is function-scoped
        for key, value in _env(tmp_path_factory.getbasetemp()).items():
            mp.setenv(key, value)
        mp.delenv("WANDB_API_KEY", raising=False)
        assert main(["train", str(MINI), *STRAIGHT, "--output", str(out)]) == 0
    return out


def csv_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


def losses(run_dir: Path) -> dict[int, float]:
    """train/loss by its step label in metrics.csv."""
    return {int(r["step"]): float(r["train/loss"]) for r in csv_rows(run_dir) if r.get("train/loss")}


def labels(run_dir: Path, key: str) -> list[int]:
    """The step labels of the metrics.csv rows that hold ``key``, in file order."""
    return [int(r["step"]) for r in csv_rows(run_dir) if r.get(key)]


def step_losses(system, batches) -> list[float]:
    """Adam steps of ``system`` over ``batches`` as a trial takes them (the fused loss over the real target
    positions, label smoothing 0.1); the loss of each."""
    import torch

    from ablate.train.losses import linear_label_smoothed_loss

    opt = torch.optim.Adam(system.parameters(), lr=1e-2)
    losses = []
    for batch in batches:
        hidden, target = system._real_positions(batch)
        loss = linear_label_smoothed_loss(hidden, system.model.output_weight, target, 0.1) / target.numel()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
