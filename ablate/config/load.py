"""Configuration: one typed config, composed from layers and checked once, at the edge.

Layers, later ones win::

    dataclass defaults (the paper's base model, ablate/config/schema.py)
      <- experiment file (experiments/*.yaml, may `extends:` another file)
      <- sweep row overrides
      <- command-line dotlist (model.n_heads=4)

A layer that names another ``data.corpus`` starts ``data.args`` afresh (a corpus's options are its
own), and a path an experiment file names (``data.root``, ``data.cache_dir``, ``logging.output_dir``)
is read from that file's folder, not the current directory.

:func:`load_config` merges them (unknown keys and wrong types are caught per layer) and checks the
result once (ablate/config/check.py: values, variant names, corpus options, cross-section limits).
Every mistake raises :class:`ConfigError` whose message is one line naming the key and the file or
override it came from. After that nothing re-checks the config: builders (ablate/model/build.py,
ablate/data/prepare.py) only read it, and :func:`from_dict` rebuilds a config ablate itself stored.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablate.config.check import Origins, validate_config
from ablate.config.schema import (
    MODEL_FIELDS,
    OPEN_DICTS,
    SLOT_FIELDS,
    Config,
    ModelConfig,
    upgrade_layer,
)
from ablate.errors import ConfigError, did_you_mean
from ablate.stack_private import omegaconf_node

Layer = tuple[str, "Mapping[str, Any] | Sequence[str]"]


@functools.lru_cache(maxsize=1)
def _schema() -> DictConfig:
    cfg = OmegaConf.structured(Config)
    OmegaConf.set_struct(cfg, True)
    for key in OPEN_DICTS:  # free-form mappings (corpus options, checked by validate_config)
        OmegaConf.set_struct(OmegaConf.select(cfg, key), False)
    return cfg


def default_config() -> DictConfig:
    """The schema with its defaults, in struct mode (unknown keys are errors); a new copy each call.

    Built once and copied: a copy costs a fifth of ``OmegaConf.structured`` (a sweep of 20 rows
    builds 40 configs for ``ablate sweep --dry-run``).
    """
    return copy.deepcopy(_schema())


# libyaml's safe loader where PyYAML was built with it (its wheels are): a sweep file of 10,000 seeds
# parsed in 0.03 s against 0.24 s with the pure-Python one. The same safe types either way.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=32)
def _parse_yaml(text: str) -> Any:
    """Parsed once per text: a sweep reads its experiment file (and what it extends) once per trial."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; missing files and syntax errors become one-line ConfigErrors."""
    p = Path(path)
    if not p.is_file():  # one stat on the common path; a second only to say which mistake
        if p.is_dir():
            raise ConfigError(f"{p}: a folder, not a config file (name a .yaml file in it)")
        raise ConfigError(f"{p}: no such config file (check the path; experiments live in experiments/)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    except OSError as exc:  # no permission to read it, an I/O error
        raise ConfigError(f"{p}: cannot be read ({exc.strerror or exc}); check its permissions") from None
    try:
        data = copy.deepcopy(_parse_yaml(text))  # the caller may change it
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark else str(p)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of sections (model:, data:, ...)")
    return data


def file_layers(path: Path, seen: tuple[Path, ...] = ()) -> list[tuple[str, dict[str, Any]]]:
    """An experiment file and the files it `extends:`, oldest first; the paths each names made absolute
    from that file's folder (:func:`resolve_paths`)."""
    path = path.resolve()
    if path in seen:
        raise ConfigError(f"{path}: `extends:` forms a cycle")
    data = read_yaml(path)
    parent = data.pop("extends", None)
    layers: list[tuple[str, dict[str, Any]]] = []
    if parent is not None:
        if not isinstance(parent, str):
            raise ConfigError(f"{path}: `extends:` must be a path to another experiment file")
        layers += file_layers((path.parent / parent), (*seen, path))
    layers.append((str(path), resolve_paths(data, path.parent)))
    return layers


# The fields that hold a path. A file that names one means a path beside itself, as a sweep file's
# `experiment:` and `runs:` do: the same file then works from any current directory. A command-line
# override keeps the shell's meaning (the current directory).
PATH_FIELDS = (("data", "root"), ("data", "cache_dir"), ("logging", "output_dir"))


def resolve_paths(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``data`` (a file's mapping, changed in place) with each relative path of :data:`PATH_FIELDS`
    made absolute from ``folder``; ``~`` is the user's home, an interpolation (``${...}``) is left."""
    for section, key in PATH_FIELDS:
        block = data.get(section)
        value = block.get(key) if isinstance(block, dict) else None
        if isinstance(value, str) and value and "${" not in value:
            block[key] = str(folder / Path(value).expanduser())  # an absolute path stays as it is
    return data


def fresh_corpus_args(layers: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The layers, with ``data.args`` left out of every layer before one that changes ``data.corpus``.

    A corpus's options are its own (the builtin corpus's n_train means nothing to textfiles), so a layer
    that names another corpus starts its options afresh: an experiment that extends lm-mini.yaml and
    reads its own text gives only the textfiles options. A layer that names the corpus in effect keeps
    the options before it (a row that changes one option). Layers are copied where changed, never edited.
    """
    out = list(layers)
    corpus = _schema().data.corpus
    for i, (_, mapping) in enumerate(layers):
        named = corpus_named(mapping)
        if named is None or named == corpus:
            continue
        corpus = named
        out[:i] = [(label, _without_args(m)) for label, m in out[:i]]
    return out


def corpus_named(mapping: Mapping[str, Any]) -> str | None:
    """The ``data.corpus`` a layer names, or None where it names none."""
    data = mapping.get("data")
    corpus = data.get("corpus") if isinstance(data, Mapping) else None
    return corpus if isinstance(corpus, str) else None


def _without_args(mapping: dict[str, Any]) -> dict[str, Any]:
    data = mapping.get("data")
    if not isinstance(data, dict) or "args" not in data:
        return mapping
    return {**mapping, "data": {k: v for k, v in data.items() if k != "args"}}


def parse_dotlist(overrides: Iterable[str], source: str = "command line") -> dict[str, Any]:
    """``["model.n_heads=4", "data.corpus=multi30k"]`` -> a nested mapping, through OmegaConf's own
    ``from_dotlist`` (values parsed as YAML; a later item wins). Only the shape of each item is checked
    here, so that a malformed one gets one line naming where it came from."""
    items = list(overrides)
    for item in items:
        if not isinstance(item, str) or "=" not in item:
            raise ConfigError(f"{source}: override {item!r} must look like section.key=value (e.g. model.n_heads=4)")
        key = item.partition("=")[0].strip()
        if not key or any(not part for part in key.split(".")):
            raise ConfigError(f"{source}: override {item!r} has an empty key")
    try:
        return OmegaConf.to_container(OmegaConf.from_dotlist(items))  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{source}: overrides {items!r} cannot be read: {first}") from None


def load_config(
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    layers: Sequence[Layer] = (),
) -> DictConfig:
    """Compose defaults <- ``path`` (and what it extends) <- ``layers`` <- ``overrides``; check it once.

    ``layers`` are (source label, mapping or dotlist) pairs, e.g. a sweep row. The result is a
    struct-mode DictConfig; its ``model`` section is what ablate.model.build_model takes.
    """
    sources: list[Layer] = []
    if path is not None:
        sources += file_layers(Path(path))
    n_files = len(sources)
    sources += list(layers)
    if overrides:
        sources.append(("command line", list(overrides)))
    parsed = fresh_corpus_args(parse_layers(sources))
    cfg = merge_all(with_files(parsed[:n_files]), parsed[n_files:])
    validate_config(cfg, Origins(parsed))
    return cfg


def parse_layers(layers: Iterable[Layer]) -> list[tuple[str, dict[str, Any]]]:
    """Each (label, mapping or dotlist) layer as (label, mapping), with replaced key names upgraded."""
    parsed = [(label, dict(lay) if isinstance(lay, Mapping) else parse_dotlist(lay, label)) for label, lay in layers]
    return [(label, upgrade_layer(mapping, label)) for label, mapping in parsed]


_FILES_MERGED: dict[str, DictConfig] = {}  # repr of the file layers -> defaults <- those layers (shared)


def with_files(files: list[tuple[str, dict[str, Any]]]) -> DictConfig:
    """The defaults with the experiment file (and what it extends) merged in, once per content: a sweep
    loads one config per trial from the same files. Shared: merge into it (a merge copies), never set."""
    key = repr(files)
    if key not in _FILES_MERGED:
        if len(_FILES_MERGED) >= 8:
            _FILES_MERGED.clear()
        _FILES_MERGED[key] = merge_all(_schema(), files)
    return _FILES_MERGED[key]


def merge_all(cfg: DictConfig, layers: Sequence[tuple[str, Mapping[str, Any]]]) -> DictConfig:
    """A new config: ``cfg`` (left as it is) with every layer merged in order, in one merge (one copy),
    or, if any layer is wrong, one by one for the error of the first wrong layer."""
    try:
        for label, mapping in layers:
            check_keys(mapping, cfg, label)  # the schema's keys: the same before and after a merge
        return OmegaConf.merge(cfg, *(mapping for _, mapping in layers))  # type: ignore[return-value]
    except (ConfigError, OmegaConfBaseException, TypeError):
        pass
    for label, mapping in layers:
        cfg = merge_layer(cfg, mapping, label)
    return cfg


def merge_layer(cfg: DictConfig, mapping: Mapping[str, Any], source: str) -> DictConfig:
    """Merge one layer, turning OmegaConf's multi-line errors into one line naming key and source."""
    mapping = upgrade_layer(mapping, source)  # e.g. a stored config's model.norm_placement
    check_keys(mapping, cfg, source)
    try:
        return OmegaConf.merge(cfg, mapping)  # type: ignore[return-value]
    except (OmegaConfBaseException, TypeError) as exc:
        # A mapping, list or scalar where the schema holds another kind: OmegaConf says it without the key
        # ("int is not a subclass of ModelConfig", "AnyNode is not a ListConfig", or a bare TypeError)
        key, want = _container_mismatch(mapping, cfg)
        if key != "?" or isinstance(exc, TypeError):
            raise ConfigError(f"{source}: {key}: must be a {want} (see the schema's default)") from None
        key = getattr(exc, "full_key", None) or "?"
        msg = str(getattr(exc, "msg", None) or exc).splitlines()[0]
        raise ConfigError(f"{source}: {key}: {msg}") from None


def _container_mismatch(mapping: Mapping[str, Any], cfg: Any, prefix: str = "") -> tuple[str, str]:
    """(key, what the schema holds there) of the first mapping given for a list or list for a mapping."""
    for key, value in mapping.items():
        node = omegaconf_node(cfg, key) if isinstance(cfg, DictConfig) and key in cfg else None
        if isinstance(node, ListConfig) and not isinstance(value, (list, tuple)):
            return f"{prefix}{key}", "list"
        if isinstance(node, DictConfig) and value is not None and not isinstance(value, Mapping):
            return f"{prefix}{key}", "mapping"
        if isinstance(node, DictConfig) and isinstance(value, Mapping):
            found = _container_mismatch(value, node, f"{prefix}{key}.")
            if found[0] != "?":
                return found
    return "?", "value of another kind"


def check_keys(mapping: Mapping[str, Any], schema: Any, source: str, prefix: str = "") -> None:
    """Unknown keys name the nearest valid key (OmegaConf's own message does not)."""
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if not isinstance(schema, DictConfig):
            return
        if prefix.rstrip(".") in OPEN_DICTS:
            return
        if key not in schema:
            valid = [str(k) for k in schema.keys()]
            close = did_you_mean(key, valid)
            hint = f"; did you mean {prefix}{close}?" if close else f" (valid: {', '.join(valid)})"
            raise ConfigError(f"{source}: unknown key {full!r}{hint}")
        child = omegaconf_node(schema, key)  # the node keeps its schema type
        if isinstance(value, Mapping) and isinstance(child, DictConfig) and not _slot_field(prefix, key):
            check_keys(value, child, source, f"{full}.")


def _slot_field(prefix: str, key: str) -> bool:
    return prefix == "model." and key in SLOT_FIELDS


def to_dict(cfg: DictConfig) -> dict[str, Any]:
    """A plain, resolved nested dict (for hashing, JSON and save_hyperparameters)."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def from_dict(data: Mapping[str, Any], source: str = "saved config") -> DictConfig:
    """Rebuild a config ablate stored (:func:`to_dict` output, e.g. a run's config.yaml or a sweep trial).

    A structural merge into the schema (keys and types), not a second check: the values were checked
    when the config was loaded.
    """
    return merge_layer(default_config(), data, source)


def model_section(section: Any, source: str = "saved model section") -> ModelConfig:
    """The one shape a ``model`` section has past the loader: a frozen :class:`ModelConfig`.

    Takes a ModelConfig (returned as is), the ``model`` node of a loaded config (``cfg.model``), or a
    plain mapping ablate stored (a trial's config, a checkpoint's hyperparameters: :func:`to_dict` of a
    checked config), whose old key names are upgraded. A stored mapping was checked when it was loaded,
    so it is not checked again (a sweep's status reads one per trial): only its keys must be the
    schema's.
    """
    if isinstance(section, ModelConfig):
        return section
    if isinstance(section, DictConfig):
        section = OmegaConf.to_object(section)  # a ModelConfig when it is a loaded config's model node
        if isinstance(section, ModelConfig):
            return section
    if not isinstance(section, Mapping):
        raise TypeError(f"{source}: expected a model section (a mapping or cfg.model), got {type(section).__name__}")
    data = upgrade_layer({"model": dict(section)}, source)["model"]
    unknown = sorted(set(data) - MODEL_FIELDS)
    if unknown:
        raise ConfigError(f"{source}: unknown model key(s) {', '.join(map(repr, unknown))}")
    return ModelConfig(**data)


def save_config(cfg: DictConfig, path: str | Path) -> None:
    """Write the resolved config, atomically: every DDP rank writes a run's config.yaml while others may
    read it (a resumed run's batch split)."""
    from ablate.atomic import atomic_write_text

    atomic_write_text(path, OmegaConf.to_yaml(cfg, resolve=True))
