"""No host synchronisation between optimizer steps except at the logging interval.

A host sync (``.item()``, ``.cpu()``, a Python ``if`` on a tensor) makes the CPU wait for the GPU, so
the next step's kernels cannot be queued while this one runs: on a GPU the step becomes bound by the
host. On CPU the same calls are visible to ``torch.profiler`` as ``aten::_local_scalar_dense``: two
fits that differ only by non-logging steps must count the same number (Lightning's loop, the module,
its hooks). The optimizer is SGD here: torch's CPU Adam reads its step count on the host (31 syncs a
step for this model, 2 fused), which CUDA's fused Adam, the one ablate uses on a GPU, does not.
"""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.data import DataLoader

from ablate.train.schedule import noam_scheduler
from ablate.train.system import TransformerSystem

from .test_system import copy_batch

SYNC = "aten::_local_scalar_dense"


def _syncs(steps: int, model_cfg, cpu_trainer) -> int:
    torch.manual_seed(0)
    system = TransformerSystem(model=model_cfg, vocab_size=32)

    def sgd_with_the_schedule():  # the paper's schedule, stepped by the same loop
        opt = torch.optim.SGD(system.parameters(), lr=1.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": noam_scheduler(opt, 16, 4), "interval": "step"}}

    system.configure_optimizers = sgd_with_the_schedule
    gen = torch.Generator().manual_seed(0)
    batches = [copy_batch(4, 32, gen) for _ in range(steps)]
    trainer = cpu_trainer(max_steps=steps, log_every_n_steps=1000, limit_val_batches=0)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        trainer.fit(system, train_dataloaders=DataLoader(batches, batch_size=None))
    return sum(e.count for e in prof.key_averages() if e.key == SYNC)


def test_steps_between_logging_intervals_do_not_wait_for_the_device(tiny_model_cfg, cpu_trainer):
    four, twelve = _syncs(4, tiny_model_cfg, cpu_trainer), _syncs(12, tiny_model_cfg, cpu_trainer)
    print(f"{SYNC}: {four} in a 4-step fit, {twelve} in a 12-step fit")
    assert four >= 1  # the counter sees the divergence check at the last step
    assert twelve == four  # the 8 steps between carry none
