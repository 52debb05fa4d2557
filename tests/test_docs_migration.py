"""The page for users coming from Hydra multirun and W&B Sweeps shows the ablation written for ablate as
a sweep file that works: copied beside the experiments as the page says, it dry-runs to the rows it
names (base, h=1, h=16) at three seeds."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ablate.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guides" / "from-hydra-and-wandb.md"


def test_the_pages_sweep_file_dry_runs(tmp_path: Path, capsys) -> None:
    block = re.search(r"```yaml\n(# sweeps/heads\.yaml.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert block, "the page's ablate block starts with its path, # sweeps/heads.yaml"
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments")
    sweep = tmp_path / "sweeps" / "heads.yaml"
    sweep.parent.mkdir()
    sweep.write_text(block.group(1), encoding="utf-8")
    assert main(["sweep", str(sweep), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "9 trials, 3 rows" in out
    assert all(re.search(rf"^{row}\s", out, re.M) for row in ("base", "h=1", "h=16"))
