"""A sweep policy in one file (examples/row_subset.py): its block of the sweep file, the trials it leaves,
its lines under `ablate status` and its note under `ablate table`, with nothing else in ablate knowing it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ablate.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "row_subset.py"
ROWS = [{"name": "base", "group": "base", "paper": "base"}] + [
    {"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 * (i + 3)}"]} for i in range(5)
]


def _sweep(write_sweep, tmp_path: Path, **keys) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "row_subset.py")  # beside the sweep file, as a user keeps a plugin
    return write_sweep(rows=ROWS, imports=["row_subset"], **keys)


def test_a_policy_in_one_file_owns_its_block_its_status_and_its_table_note(write_sweep, fake_trainer, tmp_path, capsys):
    path = _sweep(write_sweep, tmp_path, subset={"rows": 2, "seed": 0})
    assert main(["sweep", str(path), "--dry-run", "--json"]) == 0
    rows = [t["row"] for t in json.loads(capsys.readouterr().out)["trials"]]
    assert len(rows) == 3 and rows[0] == "base" and set(rows) < {r["name"] for r in ROWS}
    left_out = [r["name"] for r in ROWS if r["name"] not in rows]
    assert main(["sweep", str(path)]) == 0
    assert "3 new trial(s), 3 in the sweep" in capsys.readouterr().out
    assert main(["status", str(path)]) == 0
    assert f"subset: 3 row(s) drawn (seed 0); left out: {', '.join(left_out)}" in capsys.readouterr().out
    for fmt in ("text", "md", "json"):
        assert main(["table", str(path), "--format", fmt]) == 0
        assert f"rows drawn at random (subset:); not run: {', '.join(left_out)}" in capsys.readouterr().out
    sources = {p: p.read_text() for p in (ROOT / "ablate").rglob("*.py")}
    knowing = [p for p, text in sources.items() if "row_subset" in text or '"subset"' in text]
    assert knowing == []  # the package knows the policy through the sweep file's imports: only


def test_a_plugin_block_is_checked_like_the_files_own_keys(write_sweep, tmp_path, capsys):
    bad = _sweep(write_sweep, tmp_path, subset={"rows": 0})
    assert main(["sweep", str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "subset.rows must be an integer >= 1, got 0" in err
    typo = _sweep(write_sweep, tmp_path, subsett={"rows": 2})
    assert main(["sweep", str(typo), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "subsett" in err and "subset" in err.replace("subsett", "")
    assert not (tmp_path / ".ablate").exists()  # nothing stored
