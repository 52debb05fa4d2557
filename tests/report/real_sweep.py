"""Tiny REAL sweeps for the report tests: real sweep files, a real store, the real worker and trainer.

Every trial of a sweep runs in this process through ``ablate.sweep.launch.worker.run_trial`` (claim -> the
real ``train()`` on the built-in corpus -> metrics, dev hypotheses and per-sentence NLL in its run
directory -> the store), as a local slot would run it, minus the subprocess start-up. Two rows x two
seeds of a 1-layer, 32-wide model; the data is prepared once per test session (its own cache).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ablate.sweep.launch.worker import run_trial
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import trial_states

ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "eps_ls=0.0", "group": "D", "paper": "D3", "overrides": ["train.label_smoothing=0.0"]},
]


def experiment(cache: Path, max_steps: int) -> dict[str, Any]:
    return {
        "model": {"n_layers": 1, "d_model": 32, "d_ff": 64, "n_heads": 2, "max_positions": 128},
        "data": {
            "corpus": "builtin",
            "args": {
                "n_train": 4000,
                "n_valid": 150,
                "n_test": 20,
                "n_nouns": 20,
                "n_adjectives": 6,
                "n_verbs": 8,
                "n_adverbs": 3,
                "max_words": 12,
            },
            "vocab_size": 120,
            "max_len": 48,
            "max_tokens": 768,
            "tokenizer_sample": 2000,
            "cache_dir": str(cache),
        },
        "train": {
            "max_steps": max_steps,
            "warmup_steps": 20,
            "lr_factor": 2.0,
            "val_every_steps": max_steps,
            "log_every_steps": 10,
            "checkpoint_every_steps": 1000,
        },
        "trainer": {"accelerator": "cpu", "devices": 1},
        # greedy, short outputs: an untrained model never stops, so its output length is the limit
        "eval": {"beam_size": 1, "bleu_max_sentences": 40, "max_len_a": 1.0, "max_len_b": 5, "test": False},
        "logging": {"wandb": "disabled", "progress_bar": False},
    }


def build(folder: Path, name: str, max_steps: int, cache: Path, seeds: tuple[int, ...] = (1, 2)) -> Path:
    """Write a sweep file under ``folder`` and run all its trials; returns the sweep file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}-exp.yaml").write_text(yaml.safe_dump(experiment(cache, max_steps)))
    sweep_file = folder / f"{name}.yaml"
    sweep = {
        "name": name,
        "experiment": f"{name}-exp.yaml",
        "seeds": list(seeds),
        "launcher": {"name": "local", "slots": 1},
        "wandb": {"mode": "disabled"},
        "rows": ROWS,
    }
    sweep_file.write_text(yaml.safe_dump(sweep, sort_keys=False))
    opened = open_sweep(sweep_file)
    store = opened.store
    store.sync(opened.sweep)
    for view in trial_states(store, opened.sweep):
        state = run_trial(store.url, store.study_name, view.latest.storage_id, "report-test")
        assert state == "COMPLETE", (view.row, view.seed, state, Path(view.run_dir, "error.txt").read_text())
    return sweep_file


# ----------------------------------------------------------------------------------------------
# The same sweep with REAL prepared data and a REAL store, but outputs written by hand (milliseconds)
# ----------------------------------------------------------------------------------------------

Outputs = Callable[[str, int, list[str], list[int]], tuple[list[str], list[float]]]


def write_sweep(folder: Path, name: str, cache: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    """A sweep file over the tiny experiment (nothing run)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}-exp.yaml").write_text(yaml.safe_dump(experiment(cache, 100)))
    sweep_file = folder / f"{name}.yaml"
    sweep = {
        "name": name,
        "experiment": f"{name}-exp.yaml",
        "seeds": [1, 2],
        "launcher": {"name": "local"},
        "wandb": {"mode": "disabled"},
        "rows": rows or ROWS,
    }
    sweep_file.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return sweep_file


def prepare(sweep_file: Path) -> Any:
    """Prepare the sweep's data for real (tokenizer, shards, unigram floor); returns the Prepared folder."""
    from omegaconf import OmegaConf

    from ablate.data.prepare import prepare_data

    return prepare_data(OmegaConf.create(open_sweep(sweep_file).sweep.trials[0].config["data"]), progress=False)


def finish_by_hand(sweep_file: Path, prepared: Any, outputs: Outputs) -> None:
    """Every trial claimed and finished in the real store, its run directory holding the dev hypotheses
    and per-sentence NLL that ``outputs(row, seed, references, token_counts)`` returns (metrics from them)."""
    import math

    from sacrebleu.metrics import BLEU

    from ablate.rundir import RunDir

    refs = prepared.raw("valid", "tgt")
    tokens = [int(n) + 1 for n in prepared.split("valid").tgt_lengths]
    opened = open_sweep(sweep_file)
    store = opened.store
    store.sync(opened.sweep)
    for view in trial_states(store, opened.sweep):
        hyps, nll = outputs(view.row, view.seed, refs, tokens)
        rd = RunDir(view.trial.run_dir)
        rd.write_hypotheses("valid", hyps)
        rd.write_sentence_nll("valid", nll)
        bleu = BLEU().corpus_score(hyps, [refs[: len(hyps)]]).score
        metrics = {
            "val/ppl": math.exp(sum(nll) / sum(tokens)),
            "val/bleu": bleu,
            "val/bleu_sentences": len(hyps),
            "params": 10_000,
            "run_dir": str(rd.path),
        }
        assert store.claim(view.latest.storage_id, "test")
        store.finish(view.latest.storage_id, metrics)
