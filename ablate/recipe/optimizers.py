"""The optimizer slot (``train.optimizer``): a registered recipe per optimizer, the paper's Adam by default.

``train.optimizer`` is a slot like the model's: a name (``muon``) or ``{name: muon, args: {momentum: 0.9}}``.
A recipe is one class: its constructor's keywords are the slot's args (checked at load, as a model
variant's are), its docstring's first line is what ``ablate variants`` prints, and it says how many
floats of state it keeps per parameter (the dry run's memory estimate). :meth:`OptimizerRecipe.build`
makes the torch optimizer from the model; torch is imported there only, so the config checks and the
dry run read the registry without it. Every recipe makes ONE optimizer object, so Lightning's automatic
optimization, gradient accumulation, checkpoints and DDP work unchanged.

The settings every Adam-like recipe shares stay where the paper's recipe put them: ``train.adam_beta1``,
``train.adam_beta2``, ``train.adam_eps`` and ``train.weight_decay`` (:class:`Shared`). A recipe lists the
train keys it reads in ``uses``; a key it does not read, set by the layer that chose it or a later one,
is an error at load (ablate/recipe/check.py), never ignored without a word.

Decoupled weight decay (Loshchilov & Hutter 2019) is applied, by every recipe but the paper's ``adam``,
to matrices only (embeddings, projections): decaying norms' gains and biases pulls them to zero for no
regularising gain, the GPT-2 / nanoGPT practice. A plugin recipe is one module listed under a sweep
file's ``imports:`` that registers a subclass here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ablate.registry import Registry

OPTIMIZERS: Registry[type[OptimizerRecipe]] = Registry("optimizer", "train.optimizer: how the weights are updated")
ADAM_KEYS = ("adam_beta1", "adam_beta2", "adam_eps", "weight_decay")  # the train keys of the Adam family


@dataclass(frozen=True)
class Shared:
    """The optimizer settings that live in ``train`` itself (the paper's names), as plain numbers."""

    betas: tuple[float, float] = (0.9, 0.98)  # train.adam_beta1, train.adam_beta2
    eps: float = 1e-9  # train.adam_eps
    weight_decay: float = 0.0  # train.weight_decay


class OptimizerRecipe:
    """A registered optimizer: its constructor takes the slot's args; ``build`` makes the torch optimizer.

    The learning rate the optimizer is built with is 1.0: the schedule (ablate/recipe/schedules.py) sets
    each step's absolute rate.
    """

    paper: str = ""  # the paper that defines it (shown by `ablate variants` through the docstring)
    state_floats_per_param: float = 2.0  # floats of optimizer state per parameter (the dry run's memory)
    uses: tuple[str, ...] = ADAM_KEYS  # train keys it reads (a key it does not read may not be set with it)
    schedules: tuple[str, ...] | None = None  # the schedules it runs under (None: any)

    def build(self, model: Any, shared: Shared) -> Any:
        """The torch optimizer over ``model``'s parameters (an ``nn.Module``)."""
        raise NotImplementedError


def param_kinds(model: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """(hidden matrices, embeddings and output, the rest: norms' gains and biases) of a model, in
    parameter order. The embeddings (every ``nn.Embedding``) and the pre-softmax projection are
    matrices too, but Muon's orthogonalised update is for hidden layers (its authors give them AdamW)."""
    from torch import nn

    table_ids = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    output = getattr(model, "output_weight", None)
    if output is not None:
        table_ids.add(id(output))
    hidden, tables, rest = [], [], []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        if id(p) in table_ids:
            tables.append(p)
        elif p.ndim == 2:
            hidden.append(p)
        else:
            rest.append(p)
    return hidden, tables, rest


def fused_options(model: Any) -> dict[str, Any]:
    """``{"fused": True}`` when every parameter is on CUDA (the fused Adam kernel's requirement), else {}."""
    params = list(model.parameters())
    return {"fused": True} if params and all(p.is_cuda for p in params) else {}


def decay_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    """Two parameter groups: matrices decayed by ``weight_decay``, norms' gains and biases not."""
    hidden, tables, rest = param_kinds(model)
    return [{"params": hidden + tables, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]


@OPTIMIZERS.register("adam")
class Adam(OptimizerRecipe):
    """Adam, beta 0.9 / 0.98, eps 1e-9, no decay: the paper's (Vaswani et al. 2017, 5.3; Kingma & Ba 2015)."""

    paper = "Kingma & Ba 2015, as Vaswani et al. 2017 section 5.3 sets it"

    def build(self, model: Any, shared: Shared) -> Any:
        import torch

        decay = shared.weight_decay
        cls = torch.optim.AdamW if decay > 0 else torch.optim.Adam  # decoupled decay (of every weight) only if asked
        kw: dict[str, Any] = {"weight_decay": decay} if decay > 0 else {}
        kw.update(fused_options(model))  # fused Adam on CUDA
        return cls(model.parameters(), lr=1.0, betas=shared.betas, eps=shared.eps, **kw)


@OPTIMIZERS.register("adamw")
class AdamW(OptimizerRecipe):
    """AdamW: Adam with decoupled weight decay of the matrices (Loshchilov & Hutter 2019)."""

    paper = "Loshchilov & Hutter 2019, Decoupled Weight Decay Regularization"

    def build(self, model: Any, shared: Shared) -> Any:
        import torch

        kw = fused_options(model)
        groups = decay_groups(model, shared.weight_decay)
        return torch.optim.AdamW(groups, lr=1.0, betas=shared.betas, eps=shared.eps, **kw)


@OPTIMIZERS.register("muon")
class Muon(OptimizerRecipe):
    """Muon for the hidden matrices + AdamW for embeddings, output, norms, biases (Jordan et al. 2024)."""

    paper = "Jordan et al. 2024, Muon: An optimizer for hidden layers in neural networks"
    state_floats_per_param = 1.0  # a momentum buffer a hidden-matrix weight (the rest keep AdamW's 2)

    def __init__(
        self, momentum: float = 0.95, nesterov: bool = True, ns_steps: int = 5, adjust_lr: str = "match_rms_adamw"
    ) -> None:
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        if int(ns_steps) < 1:
            raise ValueError(f"ns_steps must be at least 1, got {ns_steps}")
        if adjust_lr not in ("match_rms_adamw", "original"):
            raise ValueError(f"adjust_lr must be 'match_rms_adamw' or 'original', got {adjust_lr!r}")
        self.momentum, self.nesterov, self.ns_steps, self.adjust_lr = momentum, nesterov, int(ns_steps), adjust_lr

    def build(self, model: Any, shared: Shared) -> Any:
        from ablate.recipe.muon import MuonWithAdamW

        hidden, tables, rest = param_kinds(model)
        muon = {"momentum": self.momentum, "nesterov": self.nesterov, "ns_steps": self.ns_steps}
        return MuonWithAdamW(hidden, tables, rest, shared, adjust_lr=self.adjust_lr, **muon)


@OPTIMIZERS.register("lion")
class Lion(OptimizerRecipe):
    """Lion: the sign of an interpolated momentum (Chen et al. 2023, Symbolic Discovery of Optimization Algorithms)."""

    paper = "Chen et al. 2023, Symbolic Discovery of Optimization Algorithms"
    state_floats_per_param = 1.0  # one momentum
    uses = ("weight_decay",)  # its betas are its own args: Adam's mean other things

    def __init__(self, beta1: float = 0.9, beta2: float = 0.99) -> None:
        for name, beta in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {beta}")
        self.betas = (float(beta1), float(beta2))

    def build(self, model: Any, shared: Shared) -> Any:
        from ablate.recipe.lion import LionOptimizer

        return LionOptimizer(decay_groups(model, shared.weight_decay), lr=1.0, betas=self.betas)


@OPTIMIZERS.register("schedulefree_adamw")
class ScheduleFreeAdamW(OptimizerRecipe):
    """Schedule-Free AdamW: iterate averaging instead of a decay (Defazio et al. 2024); the schedulefree package."""

    paper = "Defazio et al. 2024, The Road Less Scheduled"
    schedules = ("constant",)  # its averaging replaces the decay; the schedule gives the warm-up only

    def __init__(self, weight_lr_power: float = 2.0, r: float = 0.0) -> None:
        self.weight_lr_power, self.r = float(weight_lr_power), float(r)

    def build(self, model: Any, shared: Shared) -> Any:
        try:
            import schedulefree
        except ImportError:
            raise ImportError(
                "train.optimizer=schedulefree_adamw needs the schedulefree package: pip install 'ablate[recipes]'"
            ) from None
        groups = decay_groups(model, shared.weight_decay)
        kw = {"weight_lr_power": self.weight_lr_power, "r": self.r}
        return schedulefree.AdamWScheduleFree(groups, lr=1.0, betas=shared.betas, eps=shared.eps, **kw)
