"""How the training forward runs: eager, compiled (``train.compile``), or captured as CUDA graphs
(``train.cuda_graphs``).

On a GPU the base model's step is bound by the host: about 1,160 kernel launches a step at 6,250 tokens
a side on an H200, 30 ms for work the device does in a fraction of that. A CUDA graph replays a whole
captured forward (and its backward) as one launch, but only for the shape it was captured at: with
every batch its own length, a graph per batch is a net loss (PyTorch's own guidance, and the reason
``train.compile`` uses dynamic shapes). With bucketed batches (``data.bucket_ratio`` and
``data.batch_multiple``: a few hundred shapes on WMT-sized data, a few dozen on Multi30k) the captures
repeat. :func:`step_features` then uses ``torch.compile(mode="reduce-overhead", dynamic=False)``,
which captures one graph per shape, forward and backward, and replays it; PyTorch's public
``torch.compiler.cudagraph_mark_step_begin`` marks each training step so that a graph's outputs from
the step before are not expected to survive. Validation keeps exact, unbucketed shapes and runs eager.
Off a GPU it falls back (eager, or compiled with ``train.compile``) and says so in one line
(:func:`graphs_note`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ablate.stack_private import raise_recompile_limit

# Shapes a graphed step may compile before torch.compile gives up on new ones (its default is 8): a
# WMT-sized epoch has ~221 bucketed shapes (benchmarks/bench_shapes.py), Multi30k ~44. Each captured
# graph holds its own memory pool; the split's memory model does not count it (measure on a GPU).
GRAPH_SHAPES = 512


def step_features(fn: Callable[..., Any], *, compile: bool, cuda_graphs: bool, on_cuda: bool) -> Callable[..., Any]:
    """The training forward ``fn`` as it should run here (see the module docstring)."""
    if cuda_graphs and on_cuda:
        return graphed(fn)
    if compile:
        return torch.compile(fn, dynamic=True)  # the token buckets' lengths vary: one compilation for all
    return fn


def graphed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled to replay one CUDA graph per input shape (on a CPU, inductor compiles the same
    static-shape code without graphs: what the tests can run)."""
    raise_recompile_limit(GRAPH_SHAPES)  # one compilation per shape; past the limit a shape would run eager
    compiled = torch.compile(fn, mode="reduce-overhead", dynamic=False)

    def run(*args: Any) -> Any:
        torch.compiler.cudagraph_mark_step_begin()  # a new step: the last step's graph outputs are done with
        return compiled(*args)

    return run


def graphs_note(cuda_graphs: bool, compile: bool, device_type: str) -> str | None:
    """The one line a trial says when ``train.cuda_graphs`` cannot be honoured here, else None."""
    if not cuda_graphs or device_type == "cuda":
        return None
    how = "compiled with dynamic shapes (train.compile)" if compile else "eager"
    return f"train.cuda_graphs: not on CUDA ({device_type}): the training step runs {how}"
