"""A trial's id names it in the store, its run folder and its W&B run: a change to ablate that moves the ids
of the sweep files it ships (a config key added without ``ADDED_LATER``, a new default) would make every
finished sweep start again. pinned_trial_ids.json holds each file's ids as they were before the language
model's keys (model.arch, data.block_size, eval.lengths) were added (a file shipped since: as it was first
shipped); they must not move."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.sweep.file.plugins import import_plugins
from ablate.sweep.file.spec import expand, read_sweep_file

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((Path(__file__).with_name("pinned_trial_ids.json")).read_text(encoding="utf-8"))


def test_every_sweep_file_is_pinned() -> None:
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "sweeps").glob("*.yaml")}
    assert shipped <= set(PINNED)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_trial_ids_of_a_shipped_sweep_file_do_not_move(name: str) -> None:
    sf = read_sweep_file(ROOT / name, imports=lambda modules, file: import_plugins(modules, file.parent, str(file)))
    sweep = expand(sf)
    assert [t.trial_id for t in sweep.trials + sweep.templates] == PINNED[name]
