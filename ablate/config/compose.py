"""Many configs from one experiment: a sweep's rows, each composed without a full load.

:func:`ablate.config.load.load_config` composes defaults <- experiment file <- layers and checks the
result. A sweep needs one config per row, and that full load (an OmegaConf merge of the whole config,
each layer wrapped in a DictConfig) cost ~9 ms a row: 250 ms of every ``ablate status``, ``table`` and
dry run of the 20-row mini sweep on a 2-core machine, more than the commands' whole budget left.

:class:`Experiment` loads the experiment file and the sweep-wide layers once. A row's own layers (the
row, the command line, its seed, its W&B names) set disjoint keys in the common case; they are then
merged as plain dicts into one layer, and only the sections they touch go through OmegaConf (types,
conversions and unknown keys exactly as in the full load); the checks run on the plain result. Whatever
this path cannot prove to be the full load's result (an interpolation, two layers setting one key, a
wrong type, an unknown key, a sweep-wide layer that does not merge) is composed by ``load_config``
itself, so results and error messages are the same either way (a test compares both paths on every
sweep file and on generated rows). A section whose new values OmegaConf would store unchanged (an int in
an int field, a string in a string field) skips OmegaConf altogether.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablate.config.check import Origins, validate_config
from ablate.config.load import (
    Layer,
    check_keys,
    corpus_named,
    file_layers,
    fresh_corpus_args,
    load_config,
    merge_all,
    parse_layers,
    to_dict,
    with_files,
)
from ablate.config.schema import Config
from ablate.errors import ConfigError


class Experiment:
    """An experiment file (or the defaults, ``path=None``) with the layers every config of a sweep shares.

    ``config(layers)`` is ``to_dict(load_config(path, layers=[*shared, *layers]))``, composed faster.
    """

    def __init__(self, path: str | Path | None, shared: Sequence[Layer] = ()) -> None:
        self.path, self.shared = path, list(shared)
        files = parse_layers(file_layers(Path(path)) if path is not None else [])
        self.head = fresh_corpus_args(files + parse_layers(self.shared))  # a shared layer may change the corpus
        files = self.head[: len(files)]
        self.base: DictConfig | None = None  # None: every config takes the full load (which names the layer)
        if not _interpolates(self.head):
            try:
                self.base = merge_all(with_files(files), self.head[len(files) :])
            except (ConfigError, OmegaConfBaseException):
                pass
        self.plain = to_dict(self.base) if self.base is not None else {}
        self.known_shapes: set[Any] = set()  # key trees of layers whose keys passed check_keys
        self.sections: dict[str, Any] = {}  # the base's section nodes, looked up once (OmegaConf's get is slow)

    def config(self, layers: Sequence[Layer]) -> dict[str, Any]:
        """The checked, resolved config of the shared layers and then ``layers`` (later ones win)."""
        parsed = parse_layers(layers)
        plain = self._merged(parsed)
        if plain is None:
            return to_dict(load_config(self.path, layers=[*self.shared, *layers]))
        validate_config(plain, Origins([*self.head, *parsed]))
        return plain

    def _merged(self, parsed: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
        """The plain merge of ``parsed`` onto the base, or None where only the full load is sure."""
        if self.base is None or _interpolates(parsed) or _changes_corpus(parsed, self.plain):
            return None
        combined: dict[str, Any] = {}
        for _, mapping in parsed:
            if not _add_disjoint(combined, mapping):
                return None
        out: dict[str, Any] = {}
        try:
            for label, mapping in parsed:
                shape = _key_shape(mapping)
                if shape not in self.known_shapes:  # a grid's rows share their keys: checked once
                    check_keys(mapping, self.base, label)
                    self.known_shapes.add(shape)
            for section, value in combined.items():
                if section not in self.sections:
                    self.sections[section] = self.base[section]
                node = self.sections[section]
                if not isinstance(value, Mapping) or not isinstance(node, DictConfig):
                    return None
                if all(_exact(FIELD_TYPES[section].get(key), v) for key, v in value.items()):
                    out[section] = _own({**self.plain[section], **value})
                else:
                    out[section] = to_dict(OmegaConf.merge(node, value))
        except Exception:  # noqa: BLE001 - whatever fails here, the full load decides (and words the error)
            return None
        for section, value in self.plain.items():
            if section not in out:
                out[section] = _own(value)  # a trial's config is its own (its run dir is set in it)
        return {section: out[section] for section in self.plain}


def _key_shape(mapping: Mapping[str, Any]) -> Any:
    """A layer's keys as a hashable tree (its values left out): what :func:`check_keys` looks at."""
    return frozenset((str(k), _key_shape(v) if isinstance(v, Mapping) else None) for k, v in mapping.items())


def _own(value: Any) -> Any:
    """A copy of a plain config's dicts and lists (its leaves are immutable scalars): what
    ``copy.deepcopy`` gives here, without its memo and dispatch (a fifth of composing a grid's row went to deepcopy)."""
    if type(value) is dict:
        return {k: _own(v) for k, v in value.items()}
    if type(value) is list:
        return [_own(v) for v in value]
    return value


FIELD_TYPES = {name: typing.get_type_hints(cls) for name, cls in typing.get_type_hints(Config).items()}


def _exact(hint: Any, value: Any) -> bool:
    """Whether OmegaConf would store ``value`` unchanged in a field declared ``hint`` (an int in an int
    field, a str in a str field, a primitive in an ``Any`` field, a list of str in a ``list[str]`` one):
    then setting it on the plain section is the merge. Anything else (an int for a float, a null, a
    string for a number, a mapping) goes through OmegaConf, which converts or refuses it."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next((a for a in typing.get_args(hint) if a is not type(None)), None)
    if isinstance(value, str) and value == "???":  # OmegaConf's marker of a missing value
        return False
    if hint is Any:
        return type(value) in (int, float, str, bool)
    if hint in (int, float, str, bool):
        return type(value) is hint
    if typing.get_origin(hint) is list and typing.get_args(hint) == (str,) and isinstance(value, list):
        return all(type(v) is str and v != "???" for v in value)
    return False


def _add_disjoint(into: dict[str, Any], mapping: Mapping[str, Any]) -> bool:
    """Merge ``mapping`` (a layer: section -> field -> value) into ``into`` if it sets no field already set
    there: then the order of the layers cannot matter and one merge equals the full load's merges one
    by one. Two layers on one field, even on different keys inside it, take the full load: a mapping
    given for a field that held a name (a model slot: ``mha`` -> ``{name: gqa}``) makes a new node there,
    in struct mode, and a later layer's other key inside it is refused there."""
    for section, fields in mapping.items():
        if not isinstance(fields, Mapping) or not isinstance(into.setdefault(section, {}), dict):
            return False
        for key, value in fields.items():
            if key in into[section]:
                return False
            into[section][key] = value  # copied with its section below, or by OmegaConf's merge
    return True


def _changes_corpus(layers: Sequence[tuple[str, Any]], plain: Mapping[str, Any]) -> bool:
    """True if a layer names a corpus other than the experiment's: the full load starts its options afresh."""
    return any(corpus_named(mapping) not in (None, plain["data"]["corpus"]) for _, mapping in layers)


def _interpolates(layers: Sequence[tuple[str, Any]]) -> bool:
    """True if any value is an OmegaConf interpolation (``${...}``): it may point into another section."""

    def walk(value: Any) -> bool:
        if isinstance(value, str):
            return "${" in value
        if isinstance(value, Mapping):
            return any(walk(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return any(walk(v) for v in value)
        return False

    return any(walk(mapping) for _, mapping in layers)
