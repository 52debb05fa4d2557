"""A ``model`` section's slots resolved, checked and counted: parameters and training FLOPs, without torch.

A slot in the ``model`` section is a registered name or ``{name, args}``. :func:`check_slot` is what
the config loader calls once (unknown names, malformed slots, args the class does not take), and then
each closed form of :func:`model_slots` (impossible values). ablate/model/build.py builds from the
same :func:`model_slots` and wraps :func:`count_parameters` and :func:`train_flops`.

Names resolve through ablate/config/variants.py: the real classes once ablate.model is imported, else
the built-in variants' stand-ins, so the config check, ``ablate sweep --dry-run``, ``ablate status``
and ``ablate table`` import no torch. Torch is imported only to count a class without a closed form
(a plugin's), which is built on the meta device, and such a class means ablate.model is imported.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

from omegaconf import OmegaConf

from ablate.config.schema import ModelConfig, enc_dec_layers, head_dims
from ablate.config.variants import Variant, attention_params, lookup
from ablate.family import family_of
from ablate.registry import RegistryError, parse_slot

# Used by train_flops when the caller does not know the average sentence lengths: about the mean
# subword length of one side of a WMT'14 En-De sentence pair.
TYPICAL_SENTENCE_LEN = 32


def keywords(fn: Any) -> frozenset[str] | None:
    """Keyword names ``fn`` (a class, a function or a built-in Variant) accepts; None if it takes ``**kwargs``."""
    if isinstance(fn, Variant):
        return frozenset(fn.keywords)
    try:
        return _signature_keywords(fn)
    except TypeError:  # an unhashable callable: read its signature each time
        return _signature_keywords.__wrapped__(fn)


@functools.lru_cache(maxsize=256)
def _signature_keywords(fn: Any) -> frozenset[str] | None:
    """Read once per callable: ``inspect.signature`` cost 23 us a call, 2.1 s of the dry run of a
    10,000-trial sweep (9 slots per trial, each counted twice)."""
    sig = inspect.signature(fn)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return frozenset(n for n, p in sig.parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL)


def closed_form(cls: Any) -> Any:
    """``num_params`` of a Variant, or of a class that defines it in its own body (an inherited one may
    miss new parameters); None if there is none."""
    if isinstance(cls, Variant):
        return cls.num_params
    return cls.num_params if isinstance(cls, type) and "num_params" in vars(cls) else None


def _parse(kind: str, spec: Any) -> tuple[str, dict[str, Any]]:
    plain = OmegaConf.to_container(spec, resolve=True) if OmegaConf.is_config(spec) else spec
    return parse_slot(plain, kind)


def lookup_slot(kind: str, spec: Any) -> tuple[Any, dict[str, Any]]:
    """(registered class or Variant, slot args) of a slot ``spec``: a name, ``{name, args}`` or its DictConfig."""
    name, args = _parse(kind, spec)
    return lookup(kind, name), args


def check_slot(kind: str, spec: Any) -> None:
    """Raise RegistryError for an unknown name, a malformed slot or an arg the class does not take."""
    name, args = _parse(kind, spec)
    accepted = keywords(lookup(kind, name))
    unknown = sorted(set(args) - accepted) if accepted is not None else []
    if unknown:
        raise RegistryError(
            f"{name!r} does not take the argument(s) {', '.join(unknown)} "
            f"(it takes: {', '.join(sorted(accepted or ())) or 'none'})"
        )


@dataclasses.dataclass
class Slot:
    """A resolved slot: the registered class (or built-in Variant) and the keywords it will be called with."""

    cls: Any
    kwargs: dict[str, Any]
    stand_in_norms: int = 0  # a residual's norms: counting by building passes this many parameter-free ones

    def build(self, **children: Any) -> Any:
        return self.cls(**self.kwargs, **children)

    def num_params(self) -> int:
        fn = closed_form(self.cls)
        if fn is not None:
            accepted = keywords(fn)
            kw = self.kwargs if accepted is None else {k: v for k, v in self.kwargs.items() if k in accepted}
            return int(fn(**kw))
        import torch  # no closed form (a plugin class): build it without allocating and count
        from torch import nn

        children = {"norms": [nn.Identity() for _ in range(self.stand_in_norms)]} if self.stand_in_norms else {}
        with torch.device("meta"):
            module = self.build(**children)
        return sum(p.numel() for p in module.parameters())


def _slot(kind: str, spec: Any, context: dict[str, Any]) -> Slot:
    cls, args = lookup_slot(kind, spec)
    accepted = keywords(cls)
    if accepted is not None:
        context = {k: v for k, v in context.items() if k in accepted}
    return Slot(cls, {**context, **args})


def _residual(m: Any, stack: str) -> Slot:
    n_enc, n_dec = enc_dec_layers(m)
    context = dict(dropout=m.dropout, n_enc_layers=n_enc, n_dec_layers=n_dec, stack=stack)
    slot = _slot("residual", m.residual, context)
    slot.stand_in_norms = slot.cls.norms_per_sublayer
    return slot


def model_slots(m: ModelConfig) -> dict[str, Slot]:
    """Every slot of a checked ``model`` section, resolved with the values its classes receive
    (ablate/model/build.py's docstring lists them); the loader calls each closed form once."""
    d_k, d_v = head_dims(m)
    positional = dict(d_model=m.d_model, max_positions=m.max_positions, n_heads=m.n_heads, d_k=d_k)
    return {
        "src_positional": _slot("positional", m.positional, {**positional, "causal": False}),
        "tgt_positional": _slot("positional", m.positional, {**positional, "causal": True}),
        "enc_residual": _residual(m, "encoder"),
        "dec_residual": _residual(m, family_of(m).decoder_stack()),
        "attention": _slot(
            "attention",
            m.attention,
            dict(d_model=m.d_model, n_heads=m.n_heads, d_k=d_k, d_v=d_v, dropout=m.attention_dropout),
        ),
        "norm": _slot("norm", m.norm, dict(d_model=m.d_model)),
        "ffn": _slot("ffn", m.ffn, dict(d_model=m.d_model, d_ff=m.d_ff)),
    }


def count_parameters(m: ModelConfig, vocab_size: int) -> int:
    """Parameters of the model a checked ``model`` section describes; closed forms, allocates nothing
    (the family, ``model.arch``, says which embeddings and stacks it has)."""
    return family_of(m).num_params(m, model_slots(m), vocab_size)


def stack_params(slots: dict[str, Slot], stacks: tuple[tuple[Slot, int, int, int], ...]) -> int:
    """Parameters of layer stacks, each (its residual slot, layers, sub-layers a layer, attentions a layer):
    every layer's attentions, FFN and residual wrappers with their norms, and a final norm where the
    residual placement asks for one."""
    attn, ffn, norm = (slots[k].num_params() for k in ("attention", "ffn", "norm"))
    total = 0
    for res, n_layers, n_sub, n_attn in stacks:
        wrapper = res.num_params() + res.cls.norms_per_sublayer * norm  # one residual wrapper and its norms
        total += n_layers * (n_attn * attn + ffn + n_sub * wrapper) + (norm if res.cls.final_norm else 0)
    return total


@dataclasses.dataclass(frozen=True)
class TokenFlops:
    """Forward FLOPs per token of a model section's parts, which a family sums over its stacks."""

    q_o: float  # W_Q and W_O per query token
    k_v: float  # W_K and W_V per key/value token
    ffn: float  # the position-wise FFN per token
    per_key: float  # Q.K^T and weights.V for one query, per key
    src_len: float  # average source length
    tgt_len: float  # average target length

    def scores(self, keys: float) -> float:
        """Q.K^T and weights.V for one query over ``keys`` keys."""
        return self.per_key * keys


def train_flops(
    m: ModelConfig,
    vocab_size: int,
    src_tokens: float,
    tgt_tokens: float,
    src_len: float | None = None,
    tgt_len: float | None = None,
) -> float:
    """Estimated forward + backward FLOPs for a batch of ``src_tokens`` / ``tgt_tokens`` tokens of a
    checked ``model`` section (the model ``ablate.model.build_model`` builds).

    Forward: matmuls at 2*m*n*k (projections, FFN at 2 FLOPs per FFN parameter, attention scores
    Q.K^T and weights.V at the average lengths ``src_len`` / ``tgt_len`` (causal self-attention sees
    (T+1)/2 keys on average), cross-attention K/V once per source token per decoder layer, and the
    V-way output projection). Training = 3x forward (the backward pass costs about twice the forward).
    Lengths default to TYPICAL_SENTENCE_LEN (32). The K/V projections move with the attention slot's
    own parameter count against multi-head attention's, so GQA / MQA cost their fewer key/value heads;
    the scores are h query heads over every key, whatever the variant.
    """
    d_k, d_v = head_dims(m)
    d, h = m.d_model, m.n_heads
    slots = model_slots(m)
    # W_K and W_V per key/value token; a variant with other parameter counts than multi-head attention
    # (GQA, MQA: fewer K/V heads) moves them by 2 FLOPs per parameter of difference
    extra = slots["attention"].num_params() - attention_params(d, h, d_k, d_v, kv_heads=h)
    parts = TokenFlops(
        q_o=2.0 * (d * h * d_k + h * d_v * d),
        k_v=max(0.0, 2.0 * (d * h * d_k + d * h * d_v + extra)),
        ffn=2.0 * slots["ffn"].num_params(),
        per_key=2.0 * h * (d_k + d_v),
        src_len=float(src_len if src_len is not None else TYPICAL_SENTENCE_LEN),
        tgt_len=float(tgt_len if tgt_len is not None else TYPICAL_SENTENCE_LEN),
    )
    return family_of(m).train_flops(m, parts, vocab_size, src_tokens, tgt_tokens)
