"""The command line: help, variant listing, one-line errors with exit code 2, light imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ablate.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("variants", "data", "train", "eval", "sweep", "status", "sync", "table"):
        assert f"    {cmd} " in out, f"`ablate --help` does not list {cmd}"


def test_help_does_not_import_lightning() -> None:
    # `ablate --help`, `status`, `table` and dry runs must stay fast: Lightning costs 5-6 s to import, torch 2-3 s.
    code = (
        "import sys; from ablate.cli import build_parser; build_parser();"
        "import ablate.config, ablate.registry, ablate.config.size;"
        "print(any(m.startswith(('lightning', 'torch')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


LIGHT_SWEEP = """\
name: light
experiment: {experiment}
overrides: [model.d_model=32, model.d_ff=64, model.n_heads=4, model.n_layers=1, trainer.accelerator=cpu]
launcher: {{name: local, slots: 1}}
wandb: {{mode: disabled}}
rows:
  - {{name: base, group: base, paper: base}}
  - {{name: swapped, group: V, overrides: [model.positional=rope, model.attention=gqa, model.norm=rmsnorm,
                                         model.ffn=swiglu, model.residual=pre]}}
  - {{name: t5 deep, group: V, overrides: ["model.positional={{name: t5, args: {{n_buckets: 16}}}}",
                                         model.residual=deepnorm, model.ffn=geglu, model.norm=scalenorm]}}
"""
# optuna (0.2 s): a read opens a SQL store with SQLAlchemy alone, and an unrun sweep opens none
HEAVY = ("torch", "lightning", "pytorch_lightning", "matplotlib", "wandb", "optuna")


@pytest.mark.parametrize("command", [["sweep", "--dry-run", "--json"], ["status"], ["table"], ["--help"]], ids=" ".join)
def test_the_fast_commands_import_no_torch(command: list[str], tmp_path: Path) -> None:
    # `sweep --dry-run`, `status`, `table` and `--help` answer in about a second: torch alone takes 2-3 s
    # to import (Lightning 5-6 s). Variant names, args and parameter counts come from ablate/config/variants.py.
    sweep = tmp_path / "light.yaml"
    sweep.write_text(LIGHT_SWEEP.format(experiment=ROOT / "experiments" / "mini.yaml"), encoding="utf-8")
    args = command if command == ["--help"] else [command[0], str(sweep), *command[1:]]
    code = (
        "import sys\nfrom ablate.cli import main\n"
        "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as exc:\n    rc = exc.code\n"
        f"print('heavy:', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "heavy: []"
    if command[0] == "sweep":  # every slot counted by its closed form: params and FLOPs per row
        trials = json.loads(done.stdout.rsplit("heavy:", 1)[0])["trials"]
        assert [t["row"] for t in trials] == ["base", "swapped", "t5 deep"]
        assert len({t["params"] for t in trials}) == 3 and all(t["flops"] > 0 for t in trials)


def test_variants_lists_model_registries(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    for kind, name in (
        ("positional", "sinusoidal"),
        ("positional", "learned"),
        ("attention", "mha"),
        ("norm", "layernorm"),
        ("ffn", "relu"),
    ):
        assert f"{kind}:" in out
        assert f"  {name} " in out


def test_bad_override_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["data", "prepare", str(ROOT / "experiments" / "mini.yaml"), "model.n_head=4"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.count("\n") == 0
    assert "model.n_head" in err and "model.n_heads" in err


def test_missing_config_file_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = main(["train", str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "nope.yaml" in err and "no such config file" in err


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("data.args.n_trian=100", "data.args.n_trian: not an option of the builtin corpus; did you mean n_train?"),
        ("model.max_positions=16", "model.max_positions"),
    ],
)
def test_config_mistakes_are_one_line_errors_at_dry_run(
    override: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A corpus option typo and max_positions below max_len fail at --dry-run, not in every trial."""
    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        f"name: s\nexperiment: {ROOT / 'experiments' / 'mini.yaml'}\nstore: sqlite\n"
        f"overrides: [data.corpus=builtin, data.max_len=128, {override}]\n"
        "rows:\n  - {name: base, group: base, paper: base}\n",
        encoding="utf-8",
    )
    assert main(["sweep", str(sweep), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and expected in err, err
    assert not (tmp_path / ".ablate").exists()  # nothing stored


def test_help_imports_no_configuration_machinery():
    """`ablate --help` loads neither OmegaConf nor torch: `import ablate` defers load_config."""
    code = (
        "import contextlib, io, sys\nfrom ablate.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n    main(['--help'])\n"
        "print(sorted(m for m in ('omegaconf', 'torch') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("metrics", [{}, {"step": 3, "run_dir": "r", "val/ppl": 9.5}])
def test_only_the_rank_that_evaluates_prints_the_summary(
    metrics: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A DDP rank other than 0 returns no metrics from ``train``: it prints nothing (it printed
    ``run .: step None, final weights None``)."""
    import ablate.train.run

    monkeypatch.setattr(ablate.train.run, "train", lambda cfg, output_dir: metrics)
    args = ["train", str(ROOT / "experiments/mini.yaml"), "logging.wandb=disabled", "--output", str(tmp_path / "run")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert ("run " in out) == bool(metrics)


def test_an_error_quoting_a_line_break_stays_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # found by the fuzz test's full run: `experiment: "0\n"` printed the path's line break as is
    sweep = tmp_path / "s.yaml"
    sweep.write_text('name: s\nexperiment: "0\\n"\nrows: [{name: base}]\n', encoding="utf-8")
    assert main(["sweep", str(sweep), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err and "0\\n" in err
