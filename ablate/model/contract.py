"""The contract every registered model variant must keep, as plain functions (torch only, no pytest).

tests/model parametrizes over ``CHECKS`` x every registered variant; ``ablate check-variants MODULE``
runs the same checks on the variants a user module registers (ablate/variants_cli.py). Each check
builds the tiny model of :func:`variant_config` (d_model 16, 2 heads, 2+2 layers, vocab 32) with one
slot set to the variant, and raises :class:`ContractError` (one line) when the variant breaks it:

- ``shapes``: forward / encode / decode shapes and dtypes
- ``causal``: changing a target token changes no output at an earlier position (and does change later ones)
- ``source_padding``: padding a source, alone or batched with a longer one, changes no output
- ``target_padding``: right-padding a target changes no output at its real positions
- ``gradients``: a loss's gradient reaches every parameter, non-zero (within a few steps for a
  parameter behind gates that start at zero, as ReZero's)
- ``determinism``: eval mode repeats exactly; train mode applies dropout
- ``cached_decoding``: token-by-token and chunked decoding with a cache, and a cache reordered mid-way,
  equal the full forward
- ``params``: the closed-form count (:func:`ablate.model.count_parameters`) equals the built model's,
  tied and untied, with unequal depths and d_k != d_v
- ``long_input``: a sequence longer than ``max_positions``: served when the positional encoding declares
  ``extrapolates``, and said what happens otherwise (such a model is refused longer data before training)
- ``lm_causal``, ``lm_gradients``, ``lm_params``, ``lm_long_input``: the same variant in the decoder-only
  language model (``model.arch: decoder``): causality, gradients, the closed-form count (tied and untied,
  the output tied to the embedding), 24 positions past ``max_positions=16``
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ablate.config import model_section
from ablate.config.size import count_parameters
from ablate.errors import ContractError
from ablate.model.build import build_model
from ablate.model.slots import SLOT_REGISTRIES
from ablate.model.transformer import Transformer

VOCAB, PAD, D_MODEL = 32, 0, 16
GATE_STEPS = 3  # SGD steps a parameter behind zero-initialized gates may take to get a gradient
TINY: dict[str, Any] = dict(
    n_layers=2, d_model=D_MODEL, d_ff=32, n_heads=2, dropout=0.1, attention_dropout=0.0, max_positions=64
)
ATOL = 1e-5


def variant_config(kind: str, name: Any) -> dict[str, Any]:
    """The tiny model section with slot ``kind`` set to ``name`` (a registered name or {name, args})."""
    return {**TINY, kind: name}


def _model(cfg: dict[str, Any], seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return build_model(model_section(cfg), vocab_size=VOCAB, pad_id=PAD)


def _tokens(b: int, t: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, VOCAB, (b, t), generator=g)


def _close(a: torch.Tensor, b: torch.Tensor, what: str, atol: float = ATOL) -> None:
    if a.shape != b.shape:
        raise ContractError(f"{what}: shapes differ, {tuple(a.shape)} vs {tuple(b.shape)}")
    diff = (a - b).abs().max().item() if a.numel() else 0.0
    if not diff <= atol:
        raise ContractError(f"{what} (max difference {diff:.3g} > {atol:g})")


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise ContractError(what)


def check_shapes(cfg: dict[str, Any]) -> None:
    model = _model(cfg)
    src, tgt = _tokens(3, 7, 1), _tokens(3, 5, 2)
    _require(model(src, tgt).shape == (3, 5, VOCAB), f"forward gave {tuple(model(src, tgt).shape)}, not [B, T, V]")
    memory, src_pad = model.encode(src)
    _require(memory.shape == (3, 7, D_MODEL), f"encode gave memory {tuple(memory.shape)}, not [B, S, D]")
    _require(src_pad.shape == (3, 7) and src_pad.dtype == torch.bool, "encode's padding mask is not [B, S] bool")
    _require(model.decode(tgt, memory, src_pad).shape == (3, 5, VOCAB), "decode did not give [B, T, V]")


def check_causal(cfg: dict[str, Any]) -> None:
    model = _model(cfg).eval()
    src, tgt = _tokens(2, 6, 1), _tokens(2, 6, 2)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % (VOCAB - 4) + 4  # another real token at position 4
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    _close(a[:, :4], b[:, :4], "future target tokens leak: changing position 4 changed outputs at positions 0-3")
    _require(not torch.allclose(a[:, 4:], b[:, 4:], atol=1e-4), "changing a target token changed no later output")


def check_source_padding(cfg: dict[str, Any]) -> None:
    model = _model(cfg).eval()
    src, tgt = _tokens(2, 5, 1), _tokens(2, 4, 2)
    padded = torch.cat([src, torch.full((2, 3), PAD)], dim=1)
    with torch.no_grad():
        _close(model(src, tgt), model(padded, tgt), "source padding changed the outputs")
        batch = torch.cat([padded[:1], _tokens(1, 8, 3)], dim=0)  # the short sentence beside a longer one
        alone, together = model(src[:1], tgt[:1]), model(batch, tgt[:1].expand(2, -1))[:1]
    _close(alone, together, "a padded source batched with a longer one changed its outputs")


def check_target_padding(cfg: dict[str, Any]) -> None:
    model = _model(cfg).eval()
    src, tgt = _tokens(2, 5, 1), _tokens(2, 4, 2)
    padded = torch.cat([tgt, torch.full((2, 3), PAD)], dim=1)
    with torch.no_grad():
        _close(model(src, tgt), model(src, padded)[:, :4], "right-padding the target changed real positions")


def check_gradients(cfg: dict[str, Any]) -> None:
    """Every parameter gets a non-zero gradient; one behind gates that start at zero (ReZero's alpha,
    zero-initialized scalings) gets it after a few SGD steps, once the gates have opened (the encoder
    behind the decoder's closed cross-attention gate needs two)."""
    model = _model(cfg).train()
    zero = _zero_gradients(model)
    for _ in range(GATE_STEPS if zero else 0):
        if not zero:
            break
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= 0.1 * p.grad
        model.zero_grad()
        zero = [name for name in _zero_gradients(model) if name in zero]
    steps = f" (also after {GATE_STEPS} steps)" if zero else ""
    _require(not zero, f"parameter {zero[0] if zero else ''} got an all-zero gradient{steps}")


def _zero_gradients(model: torch.nn.Module) -> list[str]:
    """Names of the parameters one loss's backward leaves without a non-zero gradient."""
    logits = model(*model.batch_inputs({"src": _tokens(3, 6, 1), "tgt_in": _tokens(3, 5, 2)}))
    F.cross_entropy(logits.reshape(-1, VOCAB), _tokens(3, 5, 3).reshape(-1)).backward()
    for name, p in model.named_parameters():
        _require(p.grad is not None, f"parameter {name} got no gradient")
    return [name for name, p in model.named_parameters() if p.grad is not None and not bool(p.grad.abs().sum() > 0)]


def check_determinism(cfg: dict[str, Any]) -> None:
    model = _model({**cfg, "dropout": 0.3, "attention_dropout": 0.3})
    src, tgt = _tokens(2, 6, 1), _tokens(2, 5, 2)
    with torch.no_grad():
        model.eval()
        _close(model(src, tgt), model(src, tgt), "two eval-mode forwards differ", atol=0.0)
        model.train()
        _require(not torch.allclose(model(src, tgt), model(src, tgt)), "train mode applies no dropout")


def check_cached_decoding(cfg: dict[str, Any]) -> None:
    model = _model(cfg).eval()
    src, tgt = _tokens(3, 7, 1), _tokens(3, 6, 2)
    src[0, 4:] = PAD  # a shorter sentence: cross-attention must keep ignoring its padding
    index = torch.tensor([2, 0])
    with torch.no_grad():
        full = model(src, tgt)
        memory, src_pad = model.encode(src)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, i : i + 1], memory, src_pad, cache=cache) for i in range(6)]
        _close(torch.cat(steps, dim=1), full, "token-by-token cached decoding differs from the full forward")
        _require(cache.length == 6, f"the cache holds {cache.length} positions after 6 steps")
        cache = model.new_cache()
        chunks = [model.decode(tgt[:, a:b], memory, src_pad, cache=cache) for a, b in ((0, 3), (3, 4), (4, 6))]
        _close(torch.cat(chunks, dim=1), full, "decoding in chunks of several tokens differs from the full forward")
        cache = model.new_cache()
        first = model.decode(tgt[:, :2], memory, src_pad, cache=cache)
        model.reorder_cache(cache, index, include_cross=True)
        rest = model.decode(tgt[index, 2:], memory[index], src_pad[index], cache=cache)
        expected = model(src[index], tgt[index])
    _close(torch.cat([first[index], rest], dim=1), expected, "decoding after reorder_cache differs from scratch")


def check_params(cfg: dict[str, Any]) -> None:
    extras = ({}, {"tie_embeddings": False}, {"n_enc_layers": 3, "n_dec_layers": 1, "d_k": 4, "d_v": 6})
    for extra in extras:
        section = model_section({**cfg, **extra})
        counted = sum(p.numel() for p in build_model(section, vocab_size=VOCAB).parameters())
        closed = count_parameters(section, vocab_size=VOCAB)
        _require(closed == counted, f"closed-form count {closed} != {counted} parameters built (with {extra})")


def check_long_input(cfg: dict[str, Any]) -> str:
    """A sequence longer than ``max_positions``: a positional encoding that declares ``extrapolates``
    must serve it; one that does not is refused before training (ablate.train.lengths) whatever it does.
    Returns what the variant did, for the report."""
    from ablate.model.positional import fixed_positions

    model = _model({**cfg, "max_positions": 16}).eval()
    fixed = fixed_positions(model)
    args = model.batch_inputs({"src": _tokens(2, 24, 0), "tgt_in": _tokens(2, 24, 1)})
    try:
        with torch.no_grad():
            out = model(*args)
    except Exception as exc:  # noqa: BLE001 - what the variant raises is what is reported
        _require(bool(fixed), f"declares extrapolates=True but fails past max_positions: {type(exc).__name__}: {exc}")
        return f"refuses 24 positions past max_positions=16 ({', '.join(fixed)}: checked before training)"
    _require(bool(torch.isfinite(out).all()), "non-finite output past max_positions")
    return "serves 24 positions past max_positions=16" + (
        f" (though {', '.join(fixed)} declares it cannot)" if fixed else ""
    )


# -- the same variant in the decoder-only language model (model.arch: decoder) --------------------------
def _lm(cfg: dict[str, Any]) -> dict[str, Any]:
    return {**cfg, "arch": "decoder"}


def check_lm_causal(cfg: dict[str, Any]) -> None:
    """As a language model: changing a token changes no earlier prediction, and does change later ones."""
    model = _model(_lm(cfg)).eval()
    tokens = _tokens(2, 8, 2)
    changed = tokens.clone()
    changed[:, 5] = (changed[:, 5] + 1 - 4) % (VOCAB - 4) + 4
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    _require(a.shape == (2, 8, VOCAB), f"the language model gave {tuple(a.shape)}, not [B, T, V]")
    _close(a[:, :5], b[:, :5], "language model: changing position 5 changed predictions at positions 0-4")
    _require(not torch.allclose(a[:, 5:], b[:, 5:], atol=1e-4), "language model: a token changed no later prediction")


def check_lm_gradients(cfg: dict[str, Any]) -> None:
    check_gradients(_lm(cfg))


def check_lm_params(cfg: dict[str, Any]) -> None:
    """The closed form counts the language model as built, tied and untied; tied, the output projection
    is the embedding matrix itself."""
    for extra in ({}, {"tie_embeddings": False}):
        section = model_section({**_lm(cfg), **extra})
        model = build_model(section, vocab_size=VOCAB)
        counted, closed = sum(p.numel() for p in model.parameters()), count_parameters(section, vocab_size=VOCAB)
        _require(closed == counted, f"language model: closed-form count {closed} != {counted} built (with {extra})")
        tied = model.output_weight is model.embed.weight
        _require(tied == section.tie_embeddings, f"language model: output tied to the embedding is {tied} ({extra})")


def check_lm_long_input(cfg: dict[str, Any]) -> str:
    """As a language model, 2x and 4x ``max_positions``: served by an encoding that extrapolates."""
    return check_long_input(_lm(cfg))


CHECKS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "shapes": check_shapes,
    "causal": check_causal,
    "source_padding": check_source_padding,
    "target_padding": check_target_padding,
    "gradients": check_gradients,
    "determinism": check_determinism,
    "cached_decoding": check_cached_decoding,
    "params": check_params,
    "long_input": check_long_input,
    "lm_causal": check_lm_causal,
    "lm_gradients": check_lm_gradients,
    "lm_params": check_lm_params,
    "lm_long_input": check_lm_long_input,
}


@dataclass(frozen=True)
class CheckResult:
    kind: str
    name: str
    check: str
    ok: bool
    message: str = ""

    def line(self) -> str:
        status = "PASS" if self.ok else "FAIL"
        return f"{status}  {self.kind}={self.name:<12} {self.check:<16} {self.message}".rstrip()


def registered_variants() -> list[tuple[str, str]]:
    """(slot kind, name) of every registered model variant, built-in and imported plugins alike."""
    return [(kind, name) for kind, reg in sorted(SLOT_REGISTRIES.items()) for name in reg.names()]


def run_contract(variants: Iterable[tuple[str, str]], checks: Iterable[str] | None = None) -> list[CheckResult]:
    """Run ``checks`` (default: all) on each (kind, name); an exception is a failed check, not a crash."""
    results = []
    for kind, name in variants:
        cfg = variant_config(kind, name)
        for check in checks if checks is not None else CHECKS:
            try:
                said = CHECKS[check](cfg)  # a check may say what it saw (long_input)
            except Exception as exc:  # noqa: BLE001 - user code may raise anything; report it as one line
                msg = (str(exc).strip().splitlines() or [""])[0]
                prefix = "" if isinstance(exc, ContractError) else f"{type(exc).__name__}: "
                results.append(CheckResult(kind, name, check, False, prefix + msg))
            else:
                results.append(CheckResult(kind, name, check, True, said if isinstance(said, str) else ""))
    return results
