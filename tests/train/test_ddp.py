"""DDP on CPU: two gloo processes (ddp_spawn, in a subprocess so pytest is never re-executed) train a
tiny run end to end; the dev NLL is summed over both ranks and the run directory is complete."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from .conftest import MINI, TINY_RUN

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from ablate.config import load_config
    from ablate.train.run import train

    if __name__ == "__main__":
        out, mini, overrides = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
        cfg = load_config(mini, overrides=overrides)
        metrics = train(cfg, out)
        print("METRICS " + json.dumps({k: v for k, v in metrics.items() if isinstance(v, (int, float))}))
    """
)


LM = ["model.arch=decoder", "model.max_positions=32", "data.block_size=16"]  # a language model's trial


@pytest.mark.integration
@pytest.mark.parametrize("arch", [[], LM], ids=["translator", "language-model"])
def test_two_process_gloo_ddp_trains_and_evaluates(tmp_path, arch):
    script = tmp_path / "ddp_train.py"
    script.write_text(SCRIPT)
    overrides = [
        *TINY_RUN,
        *arch,
        "train.max_steps=6",
        "trainer.accelerator=cpu",
        "trainer.devices=2",
        "trainer.strategy=ddp_spawn",
    ]
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, str(script), str(out), str(MINI), json.dumps(overrides)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("METRICS "))
    metrics = json.loads(line.removeprefix("METRICS "))
    assert metrics["step"] == 6
    assert metrics["val/ppl"] > 1.0
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["devices"]["world_size"] == 2
    assert (out / "checkpoints" / "last.ckpt").is_file() and (out / "metrics.json").is_file()
