"""How a row's overrides read back as ``key=value`` items (the dry run, status and TrialView show them)."""

from __future__ import annotations

from ablate.config.schema import SLOT_FIELDS
from ablate.sweep.file.expand import dotlist


def test_every_slot_given_with_args_reads_back_as_one_item() -> None:
    layer = {"model": {slot: {"name": "x", "args": {"k": 1}} for slot in SLOT_FIELDS} | {"d_ff": 4}}
    items = dotlist(layer)
    assert "model.d_ff=4" in items
    for slot in SLOT_FIELDS:  # one item per slot, never split into model.<slot>.name / .args
        assert f'model.{slot}={{"name": "x", "args": {{"k": 1}}}}' in items
    assert len(items) == len(SLOT_FIELDS) + 1
