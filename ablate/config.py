"""Structured configuration: dataclass schemas and the layered loader.

Layers, later ones win::

    dataclass defaults (the paper's base model, Vaswani et al. 2017, section 6.1 and Table 3 "base")
      <- experiment file (experiments/*.yaml, may `extends:` another file)
      <- sweep row overrides
      <- command-line dotlist (model.n_heads=4)

Every mistake (an unknown key, a wrong type, an impossible value, an unknown variant name) raises
:class:`ConfigError` whose message is one line naming the key and the file or override it came from.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablate.errors import AblateError


class ConfigError(AblateError, ValueError):
    """A configuration is invalid; the message is one line: what, where, what to do."""


# ----------------------------------------------------------------------------------------------
# Schemas. Defaults are the paper's base model and recipe. One comment per field (shown by
# `ablate config --help`-style listings and kept in the experiment files).
# ----------------------------------------------------------------------------------------------


@dataclass
class ModelConfig:
    n_layers: int = 6  # N: layers in the encoder and in the decoder
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
    norm_placement: str = "post"  # post: LayerNorm(x + Dropout(f(x))) as in the paper; pre: x + f(Norm(x))
    ffn: Any = "relu"  # position-wise feed-forward variant: a registered name or {name, args}
    tie_embeddings: bool = True  # one matrix for source, target embeddings and pre-softmax projection
    scale_embeddings: bool = True  # multiply embeddings by sqrt(d_model) (section 3.4)
    max_positions: int = 1024  # longest sequence the positional encoding supports


@dataclass
class DataConfig:
    corpus: str = "builtin"  # registered corpus: builtin | textfiles | multi30k | wmt14_en_de
    root: str | None = None  # local directory with the corpus's raw files (skips any download)
    args: dict[str, Any] = field(default_factory=dict)  # corpus-specific options (see `ablate variants`)
    src_lang: str = "en"  # source language code
    tgt_lang: str = "de"  # target language code
    vocab_size: int = 37000  # shared source-target SentencePiece BPE vocabulary size
    tokenizer_sample: int = 2_000_000  # at most this many sentences (both sides) train the tokenizer
    max_len: int = 256  # pairs longer than this many subwords on either side are dropped (and counted)
    max_tokens: int = 4096  # tokens per batch per device on each side, padding included
    valid_split: str = "valid"  # split used as the dev set (val/* metrics)
    test_split: str = "test"  # split used as the test set (test/* metrics)
    cache_dir: str | None = None  # prepared-data cache (default $ABLATE_CACHE or ~/.cache/ablate)
    num_workers: int = 0  # DataLoader worker processes


@dataclass
class TrainConfig:
    seed: int = 1  # seed for weights, dropout and batch order
    label_smoothing: float = 0.1  # epsilon_ls of the label-smoothed cross-entropy
    lr_factor: float = 1.0  # multiplier of the schedule d_model^-0.5 * min(step^-0.5, step*warmup^-1.5)
    warmup_steps: int = 4000  # steps of linear learning-rate warm-up
    adam_beta1: float = 0.9  # Adam beta_1
    adam_beta2: float = 0.98  # Adam beta_2
    adam_eps: float = 1.0e-9  # Adam epsilon
    weight_decay: float = 0.0  # decoupled weight decay (the paper uses none)
    grad_clip: float = 0.0  # clip gradient norm to this value (0 = off; the paper does not clip)
    max_steps: int = 100_000  # optimizer steps to train (paper: 100K base, 300K big)
    max_epochs: int | None = None  # stop after this many epochs if reached before max_steps
    max_time_minutes: float | None = None  # stop cleanly after this much wall-clock time
    accumulate_grad_batches: int = 1  # batches per optimizer step (reach ~25k tokens on fewer devices)
    val_every_steps: int = 1000  # run validation (dev NLL / PPL) every this many optimizer steps
    log_every_steps: int = 50  # log training metrics every this many optimizer steps
    checkpoint_every_steps: int = 0  # also write checkpoints/last.ckpt every this many steps (0 = at validations only)


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


@dataclass
class LoggingConfig:
    project: str = "ablate"  # W&B project
    entity: str | None = None  # W&B entity (team or user); None = the API key's default
    group: str | None = None  # W&B group (a sweep sets it to the sweep name)
    name: str | None = None  # run name (a sweep sets it to the row name)
    tags: list[str] = field(default_factory=list)  # W&B tags (a sweep adds the row's group)
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

# ----------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------

Layer = tuple[str, "Mapping[str, Any] | Sequence[str]"]


def default_config() -> DictConfig:
    """The schema with its defaults, in struct mode (unknown keys are errors)."""
    cfg = OmegaConf.structured(Config)
    OmegaConf.set_struct(cfg, True)
    for key in _OPEN_DICTS:  # free-form mappings (corpus options) accept any key
        OmegaConf.set_struct(OmegaConf.select(cfg, key), False)
    return cfg


_OPEN_DICTS = ("data.args",)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; missing files and syntax errors become one-line ConfigErrors."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: no such config file (check the path; experiments live in experiments/)")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark else str(p)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of sections (model:, data:, ...)")
    return data


def _file_layers(path: Path, seen: tuple[Path, ...] = ()) -> list[tuple[str, dict[str, Any]]]:
    """An experiment file and the files it `extends:`, oldest first."""
    path = path.resolve()
    if path in seen:
        raise ConfigError(f"{path}: `extends:` forms a cycle")
    data = read_yaml(path)
    parent = data.pop("extends", None)
    layers: list[tuple[str, dict[str, Any]]] = []
    if parent is not None:
        if not isinstance(parent, str):
            raise ConfigError(f"{path}: `extends:` must be a path to another experiment file")
        layers += _file_layers((path.parent / parent), (*seen, path))
    layers.append((str(path), data))
    return layers


def parse_dotlist(overrides: Iterable[str], source: str = "command line") -> dict[str, Any]:
    """``["model.n_heads=4", "data.corpus=multi30k"]`` -> a nested mapping (values parsed as YAML)."""
    out: dict[str, Any] = {}
    for item in overrides:
        if not isinstance(item, str) or "=" not in item:
            raise ConfigError(f"{source}: override {item!r} must look like section.key=value (e.g. model.n_heads=4)")
        key, _, raw = item.partition("=")
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise ConfigError(f"{source}: override {item!r} has an empty key")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{source}: override {item!r} conflicts with an earlier override")
        node[parts[-1]] = value
    return out


def load_config(
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    layers: Sequence[Layer] = (),
    validate: bool = True,
) -> DictConfig:
    """Compose defaults <- ``path`` (and what it extends) <- ``layers`` <- ``overrides``.

    ``layers`` are (source label, mapping or dotlist) pairs, e.g. a sweep row. The result is a
    struct-mode DictConfig whose values have been checked by :func:`validate_config`.
    """
    cfg = default_config()
    sources: list[tuple[str, Mapping[str, Any] | Sequence[str]]] = []
    if path is not None:
        sources += _file_layers(Path(path))
    sources += list(layers)
    if overrides:
        sources.append(("command line", list(overrides)))
    for label, layer in sources:
        mapping = parse_dotlist(layer, label) if not isinstance(layer, Mapping) else dict(layer)
        cfg = merge_layer(cfg, mapping, label)
    if validate:
        validate_config(cfg, source=_describe_sources(sources))
    return cfg


def merge_layer(cfg: DictConfig, mapping: Mapping[str, Any], source: str) -> DictConfig:
    """Merge one layer, turning OmegaConf's multi-line errors into one line naming key and source."""
    _check_keys(mapping, cfg, source)
    try:
        return OmegaConf.merge(cfg, mapping)  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "?"
        msg = str(getattr(exc, "msg", exc)).splitlines()[0]
        raise ConfigError(f"{source}: {key}: {msg}") from None


def _check_keys(mapping: Mapping[str, Any], schema: Any, source: str, prefix: str = "") -> None:
    """Unknown keys name the nearest valid key (OmegaConf's own message does not)."""
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if not isinstance(schema, DictConfig):
            return
        if prefix.rstrip(".") in _OPEN_DICTS:
            return
        if key not in schema:
            valid = [str(k) for k in schema.keys()]
            close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.5)
            hint = f"; did you mean {prefix}{close[0]}?" if close else f" (valid: {', '.join(valid)})"
            raise ConfigError(f"{source}: unknown key {full!r}{hint}")
        child = schema._get_node(key)  # noqa: SLF001 - the node keeps its schema type
        if isinstance(value, Mapping) and isinstance(child, DictConfig) and not _slot_field(prefix, key):
            _check_keys(value, child, source, f"{full}.")


_SLOT_FIELDS = {"positional", "attention", "norm", "ffn"}


def _slot_field(prefix: str, key: str) -> bool:
    return prefix == "model." and key in _SLOT_FIELDS


def _describe_sources(sources: Sequence[tuple[str, Any]]) -> str:
    labels = [label for label, _ in sources]
    return " + ".join(labels) if labels else "defaults"


# ----------------------------------------------------------------------------------------------
# Validation of values (types are checked by OmegaConf during the merge)
# ----------------------------------------------------------------------------------------------


def _fail(source: str, key: str, what: str) -> None:
    raise ConfigError(f"{source}: {key}: {what}")


def validate_config(cfg: DictConfig, source: str = "config", check_names: bool = True) -> None:
    """Reject impossible values with one line naming the key and where the config came from."""
    m, d, t, tr, e, lg = (cfg[s] for s in SECTIONS)

    def positive(sec: str, key: str, value: Any, allow_none: bool = False) -> None:
        if value is None and allow_none:
            return
        if value is None or value <= 0:
            _fail(source, f"{sec}.{key}", f"must be a positive number, got {value}")

    for key in ("n_layers", "d_model", "d_ff", "n_heads", "max_positions"):
        positive("model", key, m[key])
    for key in ("n_enc_layers", "n_dec_layers", "d_k", "d_v"):
        positive("model", key, m[key], allow_none=True)
    if (m.d_k is None or m.d_v is None) and m.d_model % m.n_heads != 0:
        _fail(
            source,
            "model.d_k",
            f"d_model={m.d_model} is not divisible by n_heads={m.n_heads}; set model.d_k and model.d_v explicitly",
        )
    for key in ("dropout", "attention_dropout"):
        if not 0.0 <= m[key] < 1.0:
            _fail(source, f"model.{key}", f"must be in [0, 1), got {m[key]}")
    if m.norm_placement not in ("post", "pre"):
        _fail(source, "model.norm_placement", f"must be 'post' or 'pre', got {m.norm_placement!r}")

    for key in ("vocab_size", "tokenizer_sample", "max_len", "max_tokens"):
        positive("data", key, d[key])
    if d.vocab_size < 8:
        _fail(source, "data.vocab_size", f"must be at least 8 (4 special tokens + text), got {d.vocab_size}")
    if d.max_tokens < d.max_len + 2:
        _fail(source, "data.max_tokens", f"{d.max_tokens} cannot hold one pair of max_len={d.max_len} (+BOS/EOS)")
    if d.num_workers < 0:
        _fail(source, "data.num_workers", f"must be >= 0, got {d.num_workers}")

    if not 0.0 <= t.label_smoothing < 1.0:
        _fail(source, "train.label_smoothing", f"must be in [0, 1), got {t.label_smoothing}")
    for key in ("lr_factor", "warmup_steps", "max_steps", "accumulate_grad_batches", "val_every_steps"):
        positive("train", key, t[key])
    positive("train", "log_every_steps", t.log_every_steps)
    positive("train", "max_epochs", t.max_epochs, allow_none=True)
    positive("train", "max_time_minutes", t.max_time_minutes, allow_none=True)
    for key in ("adam_beta1", "adam_beta2"):
        if not 0.0 <= t[key] < 1.0:
            _fail(source, f"train.{key}", f"must be in [0, 1), got {t[key]}")
    if t.adam_eps <= 0 or t.weight_decay < 0 or t.grad_clip < 0:
        bad = "adam_eps" if t.adam_eps <= 0 else ("weight_decay" if t.weight_decay < 0 else "grad_clip")
        _fail(source, f"train.{bad}", f"must be {'> 0' if bad == 'adam_eps' else '>= 0'}, got {t[bad]}")

    if tr.precision not in (None, "32-true", "32", "bf16-mixed", "16-mixed", "bf16-true", "64-true"):
        _fail(source, "trainer.precision", f"unknown precision {tr.precision!r} (32-true, bf16-mixed, 16-mixed)")
    positive("trainer", "num_nodes", tr.num_nodes)

    positive("eval", "beam_size", e.beam_size)
    positive("eval", "batch_size", e.batch_size)
    if e.length_penalty < 0 or math.isnan(e.length_penalty):
        _fail(source, "eval.length_penalty", f"must be >= 0, got {e.length_penalty}")
    if e.max_len_a < 0 or e.max_len_b < 0 or e.bleu_every < 0:
        _fail(source, "eval.max_len_b", "max_len_a, max_len_b and bleu_every must be >= 0")
    positive("eval", "bleu_max_sentences", e.bleu_max_sentences, allow_none=True)

    if lg.wandb not in ("auto", "online", "offline", "disabled"):
        _fail(source, "logging.wandb", f"must be auto, online, offline or disabled, got {lg.wandb!r}")

    if check_names:
        check_variant_names(cfg, source)


def check_variant_names(cfg: DictConfig, source: str = "config") -> None:
    """Every registered-slot name in the config exists (imports the registries on first use)."""
    from ablate.registry import RegistryError, all_registries, load_builtin_registries, parse_slot

    regs = load_builtin_registries() or all_registries()
    slots = [(f"model.{k}", k, cfg.model[k]) for k in sorted(_SLOT_FIELDS)]
    slots.append(("data.corpus", "corpus", cfg.data.corpus))
    for key, kind, spec in slots:
        reg = regs.get(kind)
        if reg is None:
            continue
        try:
            name, _ = parse_slot(OmegaConf.to_container(spec) if OmegaConf.is_config(spec) else spec, kind)
            reg.get(name)
        except RegistryError as exc:
            raise ConfigError(f"{source}: {key}: {exc}") from None


# ----------------------------------------------------------------------------------------------
# Helpers used by the rest of ablate
# ----------------------------------------------------------------------------------------------


def to_dict(cfg: DictConfig) -> dict[str, Any]:
    """A plain, resolved nested dict (for hashing, JSON and save_hyperparameters)."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def from_dict(data: Mapping[str, Any], source: str = "saved config") -> DictConfig:
    """Rebuild a validated config from :func:`to_dict` output (e.g. a run's config.yaml)."""
    return load_config(layers=[(source, data)])


def save_config(cfg: DictConfig, path: str | Path) -> None:
    Path(path).write_text(OmegaConf.to_yaml(cfg, resolve=True), encoding="utf-8")


def enc_dec_layers(model_cfg: Any) -> tuple[int, int]:
    """(encoder layers, decoder layers) after n_enc_layers / n_dec_layers overrides."""
    n = model_cfg.n_layers
    return (model_cfg.n_enc_layers or n, model_cfg.n_dec_layers or n)


def head_dims(model_cfg: Any) -> tuple[int, int]:
    """(d_k, d_v) after defaulting to d_model / n_heads."""
    default = model_cfg.d_model // model_cfg.n_heads
    return (model_cfg.d_k or default, model_cfg.d_v or default)
