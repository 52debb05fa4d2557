"""The recipe contract's DDP clause: for every registered optimizer, a step of two gloo processes (CPU,
DistributedDataParallel over the real TransformerSystem, each rank half of the batch) moves the weights
as one process's step on the whole batch does, and unlike a step on half the batch (which would pass
if the gradients were never averaged). In float64; Muon orthogonalises in bfloat16, so the equality
is to a share of the step, not bit for bit. Two processes: marked integration."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from ablate.recipe import OPTIMIZERS


def _needs(name: str) -> tuple:
    """The optional package an optimizer builds on: its tests are skipped, saying so, where it is missing."""
    missing = name == "schedulefree_adamw" and importlib.util.find_spec("schedulefree") is None
    return (pytest.mark.skipif(missing, reason="pip install 'ablate[recipes]' (schedulefree)"),)


NAMES = [pytest.param(n, marks=_needs(n)) for n in OPTIMIZERS.names()]

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from ablate.train.system import TransformerSystem

    LM = {"arch": "decoder", "n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 16,
          "residual": "pre", "dropout": 0.0}
    LR = {"lion": 1e-3}

    def system(name):
        torch.manual_seed(0)
        sched = "constant"
        s = TransformerSystem(LM, 32, optimizer=name, schedule=sched, lr=LR.get(name, 1e-2), warmup_steps=1,
                              max_steps=10, weight_decay=0.01).double()
        return s

    def step(module, s, tokens):
        setup = s.configure_optimizers()
        opt = setup["optimizer"]
        if callable(getattr(opt, "train", None)):
            opt.train()
        logits = module(tokens[:, :-1])
        F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten()).backward()
        opt.step()
        return {k: v.detach().clone() for k, v in s.state_dict().items()}

    def tokens():
        return torch.randint(4, 32, (8, 9), generator=torch.Generator().manual_seed(1))

    def rank_main(rank, name, out):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[3])
        dist.init_process_group("gloo", rank=rank, world_size=2)
        s = system(name)
        after = step(DDP(s), s, tokens()[rank * 4 : (rank + 1) * 4])
        if rank == 0:
            torch.save(after, out)
        dist.destroy_process_group()

    if __name__ == "__main__":
        name, out = sys.argv[1], sys.argv[2]
        mp.spawn(rank_main, args=(name, out), nprocs=2)
        ddp = torch.load(out)
        s = system(name)
        before = {k: v.clone() for k, v in s.state_dict().items()}
        whole = step(s, s, tokens())
        s = system(name)
        half = step(s, s, tokens()[:4])
        moved = max((whole[k] - before[k]).abs().max().item() for k in whole)
        gap = max((ddp[k] - whole[k]).abs().max().item() for k in whole)
        gap_half = max((half[k] - whole[k]).abs().max().item() for k in whole)
        print("RESULT " + json.dumps({"moved": moved, "gap": gap, "gap_half": gap_half}))
    """
)


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_a_two_process_ddp_step_equals_the_one_process_step_on_the_global_batch(name: str, tmp_path) -> None:
    script = tmp_path / "ddp_step.py"
    script.write_text(SCRIPT)
    port = str(29500 + sum(map(ord, name)) % 1000)
    proc = subprocess.run(
        [sys.executable, str(script), name, str(tmp_path / "ddp.pt"), port],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    share = 2e-2 if name == "muon" else 1e-9  # Muon's Newton-Schulz iteration runs in bfloat16
    assert result["moved"] > 0
    assert result["gap"] <= share * result["moved"], result
    assert result["gap_half"] > 10 * max(result["gap"], 1e-12), result  # the check can fail: half a batch differs
