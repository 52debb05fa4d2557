"""train.compile: the compiled training forward gives the eager losses, step for step, and the weights
it trains load into an eager model. Dropout is off (compiled code draws its random numbers from another
generator, so the masks differ); tolerance 1e-5 relative (fp32 sums may be reassociated by the compiler;
measured: identical to the last digit on this CPU). Compiling takes 15-35 s here: the slow tier."""

from __future__ import annotations

import pytest
import torch

from ablate.config import load_config
from ablate.train.fast import NOT_CUDA, attention_kernel
from ablate.train.run import system_kwargs
from ablate.train.system import TransformerSystem

from .conftest import step_losses

TINY = ["model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.n_layers=1", "model.dropout=0.0"]


def _train(compile_: bool, steps: int = 6) -> tuple[list[float], TransformerSystem]:
    cfg = load_config(overrides=[*TINY, f"train.compile={str(compile_).lower()}"])
    torch.manual_seed(0)
    system = TransformerSystem(**system_kwargs(cfg, 32))
    g = torch.Generator().manual_seed(1)
    batches = []
    for step in range(steps):
        t = 5 + step  # a new length every step: dynamic shapes, not one compilation per length
        batches.append(
            {
                "src": torch.randint(4, 32, (3, t + 1), generator=g),
                "tgt_in": torch.randint(4, 32, (3, t), generator=g),
                "tgt_out": torch.randint(4, 32, (3, t), generator=g),
            }
        )
    return step_losses(system, batches), system


@pytest.mark.slow
def test_compiled_training_gives_the_eager_losses_and_loadable_weights() -> None:
    eager, _ = _train(False)
    compiled, system = _train(True)
    assert compiled == pytest.approx(eager, rel=1e-5)
    plain = TransformerSystem(**{**dict(system.hparams), "compile": False})
    plain.load_state_dict(system.state_dict())  # same keys: compile wraps a method, not the module
    for a, b in zip(plain.parameters(), system.parameters()):
        assert torch.equal(a, b)


def test_compile_is_a_config_key_that_keeps_old_trial_ids() -> None:
    from ablate.config.schema import hash_view

    cfg = load_config(overrides=TINY)
    assert cfg.train.compile is False
    from ablate.config import to_dict

    assert "compile" not in hash_view(to_dict(cfg))["train"]  # default: hashed as before it existed
    assert "compile" in hash_view(to_dict(load_config(overrides=[*TINY, "train.compile=true"])))["train"]


def test_the_attention_kernel_check_says_not_cuda_on_a_cpu() -> None:
    assert attention_kernel(8, 64, 64, torch.device("cpu"), torch.float32) == NOT_CUDA
