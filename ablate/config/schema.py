"""The configuration schema: one dataclass per section; defaults are the paper's base model and recipe.

Vaswani et al. 2017, section 6.1 and Table 3 "base". Loading, layering and checking live in
ablate/config/load.py and ablate/config/check.py; this module is only the shape (and two small helpers
that derive values from a model section).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ablate.errors import ConfigError


@dataclass(frozen=True)
class ModelConfig:
    """The ``model`` section; frozen, and the one shape every consumer takes (``model_section``)."""

    arch: str = "encdec"  # encdec: the paper's encoder-decoder translator | decoder: one causal stack, a language model
    n_layers: int = 6  # N: layers in the encoder and in the decoder (arch decoder: in its one stack)
    n_enc_layers: int | None = None  # encoder layers if different from n_layers
    n_dec_layers: int | None = None  # decoder layers if different from n_layers
    d_model: int = 512  # width of the residual stream and the embeddings
    d_ff: int = 2048  # inner width of the position-wise feed-forward network
    n_heads: int = 8  # h: attention heads
    d_k: int | None = None  # per-head query/key width (default d_model / n_heads); row B shrinks only this
    d_v: int | None = None  # per-head value width (default d_model / n_heads)
    dropout: float = 0.1  # P_drop: on sub-layer outputs and on embeddings + positions
    attention_dropout: float = 0.0  # dropout on attention weights (the paper uses none)
    positional: Any = "sinusoidal"  # positional encoding: a registered name or {name, args}
    attention: Any = "mha"  # attention variant: a registered name or {name, args}
    norm: Any = "layernorm"  # normalization: a registered name or {name, args}
    residual: Any = "post"  # residual/norm placement: post = Norm(x + Dropout(f(x))) as in the paper | pre | ...
    ffn: Any = "relu"  # position-wise feed-forward variant: a registered name or {name, args}
    tie_embeddings: bool = True  # one matrix for source, target embeddings and pre-softmax projection
    scale_embeddings: bool = True  # multiply embeddings by sqrt(d_model) (section 3.4)
    max_positions: int = 1024  # longest sequence the positional encoding supports


@dataclass
class DataConfig:
    corpus: str = "builtin"  # registered corpus: builtin | textfiles | multi30k | wmt14_en_de
    root: str | None = None  # local directory with the corpus's raw files (skips any download)
    args: dict[str, Any] = field(default_factory=dict)  # corpus options (each corpus declares its own)
    src_lang: str = "en"  # source language code
    tgt_lang: str = "de"  # target language code
    vocab_size: int = 37000  # shared source-target SentencePiece BPE vocabulary size
    tokenizer_sample: int = 2_000_000  # at most this many sentences (both sides) train the tokenizer
    max_len: int = 256  # train pairs over this many subwords on a side are dropped (a language model keeps all)
    max_train_pairs: int | None = None  # train on the first N pairs only (None: all); dev/test stay whole
    max_tokens: int = 4096  # tokens per batch per device on each side, padding included
    bucket_ratio: float = 0.0  # pad training lengths up a ladder this far apart (1.1: ~10%; few shapes); 0 = off
    batch_multiple: int = 1  # full training batches hold a multiple of this many pairs (8: tensor-core sizes)
    valid_split: str = "valid"  # split used as the dev set (val/* metrics)
    test_split: str = "test"  # split used as the test set (test/* metrics)
    cache_dir: str | None = None  # prepared-data cache (default $ABLATE_CACHE or ~/.cache/ablate)
    num_workers: int = 0  # DataLoader worker processes
    block_size: int = 512  # model.arch decoder: tokens per training block (L: the target side as one stream)
    eos_id: int | None = None  # data.corpus shards: the document separator id (50256: GPT-2); None: the manifest's


@dataclass
class TrainConfig:
    seed: int = 1  # seed for weights, dropout and batch order
    label_smoothing: float = 0.1  # epsilon_ls of the label-smoothed cross-entropy
    lr_factor: float = 1.0  # noam's multiplier of d_model^-0.5 * min(step^-0.5, step*warmup^-1.5)
    warmup_steps: int = 4000  # steps of linear learning-rate warm-up
    adam_beta1: float = 0.9  # Adam beta_1
    adam_beta2: float = 0.98  # Adam beta_2
    adam_eps: float = 1.0e-9  # Adam epsilon
    weight_decay: float = 0.0  # decoupled weight decay (the paper uses none)
    optimizer: Any = "adam"  # a registered optimizer or {name, args} (`ablate variants`); adam: the paper's
    schedule: Any = "noam"  # a registered learning-rate schedule or {name, args}; noam: the paper's equation 3
    lr: float | None = None  # peak learning rate of every schedule but noam (whose peak comes from lr_factor)
    grad_clip: float = 0.0  # clip gradient norm to this value (0 = off; the paper does not clip)
    max_steps: int = 100_000  # optimizer steps to train (paper: 100K base, 300K big)
    epochs: float | None = None  # the budget in passes over the train pairs used: sets max_steps once data is prepared
    target_tokens: float | None = None  # the budget in real target tokens seen (alternative to epochs): sets max_steps
    max_epochs: int | None = None  # stop after this many epochs if reached before max_steps
    max_time_minutes: float | None = None  # stop cleanly after this much wall-clock time
    accumulate_grad_batches: int = 1  # batches per optimizer step (reach ~25k tokens on fewer devices)
    global_tokens: int | None = (
        None  # tokens a side per optimizer step; set, ablate picks max_tokens and accumulation (config/batch_split.py)
    )
    val_every_steps: int = 1000  # run validation (dev NLL / PPL) every this many optimizer steps
    log_every_steps: int = 50  # log training metrics every this many optimizer steps
    checkpoint_every_steps: int = 0  # also write checkpoints/last.ckpt every this many steps (0 = at validations only)
    compile: bool = False  # torch.compile the training forward (dynamic shapes); checkpoints load without it
    cuda_graphs: bool = False  # on CUDA: replay the training step as one CUDA graph per batch shape (needs bucketing)


@dataclass
class TrainerConfig:
    accelerator: str = "auto"  # cpu | gpu | auto
    devices: Any = 1  # devices per node: an int, a list of ids or "auto"
    strategy: str = "auto"  # Lightning strategy (auto | ddp | ddp_spawn | ...)
    num_nodes: int = 1  # nodes (SLURM multi-node DDP)
    precision: str | None = None  # None: bf16-mixed on GPU, 32-true on CPU (bf16 is ~400x slower on CPU)
    deterministic: bool = False  # ask torch for deterministic kernels


@dataclass
class EvalConfig:
    beam_size: int = 4  # beam width (1 = greedy)
    length_penalty: float = 0.6  # alpha of the GNMT length penalty ((5 + len) / 6)^alpha
    max_len_a: float = 1.0  # decode at most max_len_a * source length + max_len_b tokens
    max_len_b: int = 50  # see max_len_a (the paper: source length + 50)
    batch_size: int = 64  # sentences per decoding batch
    bleu_every: int = 0  # dev BLEU every this many validations (0 = only at the end of training)
    bleu_max_sentences: int | None = None  # decode at most this many dev sentences during training
    tokenized_bleu: bool = False  # also report paper-style tokenized BLEU with compound splitting
    test: bool = True  # evaluate the test split at the end of training
    lengths: list[int] | None = None  # model.arch decoder: context lengths of the final evaluation (None: block_size)


@dataclass
class LoggingConfig:
    project: str = "ablate"  # W&B project
    entity: str | None = None  # W&B entity (team or user); None = the API key's default
    group: str | None = None  # W&B group (a sweep sets it to the sweep name)
    name: str | None = None  # run name (a sweep sets it to the row name)
    tags: list[str] = field(default_factory=list)  # W&B tags (a sweep adds the row's group)
    job_type: str | None = None  # W&B job type (a search sweep: search, or final for a best config's re-runs)
    wandb: str = "auto"  # auto (online if WANDB_API_KEY is set, else offline) | online | offline | disabled
    output_dir: str = "runs"  # parent directory of run directories
    progress_bar: bool = True  # show a progress bar during training


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)


SECTIONS = ("model", "data", "train", "trainer", "eval", "logging")
MODEL_FIELDS = frozenset(f.name for f in fields(ModelConfig))
SLOT_FIELDS = ("attention", "ffn", "norm", "positional", "residual")  # model fields that name a registered variant
# Keys added after trial ids were first stored, with their defaults: at the default they are left out
# of the hash (hash_view), so a sweep that does not set them keeps its trial ids, runs and W&B runs.
ADDED_LATER: dict[str, Any] = {
    "model.arch": "encdec",
    "data.block_size": 512,
    "data.eos_id": None,
    "eval.lengths": None,
    "data.max_train_pairs": None,
    "data.bucket_ratio": 0.0,
    "data.batch_multiple": 1,
    "train.compile": False,
    "train.cuda_graphs": False,
    "train.global_tokens": None,
    "train.epochs": None,
    "train.target_tokens": None,
    "train.optimizer": "adam",
    "train.schedule": "noam",
    "train.lr": None,
}
# Set, train.global_tokens is the batch; these keys are how a device runs it (ablate's choice), not identity.
SPLIT_KEYS = ("data.max_tokens", "train.accumulate_grad_batches", "trainer.devices")
# train.seed (and a sweep file's seeds): what numpy and torch take as a seed, an unsigned 32-bit integer
SEED_MAX = 2**32 - 1
BUDGET_KEYS = ("train.epochs", "train.target_tokens")  # at most one; set, it decides train.max_steps (data/budget.py)
OPEN_DICTS = ("data.args",)  # free-form mappings: their keys are checked against the corpus's options


def upgrade_layer(mapping: Any, source: str) -> Any:
    """A config layer with replaced keys rewritten: ``model.norm_placement: pre`` -> ``model.residual: pre``.

    Old experiment files, sweep rows, stored configs and checkpoints keep loading. Returns ``mapping``
    itself when there is nothing to rewrite; raises ConfigError for a value the old key never took.
    """
    model = mapping.get("model") if isinstance(mapping, Mapping) else None
    if not isinstance(model, Mapping) or "norm_placement" not in model:
        return mapping
    model = dict(model)
    value = model.pop("norm_placement")
    if value not in ("post", "pre"):
        what = f"must be 'post' or 'pre', got {value!r} (its new name, model.residual, takes more)"
        raise ConfigError(f"{source}: model.norm_placement: {what}")
    if "residual" in model and model["residual"] != value:
        raise ConfigError(f"{source}: model.norm_placement: set model.residual only (norm_placement is its old name)")
    return {**mapping, "model": {**model, "residual": value}}


def hash_view(data: dict[str, Any]) -> dict[str, Any]:
    """A plain config as it is hashed into trial ids, W&B run ids and config hashes.

    The inverse of :func:`upgrade_layer` for the values the old key took: ``model.residual: post|pre``
    hashes as ``model.norm_placement``, so trials and runs stored before the rename keep their ids
    (a finished sweep stays finished; a run resumes into its W&B run). Old configs are upgraded first.
    """
    data = upgrade_layer(data, "stored config")
    for key, default in ADDED_LATER.items():  # hashed only when set: the ids from before they existed hold
        section, name = key.split(".")
        node = data.get(section)
        if isinstance(node, Mapping) and name in node and node[name] == default:
            data = {**data, section: {k: v for k, v in node.items() if k != name}}
    data = _without_split(data)
    model = data.get("model")
    if isinstance(model, Mapping) and model.get("residual") in ("post", "pre"):
        model = dict(model)
        model["norm_placement"] = model.pop("residual")
        data = {**data, "model": model}
    return data


def _without_split(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the keys of its batch split when ``train.global_tokens`` states the batch: the same
    global batch on one device or on four, in one batch or four accumulated, is the same experiment."""
    train = data.get("train")
    if not isinstance(train, Mapping) or train.get("global_tokens") is None:
        return data
    out = dict(data)
    for key in SPLIT_KEYS:
        section, name = key.split(".")
        if isinstance(out.get(section), Mapping):
            out[section] = {k: v for k, v in out[section].items() if k != name}
    return out


def enc_dec_layers(model_cfg: Any) -> tuple[int, int]:
    """(encoder layers, decoder layers) after n_enc_layers / n_dec_layers overrides, as the model's family
    (``model.arch``, ablate/family.py) arranges them: a language model has no encoder and one stack of n_layers."""
    from ablate.family import family_of

    return family_of(model_cfg).layers(model_cfg)


def head_dims(model_cfg: Any) -> tuple[int, int]:
    """(d_k, d_v) after defaulting to d_model / n_heads."""
    default = model_cfg.d_model // model_cfg.n_heads
    return (model_cfg.d_k or default, model_cfg.d_v or default)


def positions_needed(max_len: int, max_len_a: float, max_len_b: int) -> tuple[int, int]:
    """(training, decoding) positions a sequence may reach, for sources of at most ``max_len`` subwords.

    Training: a source is its subwords + EOS and a target input is BOS + subwords, so max_len + 1.
    Decoding (ablate/eval/decode.py): at most floor(a * source length + b) generated tokens, the
    source length counting its EOS; the decoder reads BOS + all but the last, so that many positions.
    """
    return max_len + 1, int(max_len_a * (max_len + 1) + max_len_b)
