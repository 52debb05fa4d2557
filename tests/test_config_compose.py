"""A sweep's configs composed onto one loaded experiment (ablate/config/compose.py) are exactly the full
load's: the same configs and trial ids on every sweep file, the same result or the same one-line error
on generated rows (valid values, wrong types, strings for numbers, nulls, impossible values, keys that
two layers set, unknown keys, interpolations)."""

from __future__ import annotations

import dataclasses
import random
import typing
from pathlib import Path
from typing import Any

import pytest

from ablate.config import ConfigError, load_config, to_dict
from ablate.config.compose import Experiment
from ablate.config.load import parse_layers
from ablate.config.schema import Config
from ablate.sweep.file.spec import expand, read_sweep_file

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = sorted((ROOT / "sweeps").glob("*.yaml"))


def _full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every config through load_config: the fast path declines."""
    monkeypatch.setattr(Experiment, "_merged", lambda self, parsed: None)


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_every_sweep_file_expands_to_the_full_loads_trials(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sf = read_sweep_file(path)
    fast_calls: list[bool] = []
    merged = Experiment._merged

    def counted(self: Experiment, parsed: Any) -> Any:
        out = merged(self, parsed)
        fast_calls.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(Experiment, "_merged", counted)
        fast = expand(sf, ["eval.beam_size=2"])
    assert any(fast_calls), "the fast path was never taken"
    with monkeypatch.context() as m:
        _full(m)
        full = expand(sf, ["eval.beam_size=2"])
    assert [t.trial_id for t in fast.trials] == [t.trial_id for t in full.trials]
    assert [t.config for t in fast.trials] == [t.config for t in full.trials]
    assert [t.config for t in fast.templates] == [t.config for t in full.templates]


def _fields() -> list[tuple[str, Any]]:
    """(dotted key, default) of every schema field that holds one value."""
    out = []
    for name, section in typing.get_type_hints(Config).items():
        for f in dataclasses.fields(section):
            default = f.default if f.default is not dataclasses.MISSING else None
            if not isinstance(default, (dict, list)):
                out.append((f"{name}.{f.name}", default))
    return out


def _value(rng: random.Random, default: Any) -> Any:
    """Most often a plausible value of the field's type, else anything."""
    plausible: list[Any] = []
    if isinstance(default, bool):
        plausible = [not default, default, "true"]
    elif isinstance(default, (int, float)):
        plausible = [default, default * 2, str(default), float(default)]
    elif isinstance(default, str):
        gqa = {"name": "gqa", "args": {"n_kv_heads": 2}}
        plausible = [default, default + "x", "rmsnorm", "swiglu", "pre", "rope", gqa]
    junk: list[Any] = [None, "text", "${model.d_model}", -1, 0, 3, 0.5, 1e9, True, [1, 2], {"a": 1}]
    return rng.choice(plausible if plausible and rng.random() < 0.6 else junk)


def _layer(rng: random.Random, fields: list[tuple[str, Any]], n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, default in rng.sample(fields, n):
        section, name = key.split(".")
        out.setdefault(section, {})[name] = _value(rng, default)
    if rng.random() < 0.05:
        out.setdefault("model", {})["no_such_key"] = 1
    return out


def _outcome(thunk: Any) -> Any:
    try:
        return thunk()
    except ConfigError as exc:
        return ("error", str(exc))


SHARED = [
    {"train": {"max_steps": 50}},
    {"model": {"attention": {"name": "gqa", "args": {"n_kv_heads": 2}}, "norm": "rmsnorm"}, "data": {"max_len": 40}},
]


@pytest.mark.parametrize("shared_layer", SHARED, ids=["steps", "slots"])
def test_generated_rows_give_the_full_loads_config_or_error(shared_layer: dict[str, Any]) -> None:
    rng = random.Random(0)
    fields = _fields()
    experiment = ROOT / "experiments" / "mini.yaml"
    shared = [("sweep: overrides", shared_layer)]
    composed = Experiment(experiment, shared)
    outcomes = {"ok": 0, "error": 0, "fast": 0}
    for case in range(200):
        layers = [(f"row {case}", _layer(rng, fields, rng.randint(1, 3)))]
        if rng.random() < 0.5:
            layers.append(("command line", _layer(rng, fields, 1)))
        layers.append(("seeds", {"train": {"seed": rng.randint(1, 5)}}))
        outcomes["fast"] += composed._merged(parse_layers(layers)) is not None
        fast = _outcome(lambda layers=layers: composed.config(layers))
        full = _outcome(lambda layers=layers: to_dict(load_config(experiment, layers=[*shared, *layers])))
        assert fast == full, f"case {case}: {layers}"
        outcomes["error" if isinstance(full, tuple) else "ok"] += 1
    assert min(outcomes.values()) > 30, outcomes  # results, errors and the fast path all exercised


@pytest.mark.parametrize(
    "layers",
    [
        [("row", {"model": {"attention": {"name": "gqa"}}}), ("command line", ["model.attention.args.n_kv_heads=2"])],
        [
            ("row", {"model": {"attention": {"args": {"n_kv_heads": 2}}}}),
            ("command line", ["model.attention.name=gqa"]),
        ],
        [("row", {"trainer": {"devices": {"a": 1}}}), ("command line", {"trainer": {"devices": {"b": 2}}})],
        [("row", {"model": {"norm": "rmsnorm"}}), ("command line", {"model": {"norm": {"name": "layernorm"}}})],
    ],
    ids=["slot-name-then-args", "slot-args-then-name", "any-field-mappings", "slot-name-then-mapping"],
)
def test_one_field_set_by_two_layers_takes_the_full_load(layers: list[Any]) -> None:
    # A mapping given for a field that held a name makes a new node in struct mode: a later layer's other
    # key inside it is refused by the full load, so the two may not be merged first (found in review)
    experiment = ROOT / "experiments" / "mini.yaml"
    assert Experiment(experiment)._merged(parse_layers(layers)) is None
    fast = _outcome(lambda: Experiment(experiment).config(layers))
    assert fast == _outcome(lambda: to_dict(load_config(experiment, layers=layers)))
