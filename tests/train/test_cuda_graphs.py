"""train.cuda_graphs: refused without bucketed shapes, one line and the eager step off CUDA, and the
graphed path (torch.compile's reduce-overhead mode at static shapes) giving the eager losses as far as a
CPU can run it (inductor compiles the same static-shape code there, without the graphs: the slow tier)."""

from __future__ import annotations

import pytest
import torch

from ablate.cli import main
from ablate.config import load_config
from ablate.errors import ConfigError
from ablate.train.graphs import graphs_note, step_features
from ablate.train.run import system_kwargs
from ablate.train.system import TransformerSystem

from .conftest import MINI, TINY_RUN, step_losses

TINY = ["model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.n_layers=1", "model.dropout=0.0"]
BUCKETS = ["data.bucket_ratio=1.1", "data.batch_multiple=8"]


def test_cuda_graphs_without_bucketed_shapes_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        load_config(overrides=["train.cuda_graphs=true"])
    assert "train.cuda_graphs" in str(err.value) and "data.bucket_ratio=1.1" in str(err.value)
    assert "\n" not in str(err.value)
    assert load_config(overrides=["train.cuda_graphs=true", *BUCKETS]).train.cuda_graphs is True


def test_off_cuda_the_step_falls_back_and_says_so():
    assert graphs_note(True, False, "cpu") == "train.cuda_graphs: not on CUDA (cpu): the training step runs eager"
    assert "train.compile" in graphs_note(True, True, "cpu")
    assert graphs_note(True, False, "cuda") is None and graphs_note(False, False, "cpu") is None

    def fn(x):
        return x

    assert step_features(fn, compile=False, cuda_graphs=True, on_cuda=False) is fn
    assert step_features(fn, compile=False, cuda_graphs=True, on_cuda=True) is not fn


def _train(cuda_graphs: bool, graph_path: bool = False, steps: int = 6) -> list[float]:
    cfg = load_config(overrides=[*TINY, *BUCKETS, f"train.cuda_graphs={str(cuda_graphs).lower()}"])
    torch.manual_seed(0)
    system = TransformerSystem(**system_kwargs(cfg, 32))
    if graph_path:  # the CUDA path's compile call, at static shapes, on this CPU
        system._features = step_features(system.model.features, compile=False, cuda_graphs=True, on_cuda=True)
    g = torch.Generator().manual_seed(1)
    shapes = [
        (8, 16)[step % 2] for step in range(steps)
    ]  # two bucket shapes, each seen three times: captured once each
    batches = [
        {k: torch.randint(4, 32, (8, t + (k == "src")), generator=g) for k in ("src", "tgt_in", "tgt_out")}
        for t in shapes
    ]
    return step_losses(system, batches)


def test_on_a_cpu_a_cuda_graphs_trial_trains_exactly_as_eager():
    assert _train(True) == _train(False)


@pytest.mark.slow
def test_the_graphed_step_gives_the_eager_losses():
    assert _train(True, graph_path=True) == pytest.approx(_train(False), rel=1e-5)


def test_a_cpu_run_says_it_runs_eager(tmp_path, capsys):
    run = [
        *TINY_RUN,
        *BUCKETS,
        "train.cuda_graphs=true",
        "train.max_steps=2",
        "eval.bleu_max_sentences=2",
        "eval.test=false",
    ]
    assert main(["train", str(MINI), *run, "--output", str(tmp_path / "run")]) == 0
    assert "train.cuda_graphs: not on CUDA (cpu): the training step runs eager" in capsys.readouterr().out
