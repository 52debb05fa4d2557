"""Checking a composed config once, when it is loaded: values, variant names and slot args, corpus
options, and the limits that span sections (positions vs. sentence and translation lengths).

Types and unknown keys are checked while the layers merge (ablate/config/load.py). Every error is one line
``<layer>: <key>: <what is wrong and what to do>`` where ``<layer>`` is the file or override that set
the key (:class:`Origins`). Names are checked against the registries of the section that uses them:
corpora through ablate/data/catalog.py, model variants through ablate/config/size.py (neither imports
torch: ablate/config/variants.py reads the built-in variants' names, args and closed forms from
the source of ablate/model/).
Launchers are the sweep file's business, not the config's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablate.config.schema import BUDGET_KEYS, SEED_MAX, SLOT_FIELDS, ModelConfig
from ablate.errors import ConfigError

DEFAULTS = "defaults"
PRECISIONS = (None, "32-true", "32", "bf16-mixed", "16-mixed", "bf16-true", "64-true")


def _paths(mapping: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in mapping.items():
        if isinstance(value, Mapping) and value:
            yield from _paths(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def _touches(path: str, key: str) -> bool:
    return path == key or path.startswith(key + ".") or key.startswith(path + ".")


class Origins:
    """Which layer (file, sweep row, command line) last set each key, for error messages."""

    def __init__(self, layers: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self._layers = [(label, tuple(_paths(mapping))) for label, mapping in layers]

    def of(self, *keys: str) -> str:
        """The layers that set ``keys`` (the last one per key), in layer order; "defaults" if none did."""
        found: set[int] = set()
        for key in keys:
            for i in range(len(self._layers) - 1, -1, -1):
                if any(_touches(p, key) for p in self._layers[i][1]):
                    found.add(i)
                    break
        return " + ".join(self._layers[i][0] for i in sorted(found)) or DEFAULTS

    def index(self, key: str) -> int:
        """The position of the last layer that set ``key`` (-1: the defaults)."""
        return next((i for i in range(len(self._layers) - 1, -1, -1) if key in self._layers[i][1]), -1)


class _Fixed(Origins):
    def __init__(self, label: str) -> None:
        self.label = label

    def of(self, *keys: str) -> str:
        return self.label

    def index(self, key: str) -> int:
        return -1


class _Section(dict):
    """A plain config section read as ``m.d_model``: the checks below read like the schema."""

    def __getattr__(self, key: str) -> Any:
        return self[key]


class _Checker:
    """The checks read a plain, resolved config (:func:`ablate.config.load.to_dict`'s shape): a sweep
    composes each row's config as plain sections, and OmegaConf's ``select`` cost 2 ms of a row's 2.5."""

    def __init__(self, cfg: Mapping[str, Any], origins: Origins) -> None:
        self.cfg, self.origins = _Section({k: _Section(v) for k, v in cfg.items()}), origins

    def get(self, key: str) -> Any:
        section, _, name = key.partition(".")
        return self.cfg[section].get(name)

    def fail(self, key: str, what: str, *related: str) -> None:
        raise ConfigError(f"{self.origins.of(key, *related)}: {key}: {what}")

    def positive(self, *keys: str, optional: bool = False) -> None:
        for key in keys:
            value = self.get(key)
            if value is None and optional:
                continue
            if value is None or not value > 0:  # NaN too
                self.fail(key, f"must be a positive number, got {value}")

    def at_least_zero(self, *keys: str) -> None:
        for key in keys:
            value = self.get(key)
            if value < 0 or math.isnan(value):
                self.fail(key, f"must be >= 0, got {value}")

    def fraction(self, *keys: str) -> None:
        for key in keys:
            if not 0.0 <= self.get(key) < 1.0:
                self.fail(key, f"must be in [0, 1), got {self.get(key)}")

    def one_of(self, key: str, choices: Sequence[Any]) -> None:
        if self.get(key) not in choices:
            shown = [repr(c) for c in choices if c is not None]
            self.fail(key, f"must be {', '.join(shown[:-1])} or {shown[-1]}, got {self.get(key)!r}")


def validate_config(cfg: DictConfig | Mapping[str, Any], origins: Origins | str = "config") -> None:
    """Reject impossible values with one line naming the key and the layer that set it.

    ``cfg``: a composed config, or the plain resolved dict of one."""
    origins = _Fixed(origins) if isinstance(origins, str) else origins
    plain = _resolved(cfg, origins) if isinstance(cfg, DictConfig) else cfg
    c = _Checker(plain, origins)  # type: ignore[arg-type]
    _check_model(c)
    _check_data(c)
    _check_train(c)
    _check_trainer_eval_logging(c)
    _check_lengths(c)
    _check_corpus(c)
    _check_variants(c)


def _resolved(cfg: DictConfig, origins: Origins) -> dict[str, Any]:
    """The plain config with its interpolations resolved; one that cannot be (``${model.d_model}`` given
    for a list, a key that does not exist) is one line naming the key and the layer that set it."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        msg = str(getattr(exc, "msg", exc)).splitlines()[0]
    for section in cfg:
        for key in cfg[section]:
            try:
                value = OmegaConf.select(cfg, f"{section}.{key}")  # resolved against the whole config
                if OmegaConf.is_config(value):
                    OmegaConf.to_container(value, resolve=True)
            except OmegaConfBaseException:
                raise ConfigError(f"{origins.of(f'{section}.{key}')}: {section}.{key}: {msg}") from None
    raise ConfigError(f"config: cannot resolve an interpolation: {msg}")


def _check_model(c: _Checker) -> None:
    c.positive(*(f"model.{k}" for k in ("n_layers", "d_model", "d_ff", "n_heads", "max_positions")))
    c.positive(*(f"model.{k}" for k in ("n_enc_layers", "n_dec_layers", "d_k", "d_v")), optional=True)
    m = c.cfg.model
    if (m.d_k is None or m.d_v is None) and m.d_model % m.n_heads != 0:
        what = f"d_model={m.d_model} is not divisible by n_heads={m.n_heads}; set model.d_k and model.d_v explicitly"
        c.fail("model.d_k", what, "model.d_model", "model.n_heads")
    c.fraction("model.dropout", "model.attention_dropout")
    _check_arch(c)


def _check_arch(c: _Checker) -> None:
    """model.arch names a registered family (ablate/family.py); a knob that means nothing for it is an
    error, not silently ignored (the family says which)."""
    from ablate.family import FAMILIES

    arch = c.get("model.arch")
    if arch not in FAMILIES:
        c.fail("model.arch", f"must be one of {', '.join(FAMILIES.names())}, got {arch!r}")
    FAMILIES.get(arch).check(c)


def _check_data(c: _Checker) -> None:
    c.positive(*(f"data.{k}" for k in ("vocab_size", "tokenizer_sample", "max_len", "max_tokens")))
    c.positive("data.max_train_pairs", optional=True)
    d = c.cfg.data
    if d.vocab_size < 8:
        c.fail("data.vocab_size", f"must be at least 8 (4 special tokens + text), got {d.vocab_size}")
    if d.max_tokens < d.max_len + 2:
        what = f"{d.max_tokens} cannot hold one pair of max_len={d.max_len} (+BOS/EOS)"
        c.fail("data.max_tokens", what, "data.max_len")
    c.at_least_zero("data.num_workers", "data.bucket_ratio")
    c.positive("data.batch_multiple")
    if 0 < d.bucket_ratio <= 1:
        c.fail("data.bucket_ratio", f"must be 0 (off) or above 1 (1.1: rungs ~10% apart), got {d.bucket_ratio}")
    tokens = c.get("train.global_tokens")
    if tokens is not None and tokens > 0 and tokens < d.max_len + 2:
        what = f"{tokens} cannot hold one pair of max_len={d.max_len} (+BOS/EOS)"
        c.fail("train.global_tokens", what, "data.max_len")
    if c.get("train.cuda_graphs") and not (d.bucket_ratio > 1 and d.batch_multiple > 1):
        what = (
            "captures one graph per batch shape and needs few of them: set data.bucket_ratio=1.1 data.batch_multiple=8"
        )
        c.fail("train.cuda_graphs", what)


def _check_train(c: _Checker) -> None:
    seed = c.get("train.seed")
    if not 0 <= seed <= SEED_MAX:  # numpy and torch refuse any other seed, after the run has started
        c.fail("train.seed", f"must be in 0..{SEED_MAX:,} (numpy and torch take 32-bit unsigned seeds), got {seed}")
    c.fraction("train.label_smoothing", "train.adam_beta1", "train.adam_beta2")
    keys = ("lr_factor", "warmup_steps", "max_steps", "accumulate_grad_batches", "val_every_steps", "log_every_steps")
    c.positive(*(f"train.{k}" for k in keys))
    c.positive("train.max_epochs", "train.max_time_minutes", "train.global_tokens", optional=True)
    _check_budget(c)
    c.positive("train.adam_eps")
    c.at_least_zero("train.weight_decay", "train.grad_clip", "train.checkpoint_every_steps")
    from ablate.recipe.check import check_recipe  # torch-free: the optimizer and schedule registries

    check_recipe(c)  # train.optimizer, train.schedule and the train keys they read


def _check_budget(c: _Checker) -> None:
    """train.epochs or train.target_tokens (at most one) replace max_steps once the data is prepared."""
    c.positive(*BUDGET_KEYS, optional=True)
    epochs, tokens = (c.get(k) for k in BUDGET_KEYS)
    for key, value in zip(BUDGET_KEYS, (epochs, tokens)):
        if value is not None and math.isinf(value):
            c.fail(key, "must be a finite number (or null: train.max_steps decides)")
    if epochs is not None and tokens is not None:
        c.fail("train.target_tokens", "set one budget: train.epochs or train.target_tokens, not both", "train.epochs")
    key = BUDGET_KEYS[0] if epochs is not None else BUDGET_KEYS[1]
    if (epochs is not None or tokens is not None) and c.origins.index("train.max_steps") >= c.origins.index(key) >= 0:
        what = (
            f"{c.get('train.max_steps')} would be ignored: {key}={c.get(key)} decides the steps; "
            f"set {key} here instead (or {key}=null to count in steps)"
        )
        c.fail("train.max_steps", what)


def _check_trainer_eval_logging(c: _Checker) -> None:
    c.one_of("trainer.precision", PRECISIONS)
    c.positive("trainer.num_nodes", "eval.beam_size", "eval.batch_size")
    c.at_least_zero("eval.length_penalty", "eval.max_len_a", "eval.max_len_b", "eval.bleu_every")
    c.positive("eval.bleu_max_sentences", optional=True)
    c.one_of("logging.wandb", ("auto", "online", "offline", "disabled"))


def _check_lengths(c: _Checker) -> None:
    """model.max_positions covers every sequence the data (and, for a translator, the decoder) may produce:
    the family (ablate/family.py) knows what its sequences are."""
    from ablate.family import family_of

    family_of(c.cfg.model).check_lengths(c)


def _check_corpus(c: _Checker) -> None:
    from ablate.data.catalog import check_corpus
    from ablate.data.registry import OptionError
    from ablate.registry import RegistryError

    d = c.cfg.data
    args = dict(d.args) if d.args is not None else {}
    try:
        check_corpus(str(d.corpus), args, {"data.valid_split": d.valid_split, "data.test_split": d.test_split})
    except RegistryError as exc:
        c.fail("data.corpus", str(exc))
    except OptionError as exc:
        where = c.origins.of(exc.key)
        if where == DEFAULTS:  # a missing option or split: the layers that chose the corpus and its args
            where = c.origins.of(exc.key, "data.corpus", "data.args")
        raise ConfigError(f"{where}: {exc}") from None


def _check_variants(c: _Checker) -> None:
    from ablate.config.size import check_slot, model_slots
    from ablate.registry import RegistryError

    for kind in SLOT_FIELDS:
        try:
            check_slot(kind, c.cfg.model[kind])
        except RegistryError as exc:
            c.fail(f"model.{kind}", str(exc))
    try:  # the closed forms refuse impossible combinations (e.g. gqa's n_kv_heads not dividing n_heads)
        for slot in model_slots(ModelConfig(**c.cfg.model)).values():  # its one shape
            slot.num_params()
    except ValueError as exc:
        c.fail("model", str(exc), *(f"model.{kind}" for kind in SLOT_FIELDS))
