"""Sweep files: expansion, trial identity, and one clear error per mistake (nothing launched)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ablate.cli import main
from ablate.errors import SweepError
from ablate.sweep.file.spec import load_sweep, resolve_sweep_path, trial_id
from ablate.sweep.loader import open_sweep
from ablate.sweep.store.location import locate
from ablate.sweep.store.store import SweepStore


def test_rows_seeds_zip_and_grid_expand(write_sweep):
    path = write_sweep(
        seeds=[1, 2],
        rows=[
            {"name": "base", "group": "base", "paper": "base"},
            {
                "name": "heads",
                "group": "A",
                "paper": ["A2", "A3"],
                "zip": {"model.n_heads": [4, 8], "model.d_k": [4, 2]},
            },
            {
                "name": "ff{d_ff}-p{dropout}",
                "group": "C",
                "grid": {"model.d_ff": [16, 64], "model.dropout": [0.0, 0.2]},
            },
        ],
    )
    sweep = load_sweep(path)
    assert sweep.rows == [
        "base",
        "heads n_heads=4 d_k=4",
        "heads n_heads=8 d_k=2",
        "ff16-p0.0",
        "ff16-p0.2",
        "ff64-p0.0",
        "ff64-p0.2",
    ]
    assert len(sweep.trials) == 14 and [t.seed for t in sweep.trials[:2]] == [1, 2]
    heads = [t for t in sweep.trials if t.row.startswith("heads")]
    assert [t.paper for t in heads] == ["A2", "A2", "A3", "A3"]
    assert heads[2].config["model"]["n_heads"] == 8 and heads[2].config["model"]["d_k"] == 2
    assert heads[0].overrides == ("model.n_heads=4", "model.d_k=4")
    assert sweep.trials[0].config["train"]["seed"] == 1 and sweep.trials[1].config["train"]["seed"] == 2
    # W&B grouping lives in logging.*, which does not enter the id
    assert heads[0].config["logging"]["group"] == "t" and heads[0].config["logging"]["tags"] == ["A"]
    assert len({t.trial_id for t in sweep.trials}) == 14
    assert all(Path(t.run_dir).name.endswith(t.trial_id[:8]) for t in sweep.trials)


def test_trial_id_is_independent_of_row_order_file_and_logging(write_sweep):
    rows = [
        {"name": "base", "group": "base"},
        {"name": "h=1", "group": "A", "overrides": ["model.n_heads=1", "model.d_k=16", "model.d_v=16"]},
    ]
    a = load_sweep(write_sweep(rows=rows))
    b = load_sweep(
        write_sweep(
            rows=[{**rows[1], "name": "one head"}, rows[0]],
            filename="other.yaml",
            name="other",
            wandb={"project": "x", "mode": "offline"},
            overrides={"logging.progress_bar": True},
        )
    )
    ids_a = {t.row: t.trial_id for t in a.trials}
    ids_b = {t.row: t.trial_id for t in b.trials}
    assert ids_a["base"] == ids_b["base"] and ids_a["h=1"] == ids_b["one head"]
    assert ids_a["base"] != ids_a["h=1"]
    seeded = load_sweep(write_sweep(rows=rows[:1], seeds=[2], filename="s2.yaml"))
    assert seeded.trials[0].trial_id != ids_a["base"]  # the seed changes the result
    cfg = a.trials[0].config
    assert trial_id({**cfg, "data": {**cfg["data"], "num_workers": 3}}) == ids_a["base"]
    assert trial_id({**cfg, "model": {**cfg["model"], "dropout": 0.3}}) != ids_a["base"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"max_retires": 1}, "unknown key 'max_retires'; did you mean 'max_retries'?"),
        ({"rows": [{"name": "a", "gruop": "A"}]}, "row 'a': unknown key 'gruop'; did you mean 'group'?"),
        ({"rows": [{"name": "a"}, {"name": "a", "overrides": ["model.d_ff=8"]}]}, "row name 'a' appears twice"),
        (
            {"rows": [{"name": "a", "overrides": ["model.positional=nope"]}]},
            "model.positional: unknown positional 'nope'",
        ),
        ({"rows": [{"name": "a", "overrides": ["model.n_heads=3"]}]}, "row 'a'"),
        (
            {"rows": [{"name": "a", "overrides": ["model.n_hedas=3"]}]},
            "unknown key 'model.n_hedas'; did you mean model.n_heads?",
        ),
        (
            {"rows": [{"name": "a", "zip": {"model.n_heads": [1, 2], "model.d_k": [4]}}]},
            "zip lists must have the same length",
        ),
        (
            {"rows": [{"name": "a"}, {"name": "b", "overrides": ["model.d_ff=32"]}]},
            "resolves to the same config as row 'a'",
        ),
        ({"imports": ["no_such_module_xyz"]}, "imports: no module 'no_such_module_xyz'"),
        ({"launcher": {"name": "lokal"}}, "unknown launcher 'lokal'; did you mean 'local'?"),
        ({"launcher": {"name": "local", "slot": 2}}, "launcher: unknown key 'slot'; did you mean 'slots'?"),
        ({"seeds": [1, 1]}, "seeds lists a seed twice"),
        ({"store": "mysql"}, "store 'mysql'"),
        ({"store": "foo://x"}, "store 'foo://x': unknown database 'foo'"),
        ({"rows": [{"name": "a", "group": ["A", "B"]}]}, "row 'a': group must be a single name, got ['A', 'B']"),
        ({"rows": [{"name": 5}]}, "row 1: name must be a non-empty string, got 5"),
        ({"rows": [{"name": "a", "paper": {"x": 1}}]}, "row 'a': paper must be a Table 3 row key"),
        ({"name": ["x"]}, "name must be a string"),
        ({"name": "a:b"}, "name 'a:b' must be a non-empty name without '/' or ':'"),  # ':' names row studies
        ({"name": None, "filename": "x:y.yaml"}, "named after its file, 'x:y': rename it without ':'"),
    ],
)
def test_a_broken_sweep_file_is_one_error_and_never_touches_the_store(write_sweep, capsys, change, expected):
    path = write_sweep(**change)
    with pytest.raises(SweepError) as err:
        open_sweep(path)
    assert expected in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)
    for args in (["sweep", str(path)], ["sweep", str(path), "--dry-run"], ["status", str(path)]):
        assert main(args) == 2
        assert expected in capsys.readouterr().err
    assert not (path.parent / ".ablate").exists() and not (path.parent / "runs").exists()


def test_a_store_that_exists_is_not_modified_by_a_broken_file(write_sweep):
    path = write_sweep()
    sweep = load_sweep(path)
    SweepStore.for_sweep(sweep).sync(sweep)
    db = locate(load_sweep(path)).file
    assert db is not None
    before = (db.stat().st_mtime_ns, db.read_bytes())
    write_sweep(rows=[{"name": "base"}, {"name": "x", "overrides": ["model.norm=nope"]}])
    assert main(["sweep", str(path)]) == 2
    assert (db.stat().st_mtime_ns, db.read_bytes()) == before


def test_bare_name_is_found_in_cwd_then_in_the_project_sweeps(write_sweep, monkeypatch, tmp_path):
    path = write_sweep(filename="mine.yaml")
    monkeypatch.chdir(tmp_path)
    assert resolve_sweep_path("mine") == path.resolve()
    assert resolve_sweep_path("mine.yaml") == path.resolve()
    project = Path(__file__).resolve().parents[2] / "sweeps" / "table3.yaml"
    if project.exists():
        assert resolve_sweep_path("table3.yaml") == project
    with pytest.raises(SweepError, match="no such sweep file"):
        resolve_sweep_path("nope-nope")


def test_dry_run_json_lists_params_flops_and_cost(write_sweep, capsys):
    path = write_sweep(
        cost={"flops_per_second": 1.0e12, "mfu": 0.5},
        rows=[{"name": "base", "group": "base"}, {"name": "wide", "group": "C", "overrides": ["model.d_ff=128"]}],
    )
    assert main(["sweep", str(path), "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    base, wide = out["trials"]
    assert wide["params"] > base["params"] > 0 and wide["flops"] > base["flops"] > 0
    assert base["device_hours"] == pytest.approx(base["flops"] / (1.0e12 * 0.5) / 3600)
    assert base["assumption"]["source"] == "sweep file cost:"
    assert out["total"]["flops"] == pytest.approx(base["flops"] + wide["flops"])
    assert main(["sweep", str(path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "assumed throughput (sweep file cost:): cpu at 1e+12 FLOP/s x 0.5 MFU" in text and "wide" in text
    assert not (path.parent / ".ablate").exists()


def test_dry_run_adds_a_fixed_cost_per_device_step(write_sweep, capsys):
    """A step costs step_overhead_s (host-side: kernel launches) plus its FLOPs at the assumed rate; the
    GPU default was fitted so: a small model's step is mostly the fixed part."""
    path = write_sweep(cost={"flops_per_second": 1.0e12, "mfu": 0.5, "step_overhead_s": 0.02})
    assert main(["sweep", str(path), "--dry-run", "--json"]) == 0
    (base,) = json.loads(capsys.readouterr().out)["trials"]
    seconds = base["flops"] / (1.0e12 * 0.5) + 0.02 * base["steps"] * base["devices"]
    assert base["device_hours"] == pytest.approx(seconds / 3600)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    assert "x 0.5 MFU + 20 ms a step" in capsys.readouterr().out
    for bad in (-0.01, "fast", True):
        path = write_sweep(cost={"flops_per_second": 1.0e12, "mfu": 0.5, "step_overhead_s": bad})
        assert main(["sweep", str(path), "--dry-run"]) == 2
        assert "step_overhead_s must be a non-negative number" in capsys.readouterr().err
    path = write_sweep(cost={"flops_per_second": 0, "mfu": 0.5})
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "flops_per_second must be a positive number" in capsys.readouterr().err


def test_dry_run_and_status_import_neither_torch_nor_lightning(write_sweep):
    path = write_sweep()
    code = (
        "import sys; from ablate.cli import main; "
        f"assert main(['sweep', {str(path)!r}, '--dry-run']) == 0; assert main(['status', {str(path)!r}]) == 0; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning', 'pytorch_lightning')]; "
        "assert not bad, bad[:3]"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "not started" in done.stdout


def test_project_sweep_files_load(tmp_path):
    sweeps = Path(__file__).resolve().parents[2] / "sweeps"
    files = sorted(sweeps.glob("*.yaml"))
    if not files:
        pytest.skip("no sweeps/ files in this checkout")
    for f in files:
        sweep = load_sweep(f)
        assert sweep.shapes and yaml.safe_load(f.read_text())["rows"]
        assert bool(sweep.trials) == (sweep.search is None)  # a search samples its trials as it runs


def test_a_top_level_list_gets_a_sweep_hint(tmp_path, capsys):
    path = tmp_path / "rows.yaml"
    path.write_text("- {name: base}\n- {name: h1}\n")
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "top level of a sweep file must be a mapping" in err and "goes under `rows:`" in err
    assert err.count("\n") == 1


def test_spec_is_pure_plugins_and_launchers_are_checked_by_the_loader(write_sweep, tmp_path, monkeypatch):
    (tmp_path / "myplugin_xyz.py").write_text("LOADED = True\n")
    path = write_sweep(imports=["myplugin_xyz"], launcher={"name": "nope"})
    before = list(sys.path)
    sweep = load_sweep(path)  # pure: neither imports the plugin nor looks at the launcher
    assert sweep.imports == ("myplugin_xyz",) and "myplugin_xyz" not in sys.modules and sys.path == before
    with pytest.raises(SweepError, match="unknown launcher 'nope'"):
        open_sweep(path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader puts the sweep's folder first
    monkeypatch.delitem(sys.modules, "myplugin_xyz", raising=False)
    open_sweep(write_sweep(imports=["myplugin_xyz"], filename="ok.yaml"))
    assert sys.modules["myplugin_xyz"].LOADED


class _ClosedPipe:
    """stdout whose reader went away (`ablate sweep --dry-run | head -1`)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_dry_run_into_a_closed_pipe_is_quiet(write_sweep, monkeypatch, capsys):
    path = write_sweep()
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["sweep", str(path), "--dry-run"]) == 141  # no traceback: like `yes | head`


@pytest.mark.parametrize("name", ["a b", "x..", "_x_", "a.b"])
def test_a_sweep_name_never_puts_run_folders_outside_runs(write_sweep, name):
    sweep = load_sweep(write_sweep(name=name))
    runs = sweep.runs_root.resolve()
    for t in sweep.trials:
        folder = Path(t.run_dir).resolve().parent
        assert folder.parent == runs and not folder.name.startswith(".")
    assert sweep.runs_dir.resolve().parent == runs


def test_the_ray_table3_runs_the_same_trials_as_the_slurm_one():
    sweeps = Path(__file__).resolve().parents[2] / "sweeps"
    if not (sweeps / "table3-ray.yaml").is_file():
        pytest.skip("no sweeps/table3-ray.yaml in this checkout")
    slurm, ray = load_sweep(sweeps / "table3.yaml"), load_sweep(sweeps / "table3-ray.yaml")
    assert [(t.row, t.trial_id) for t in ray.trials] == [(t.row, t.trial_id) for t in slurm.trials]
    assert (slurm.launcher["name"], ray.launcher["name"]) == ("slurm", "ray")
