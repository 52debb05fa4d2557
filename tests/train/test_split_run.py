"""A run that states train.global_tokens settles its split on its device, says it, writes it to the run's
config.yaml, and keeps it when it resumes (its sampler's position counts batches of that size)."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

import ablate.train.split as split_module
from ablate.cli import main
from ablate.config import load_config, model_section
from ablate.config.batch_split import BYTES_PER_PARAM, MEMORY_USE, activation_bytes_per_token
from ablate.config.size import count_parameters

from .conftest import MINI, TINY_RUN

RUN = [*TINY_RUN, "train.global_tokens=1200", "eval.bleu_max_sentences=5", "eval.test=false"]


def _memory_for(tokens: int) -> float:
    """Device memory in which one batch of ``tokens`` tokens a side just fits (the memory model's terms)."""
    cfg = load_config(MINI, RUN)
    model = model_section(OmegaConf.to_container(cfg.model))
    vocab = int(cfg.data.vocab_size)
    need = BYTES_PER_PARAM * count_parameters(model, vocab) + (tokens + 0.5) * activation_bytes_per_token(model, vocab)
    return need / MEMORY_USE


def test_a_run_splits_its_global_batch_and_keeps_the_split_on_resume(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setattr(split_module, "device_memory_bytes", lambda accelerator: _memory_for(700))
    assert main(["train", str(MINI), *RUN, "train.max_steps=4", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "[train] batch split: 1 device(s) x 600 tokens a side x 2 accumulated = 1,200 a step" in err
    saved = OmegaConf.load(out / "config.yaml")
    assert (saved.data.max_tokens, saved.train.accumulate_grad_batches, saved.train.global_tokens) == (600, 2, 1200)

    monkeypatch.setattr(split_module, "device_memory_bytes", lambda accelerator: None)  # another machine
    assert main(["train", str(MINI), *RUN, "train.max_steps=6", "--output", str(out)]) == 0
    assert "batch split: kept from the run being resumed (600 tokens a side a batch)" in capsys.readouterr().err
    saved = OmegaConf.load(out / "config.yaml")
    assert (saved.data.max_tokens, saved.train.accumulate_grad_batches) == (600, 2)
    assert json.loads((out / "metrics.json").read_text())["step"] == 6


def test_a_run_resumed_on_fewer_devices_keeps_its_batches_and_its_global_batch(tmp_path):
    from ablate.config import save_config
    from ablate.train.split import settle_split

    started = load_config(MINI, [*RUN, "trainer.devices=4", "data.max_tokens=300", "train.accumulate_grad_batches=1"])
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "last.ckpt").write_bytes(b"a checkpoint")
    save_config(started, tmp_path / "config.yaml")
    now = load_config(MINI, [*RUN, "trainer.devices=1"])
    said: list[str] = []
    settle_split(now, tmp_path, True, said.append)
    assert (now.data.max_tokens, now.train.accumulate_grad_batches) == (300, 4)  # 1 x 300 x 4 = 1,200 a step
    assert said == [
        "batch split: kept from the run being resumed (300 tokens a side a batch; 4 -> 1 device(s), so 4 accumulated)"
    ]
