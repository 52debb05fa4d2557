"""The recipe contract, over every registered optimizer and schedule (ablate/recipe/), the model
contract's way: a new recipe is tested by registering it.

- an optimizer lowers the loss of a tiny language model on a fixed batch in a few steps;
- a run stopped at step k and resumed from its checkpoint ends with the same weights, bit for bit, as
  an uninterrupted run (the real TransformerSystem under a tiny Lightning run, with ablate's own
  checkpoint, validation and RNG callbacks);
- the state an optimizer keeps is what it declares per parameter (the dry run's memory estimate);
- the learning rate a schedule gives at chosen steps, through LambdaLR, is its closed form.
The 2-process DDP equality is tests/train/test_recipe_ddp.py (integration).
"""

from __future__ import annotations

import importlib.util
import math

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader

from ablate.recipe import OPTIMIZERS, SCHEDULES, Horizon, make, scheduler
from ablate.recipe.optimizers import param_kinds
from ablate.train.callbacks import FinishWithValidation, LastCheckpoint, ResumeConsistency
from ablate.train.losses import linear_label_smoothed_loss
from ablate.train.system import TransformerSystem

LM = {"arch": "decoder", "n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 16, "residual": "pre"}
VOCAB = 32
PEAK = {"lion": 1e-3}  # Lion's sign update is larger in norm: its authors take a smaller rate
STEPS = 6


def _needs(name: str) -> tuple:
    """The optional package an optimizer builds on: its tests are skipped, saying so, where it is missing."""
    missing = name == "schedulefree_adamw" and importlib.util.find_spec("schedulefree") is None
    return (pytest.mark.skipif(missing, reason="pip install 'ablate[recipes]' (schedulefree)"),)


NAMES = [pytest.param(n, marks=_needs(n)) for n in OPTIMIZERS.names()]


def _schedule(optimizer: str) -> str:
    """A decaying schedule wherever the optimizer allows one (resuming must restore the schedule too)."""
    allowed = OPTIMIZERS.get(optimizer).schedules
    return "cosine" if allowed is None or "cosine" in allowed else allowed[0]


def _system(optimizer: str, max_steps: int = 30) -> TransformerSystem:
    torch.manual_seed(0)
    return TransformerSystem(
        {**LM, "dropout": 0.0},  # dropout's stream across a resume is tests/train/test_resume.py's
        VOCAB,
        label_smoothing=0.0,
        optimizer=optimizer,
        schedule=_schedule(optimizer),
        lr=PEAK.get(optimizer, 1e-2),
        warmup_steps=2,
        max_steps=max_steps,
        weight_decay=0.01,
    )


def _batches(n: int) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(1)
    out = []
    for _ in range(n):
        tokens = torch.randint(4, VOCAB, (4, 9), generator=gen)
        out.append({"tgt_in": tokens[:, :-1], "tgt_out": tokens[:, 1:]})
    return out


@pytest.mark.parametrize("name", NAMES)
def test_a_few_steps_lower_the_loss(name: str) -> None:
    system = _system(name)
    setup = system.configure_optimizers()
    opt, sched = setup["optimizer"], setup["lr_scheduler"]["scheduler"]
    if callable(getattr(opt, "train", None)):
        opt.train()
    batch = _batches(1)[0]
    losses = []
    for _ in range(30):
        hidden, target = system._real_positions(batch)
        loss = linear_label_smoothed_loss(hidden, system.model.output_weight, target, 0.0) / target.numel()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0], f"{name}: {losses[0]:.3f} -> {losses[-1]:.3f}"


def _fit(system: TransformerSystem, max_steps: int, out, ckpt_path=None) -> None:
    """A tiny real run: 3 batches an epoch, validation at each epoch's end, last.ckpt as a trial writes it."""
    loader = DataLoader(_batches(3), batch_size=None)
    trainer = pl.Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=True,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[LastCheckpoint(out), ResumeConsistency(), FinishWithValidation()],
    )
    trainer.fit(
        system, train_dataloaders=loader, val_dataloaders=DataLoader(_batches(1), batch_size=None), ckpt_path=ckpt_path
    )


@pytest.mark.parametrize("name", NAMES)
def test_a_resumed_run_ends_with_the_uninterrupted_runs_weights_bit_for_bit(name: str, tmp_path) -> None:
    straight = _system(name, max_steps=STEPS)
    _fit(straight, STEPS, tmp_path / "straight")
    first = _system(name, max_steps=STEPS)
    _fit(first, STEPS // 2, tmp_path / "stopped")  # last.ckpt at the validation of step 3
    resumed = _system(name, max_steps=STEPS)
    _fit(resumed, STEPS, tmp_path / "resumed", ckpt_path=str(tmp_path / "stopped" / "last.ckpt"))
    a, b = straight.state_dict(), resumed.state_dict()
    assert a.keys() == b.keys()
    different = [k for k in a if not torch.equal(a[k], b[k])]
    assert different == [], f"{name}: {different}"
    assert not torch.equal(a["model.embed.weight"], first.state_dict()["model.embed.weight"])  # it trained on


@pytest.mark.parametrize("name", NAMES)
def test_the_state_kept_is_the_state_declared(name: str) -> None:
    system = _system(name)
    opt = system.configure_optimizers()["optimizer"]
    if callable(getattr(opt, "train", None)):
        opt.train()
    hidden, target = system._real_positions(_batches(1)[0])
    linear_label_smoothed_loss(hidden, system.model.output_weight, target, 0.0).backward()
    opt.step()
    per_param = {
        id(p): sum(v.numel() for v in opt.state[p].values() if torch.is_tensor(v) and v.ndim)
        for p in system.parameters()
    }
    declared = OPTIMIZERS.get(name).state_floats_per_param
    matrices, tables, rest = param_kinds(system.model)
    for p in matrices:  # the bulk of a model: what the dry run multiplies by its parameters
        assert per_param[id(p)] == declared * p.numel(), name
    for p in tables + rest:  # Muon's AdamW half keeps Adam's two; the others keep their own for all
        assert per_param[id(p)] == (2 if name == "muon" else declared) * p.numel(), name


HORIZON = Horizon(peak=1e-3, warmup_steps=10, max_steps=110, d_model=64, lr_factor=2.0)
# (schedule, args) -> {update: its closed form}; warm-up W=10, decay over updates 10..110
CLOSED = {
    ("noam", ()): {1: 1e-4, 10: 1e-3, 40: 0.5e-3},  # train.lr set: the paper's curve through that peak
    ("constant", ()): {5: 0.5e-3, 10: 1e-3, 110: 1e-3},
    ("cosine", (("floor", 0.1),)): {5: 0.5e-3, 10: 1e-3, 60: 1e-4 + 0.9e-3 * 0.5, 110: 1e-4},
    ("linear", ()): {5: 0.5e-3, 10: 1e-3, 60: 0.5e-3, 85: 0.25e-3, 110: 0.0},
    # cooldown over the last 20% (22 updates: 88..110); 1 - sqrt(q) at q = 1/4 is a half
    ("wsd", (("decay_fraction", 0.2), ("shape", "sqrt"))): {5: 0.5e-3, 88: 1e-3, 88 + 5.5: 0.5e-3, 110: 0.0},
    ("wsd", (("decay_fraction", 0.2), ("shape", "linear"))): {99: 0.5e-3, 110: 0.0},
    ("wsd", (("decay_fraction", 0.2), ("shape", "cosine"), ("floor", 0.1))): {99: 1e-4 + 0.9e-3 * 0.5, 110: 1e-4},
}


def test_noam_without_a_peak_is_the_papers_equation_3() -> None:
    paper = Horizon(peak=None, warmup_steps=10, max_steps=110, d_model=64, lr_factor=2.0)
    want = {1: 2.0 * 64**-0.5 * 10**-1.5, 10: 2.0 * (64 * 10) ** -0.5, 40: 2.0 * 64**-0.5 * 40**-0.5}
    assert {s: make(SCHEDULES, "noam").lr(s, paper) for s in want} == pytest.approx(want, rel=1e-12)


def test_every_schedule_has_closed_form_checks() -> None:
    builtin = {n for n in SCHEDULES.names() if SCHEDULES.get(n).__module__.startswith("ablate.")}  # not plugins
    assert {name for name, _ in CLOSED} == builtin


@pytest.mark.parametrize("key", list(CLOSED), ids=lambda k: "-".join([k[0], *(f"{a}={v}" for a, v in k[1])]))
def test_the_learning_rate_at_chosen_steps_is_its_closed_form(key) -> None:
    name, args = key
    schedule = make(SCHEDULES, {"name": name, "args": dict(args)})
    for step, want in CLOSED[key].items():
        assert schedule.lr(step, HORIZON) == pytest.approx(want, abs=1e-12), (name, step)
    # through LambdaLR as a run steps it: the update-th optimizer step runs at lr(update)
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.5)
    sched = scheduler(opt, schedule, HORIZON)
    seen = {}
    for update in range(1, HORIZON.max_steps + 1):
        seen[update] = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
    for step, want in CLOSED[key].items():
        if float(step).is_integer():
            assert seen[int(step)] == pytest.approx(want, abs=1e-12), (name, step)
    assert all(math.isfinite(v) and v >= 0 for v in seen.values())
