"""Every command block the docs mark runnable (``<!-- runnable -->`` before a ```bash fence) runs, in a
cheap form where the real one is long: a sweep as its dry run, a training as a few steps with a short
decode, files the commands write under a temporary folder. A block that trains or runs the model contract
(seconds of CPU each) is in the slow tier."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = "<!-- runnable -->"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# A training in a test: two steps, a two-token greedy decode, no test split at its end.
CHEAP_TRAIN = (
    "train.max_steps=2 train.val_every_steps=2 train.log_every_steps=1 eval.test=false eval.beam_size=1 "
    "eval.max_len_a=0 eval.max_len_b=2 logging.wandb=disabled logging.progress_bar=false"
).split()


def runnable_blocks() -> list[tuple[str, list[str]]]:
    """(page:line, the block's command lines) of every block marked runnable."""
    out = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != MARK:
                continue
            assert lines[i + 1].startswith("```bash"), f"{page.name}:{i + 1}: {MARK} must precede a ```bash block"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            out.append((f"{page.relative_to(ROOT)}:{i + 1}", _joined(lines[i + 2 : end])))
    return out


def _joined(lines: list[str]) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    commands, current = [], ""
    for line in lines:
        current += line.rstrip().removesuffix("\\")
        if line.rstrip().endswith("\\"):
            continue
        text = re.sub(r"\s+#.*$", "", current).strip()
        if text:
            commands.append(text)
        current = ""
    return commands


def cheap(command: str, tmp: Path) -> list[str]:
    """The command as the test runs it (see the module doc)."""
    words = shlex.split(command)
    assert words[0] == "ablate", f"a runnable block holds ablate commands only, not {command!r}"
    args, verb = words[1:], words[1]
    out: list[str] = []
    it = iter(args)
    for word in it:
        if word in ("--output", "--plot"):
            out += [word, str(tmp / next(it))]
        elif word.startswith("runs/"):
            out.append(str(tmp / word))
        elif word != "--detach":
            out.append(word)
    if verb == "sweep" and "--dry-run" not in out:
        out.append("--dry-run")
    if verb == "train":
        out[2:2] = CHEAP_TRAIN
    return [sys.executable, "-m", "ablate", *out]


BLOCKS = runnable_blocks()
SLOW = ("ablate train", "ablate check-variants")


def test_the_docs_mark_runnable_blocks() -> None:
    assert len(BLOCKS) >= 5 and all(commands for _, commands in BLOCKS)


@pytest.mark.parametrize(
    "where,commands",
    [pytest.param(w, c, marks=[pytest.mark.slow] if any(x.startswith(SLOW) for x in c) else []) for w, c in BLOCKS],
    ids=[w for w, _ in BLOCKS],
)
def test_a_runnable_block_runs(where: str, commands: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "WANDB_MODE": "disabled", "ABLATE_CACHE": str(tmp_path / "cache")}
    for command in commands:
        run = subprocess.run(cheap(command, tmp_path), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, f"{where}: {command!r} exited {run.returncode}: {run.stderr.strip()[-800:]}"
