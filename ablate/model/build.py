"""From a ``model`` config section to a Transformer (its parameter count and training FLOPs, computed
without building it: ablate/config/size.py).

This is the only code that reads model config (Table 3's knobs: N, d_model, d_ff, h, d_k, d_v,
P_drop, positional encoding, residual placement). Modules below receive built children and plain numbers.

:func:`build_model` takes a ``model`` section in its one shape, a frozen ``ModelConfig``
(``model_section(cfg.model)``, or of a stored dict; ``ablate.build_model`` accepts any of them). It
was checked when it was loaded (values, variant names, slot args, cross-section limits), so nothing
here checks it again.

Slots (``positional``, ``attention``, ``norm``, ``ffn``, ``residual``) name a registered class and
optional ``args``. A class receives, from the values below, only the keywords its constructor names,
plus every slot arg (the loader refuses an arg the constructor does not accept):

- positional: ``d_model, max_positions, n_heads, d_k, causal`` (True for the decoder's instance)
- attention:  ``d_model, n_heads, d_k, d_v, dropout`` (= model.attention_dropout)
- norm:       ``d_model``
- ffn:        ``d_model, d_ff``
- residual:   ``norms`` (``cls.norms_per_sublayer`` built norms), ``dropout`` (= model.dropout),
  ``n_enc_layers, n_dec_layers, stack`` ("encoder" | "decoder")

Initial weights pair across rows: every part (an embedding, one layer's self-attention, FFN, ...) is
drawn from its own random stream, seeded by the global seed and the part's place in the model. Two
rows of a sweep at the same seed start from the same weights wherever their shapes agree (a row with
another d_ff draws only its FFNs anew), and the global stream after the build (dropout) does not
depend on how many numbers the init drew, so a row-minus-base difference cancels that noise. Before,
one stream drew every part in turn, and any change of shape moved every draw after it.

Parameter counts are closed form: every registered class may define ``num_params`` (a staticmethod or
classmethod taking the constructor's keywords) in its own class body. A class that does not (or
inherits it) is built once on the meta device, which allocates nothing, and its parameters counted.
The counting needs no torch (ablate/config/size.py): the dry run counts built-in variants without it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

import torch
from torch import nn

from ablate.config.schema import ModelConfig, enc_dec_layers
from ablate.data.special import PAD_ID
from ablate.family import family_of
from ablate.model.lm import CausalLayer, LanguageModel
from ablate.model.slots import Slot, model_slots
from ablate.model.transformer import DecoderLayer, EncoderLayer, Transformer

T = TypeVar("T")


def _embedding(vocab_size: int, d_model: int, pad_id: int) -> nn.Embedding:
    emb = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
    # std d_model^-0.5: after the sqrt(d_model) scaling the embeddings have unit scale, like the
    # sinusoids; as the pre-softmax matrix it gives logits of unit scale (fairseq's choice)
    nn.init.normal_(emb.weight, mean=0.0, std=d_model**-0.5)
    with torch.no_grad():
        emb.weight[pad_id].zero_()
    return emb


def _embeddings(m: ModelConfig, vocab_size: int, pad_id: int) -> tuple[nn.Embedding, nn.Embedding, nn.Linear | None]:
    """Source and target embeddings and the pre-softmax projection (None: tied to the embeddings)."""
    src_embed = _embedding(vocab_size, m.d_model, pad_id)
    if m.tie_embeddings:  # one matrix for source, target and the pre-softmax projection (section 3.4)
        return src_embed, src_embed, None
    tgt_embed = _embedding(vocab_size, m.d_model, pad_id)
    out_proj = nn.Linear(m.d_model, vocab_size, bias=False)
    nn.init.normal_(out_proj.weight, mean=0.0, std=m.d_model**-0.5)
    return src_embed, tgt_embed, out_proj


class _PartStreams:
    """One random stream per part of the model: ``part(name, build)`` runs ``build`` with the global CPU
    generator seeded from (one draw of the global stream, ``name``) and restores the generator after."""

    def __init__(self) -> None:
        self.base = int(
            torch.randint(0, 2**62, (1,), device="cpu").item()
        )  # the only draw the build takes from the global stream

    def part(self, name: str, build: Callable[[], T]) -> T:
        seed = int.from_bytes(hashlib.sha256(f"{self.base}:{name}".encode()).digest()[:8], "little") >> 1
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return build()


def build_model(m: ModelConfig, vocab_size: int, pad_id: int = PAD_ID) -> Transformer | LanguageModel:
    """Build the model a ``model`` section describes (see the module docstring): its family
    (``model.arch``, ablate/family.py) builds it, from the same slots; the encoder-decoder Transformer
    (:func:`build_transformer`) or the decoder-only language model (:func:`build_language_model`)."""
    if not isinstance(m, ModelConfig):
        raise TypeError(f"build_model takes a ModelConfig (model_section(cfg.model)), got {type(m).__name__}")
    if vocab_size <= pad_id or vocab_size < 2:
        raise ValueError(f"vocab_size={vocab_size} must exceed pad_id={pad_id}; check the prepared vocabulary")
    return family_of(m).build(m, vocab_size, pad_id)


def build_transformer(m: ModelConfig, vocab_size: int, pad_id: int) -> Transformer:
    """The paper's encoder-decoder Transformer of a checked ``model`` section."""
    slots = model_slots(m)
    n_enc, n_dec = enc_dec_layers(m)
    norm, attn, ffn = slots["norm"], slots["attention"], slots["ffn"]
    enc_res, dec_res = slots["enc_residual"], slots["dec_residual"]
    rng = _PartStreams()

    def residuals(slot: Slot, n: int) -> list[nn.Module]:
        return [slot.build(norms=[norm.build() for _ in range(slot.cls.norms_per_sublayer)]) for _ in range(n)]

    def encoder_layer(i: int) -> EncoderLayer:
        parts = (f"encoder.{i}.{p}" for p in ("self_attn", "ffn", "residuals"))
        built = [rng.part(n, b) for n, b in zip(parts, (attn.build, ffn.build, lambda: residuals(enc_res, 2)))]
        return EncoderLayer(*built)

    def decoder_layer(i: int) -> DecoderLayer:
        parts = (f"decoder.{i}.{p}" for p in ("self_attn", "cross_attn", "ffn", "residuals"))
        builds = (attn.build, attn.build, ffn.build, lambda: residuals(dec_res, 3))
        return DecoderLayer(*[rng.part(n, b) for n, b in zip(parts, builds)])

    src_embed, tgt_embed, out_proj = rng.part("embeddings", lambda: _embeddings(m, vocab_size, pad_id))
    return Transformer(
        src_embed=src_embed,
        tgt_embed=tgt_embed,
        out_proj=out_proj,
        src_positional=rng.part("src_positional", slots["src_positional"].build),
        tgt_positional=rng.part("tgt_positional", slots["tgt_positional"].build),
        encoder_layers=[encoder_layer(i) for i in range(n_enc)],
        decoder_layers=[decoder_layer(i) for i in range(n_dec)],
        # pre-norm-like placements leave each stack's output unnormalized: they ask for a final norm
        encoder_norm=rng.part("encoder_norm", norm.build) if enc_res.cls.final_norm else None,
        decoder_norm=rng.part("decoder_norm", norm.build) if dec_res.cls.final_norm else None,
        d_model=m.d_model,
        dropout=m.dropout,
        scale_embeddings=m.scale_embeddings,
        pad_id=pad_id,
    )


def build_language_model(m: ModelConfig, vocab_size: int, pad_id: int) -> LanguageModel:
    """One causal stack of n_layers (self-attention + FFN), its parts drawn from the same streams as the
    translator's decoder (``decoder.<i>.self_attn``, ...), so the two architectures share what they can."""
    slots = model_slots(m)
    norm, attn, ffn, res = slots["norm"], slots["attention"], slots["ffn"], slots["dec_residual"]
    rng = _PartStreams()

    def layer(i: int) -> CausalLayer:
        wrappers = lambda: [res.build(norms=[norm.build() for _ in range(res.cls.norms_per_sublayer)]) for _ in (0, 1)]  # noqa: E731
        parts = (f"decoder.{i}.{p}" for p in ("self_attn", "ffn", "residuals"))
        return CausalLayer(*[rng.part(n, b) for n, b in zip(parts, (attn.build, ffn.build, wrappers))])

    def embeddings() -> tuple[nn.Embedding, nn.Linear | None]:
        embed = _embedding(vocab_size, m.d_model, pad_id)
        if m.tie_embeddings:
            return embed, None
        out = nn.Linear(m.d_model, vocab_size, bias=False)
        nn.init.normal_(out.weight, mean=0.0, std=m.d_model**-0.5)
        return embed, out

    embed, out_proj = rng.part("embeddings", embeddings)
    return LanguageModel(
        embed=embed,
        out_proj=out_proj,
        positional=rng.part("tgt_positional", slots["tgt_positional"].build),
        layers=[layer(i) for i in range(m.n_layers)],
        norm=rng.part("decoder_norm", norm.build) if res.cls.final_norm else None,
        d_model=m.d_model,
        dropout=m.dropout,
        scale_embeddings=m.scale_embeddings,
        pad_id=pad_id,
    )
