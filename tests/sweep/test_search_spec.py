"""The ``search:`` block of a sweep file: every mistake is one line and exit 2 before anything is
stored; a dry run shows the search space, the trials per row and the cost bound; the pure parts of
search_spec (grid values, integer ranges, grid size). In-process, no worker, no training."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sweep_harness import fake_env
from sweep_harness import one_line_error as _one_line_error

from ablate.cli import main
from ablate.errors import SweepError
from ablate.sweep.file.search_spec import Param, read_search

# The search of the tiny example sweep (two rows, seeds [1, 2]: searched at 1, best re-run at 2).
SEARCH: dict[str, Any] = {
    "metric": "val/ppl",
    "n_trials": 6,
    "sampler": "tpe",
    "pruner": {"name": "median", "n_startup_trials": 2, "n_warmup_steps": 2},
    "params": {
        "train.lr_factor": {"low": 0.1, "high": 4.0, "log": True},
        "model.dropout": {"choices": [0.0, 0.1]},
    },
}
ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "h=1", "group": "A", "paper": "A1", "overrides": ["model.n_heads=1"]},
]


def _search_file(write_sweep: Callable[..., Path], search: dict[str, Any]) -> Path:
    return write_sweep(rows=ROWS, seeds=[1, 2], search=search)


def _nothing_stored(path: Path) -> None:
    assert not (path.parent / ".ablate").exists(), "a rejected search must not create the store"
    assert not (path.parent / "runs").exists()


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(s: dict[str, Any]) -> None:
        s[key] = value

    return edit


def _param(key: str, spec: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(s: dict[str, Any]) -> None:
        s["params"][key] = spec

    return edit


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(s: dict[str, Any]) -> None:
        del s[key]

    return edit


# (edit of SEARCH, words the one error line must contain)
BAD_SEARCHES = {
    "unknown sampler": (_set("sampler", "bayes"), ["search.sampler", "unknown sampler 'bayes'", "tpe"]),
    "low above high": (
        _param("train.lr_factor", {"low": 4.0, "high": 0.1}),
        ["search.params.train.lr_factor", "low 4.0 is above high 0.1", "swap"],
    ),
    "log with low 0": (
        _param("train.lr_factor", {"low": 0.0, "high": 1.0, "log": True}),
        ["search.params.train.lr_factor", "log: true needs low > 0"],
    ),
    "log with negative low": (
        _param("train.lr_factor", {"low": -1.0, "high": 1.0, "log": True}),
        ["search.params.train.lr_factor", "needs low > 0"],
    ),
    "unknown key in search": (_set("n_trial", 3), ["search:", "unknown key 'n_trial'", "'n_trials'"]),
    "unknown key in a param": (
        _param("train.lr_factor", {"low": 0.1, "high": 1.0, "lg": True}),
        ["search.params.train.lr_factor", "unknown key 'lg'", "'log'"],
    ),
    "choices and a range": (
        _param("model.dropout", {"choices": [0.0, 0.1], "low": 0.0, "high": 0.1}),
        ["search.params.model.dropout", "either choices or a range", "not both"],
    ),
    "missing n_trials": (_drop("n_trials"), ["search", "missing n_trials"]),
    "n_trials zero": (_set("n_trials", 0), ["search.n_trials", "positive integer"]),
    "direction against val/bleu": (
        lambda s: s.update(metric="val/bleu", direction="minimize"),
        ["search.direction", "val/bleu is better higher", "direction: maximize"],
    ),
    "a metric no trial records": (
        _set("metric", "val/loss"),
        ["search.metric", "val/ppl, val/nll, val/bleu", "'val/loss'"],
    ),
    "a metric that is not a name": (_set("metric", ["val/ppl"]), ["search.metric", "['val/ppl']"]),
    "grid with a continuous range": (
        _set("sampler", "grid"),
        ["search.sampler", "grid needs choices or a step", "train.lr_factor"],
    ),
    "grid smaller than n_trials": (
        lambda s: s.update(sampler="grid", params={"model.dropout": {"choices": [0.0, 0.1]}}),
        ["search.n_trials", "grid has 2 point(s)", "n_trials: 2"],
    ),
    "not a config key": (
        _param("model.n_headz", {"choices": [1, 2]}),
        ["search.params.model.n_headz", "unknown key", "model.n_heads"],
    ),
    "a bound the config rejects": (
        _param("model.dropout", {"low": 0.0, "high": 1.5}),
        ["search.params.model.dropout = 1.5", "model.dropout", "[0, 1)"],
    ),
    "a choice the config rejects": (
        _param("model.n_heads", {"choices": [2, 0]}),
        ["search.params.model.n_heads = 0", "model.n_heads", "positive"],
    ),
    "unknown pruner option": (
        _set("pruner", {"name": "median", "n_startup": 2}),
        ["search.pruner (median)", "unknown key 'n_startup'", "'n_startup_trials'"],
    ),
    "unknown sampler option": (
        _set("sampler", {"name": "tpe", "n_startup": 2}),
        ["search.sampler (tpe)", "unknown key 'n_startup'", "'n_startup_trials'"],
    ),
    "unknown pruner": (_set("pruner", "early"), ["search.pruner", "unknown pruner 'early'", "median"]),
    "params missing": (_drop("params"), ["search.params", "must map config keys"]),
    "step with log": (
        _param("train.lr_factor", {"low": 0.1, "high": 1.0, "log": True, "step": 0.1}),
        ["search.params.train.lr_factor", "log or step, not both"],
    ),
    "cmaes with choices": (_set("sampler", "cmaes"), ["search.sampler", "cmaes samples ranges only"]),
}


@pytest.mark.parametrize("dry_run", [False, True], ids=["sweep", "dry-run"])
@pytest.mark.parametrize("case", list(BAD_SEARCHES))
def test_a_bad_search_block_is_one_line_exit_2_and_stores_nothing(
    case: str, dry_run: bool, write_sweep: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    edit, words = BAD_SEARCHES[case]
    search = copy.deepcopy(SEARCH)
    edit(search)
    path = _search_file(write_sweep, search)
    assert main(["sweep", str(path), *(["--dry-run"] if dry_run else [])]) == 2
    err = _one_line_error(capsys)
    assert str(path) in err, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    _nothing_stored(path)


def test_dry_run_shows_the_search_space_trials_per_row_and_the_bound(
    write_sweep: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = _search_file(write_sweep, SEARCH)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("search t (") and "2 row(s) x 6 trials" in lines[0] and "launcher local" in out
    assert "val/ppl (minimize), tpe sampler, median pruner, search at seed 1; best re-run at seeds [2]" in out
    assert "  train.lr_factor in [0.1, 4.0] log" in lines and "  model.dropout in [0.0, 0.1]" in lines
    # one line per row: 6 search trials + the best at the other seed = 7 runs each
    for row in ("base", "h=1"):
        (line,) = [ln for ln in lines if ln.split() and ln.split()[0] == row]
        assert line.split()[3] == "7", line
    assert "model.n_heads=1" in [ln for ln in lines if ln.startswith("h=1")][0]
    bound = [ln for ln in lines if ln.startswith("bound:")]
    assert len(bound) == 1 and "FLOPs" in bound[0] and "device-hours" in bound[0]
    expected = [ln for ln in lines if ln.startswith("expected with pruning:")]
    assert len(expected) == 1 and "assumption" in expected[0] and "(-" in expected[0]
    _nothing_stored(path)


def test_dry_run_without_a_pruner_has_no_pruning_line(
    write_sweep: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = _search_file(write_sweep, {**SEARCH, "pruner": "none"})
    assert main(["sweep", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "bound:" in out and "expected with pruning" not in out


def test_a_pruner_on_dev_bleu_measured_only_at_the_end_is_named(
    write_sweep: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Dev BLEU is measured every eval.bleu_every validations (0: once, at the end): a pruner ranking by it
    would never act. Said before anything runs; a row that measures BLEU as it trains is not named."""
    search = {**SEARCH, "metric": "val/bleu", "direction": "maximize"}
    rows = [ROWS[0], {**ROWS[1], "overrides": ["model.n_heads=1", "eval.bleu_every=1"]}]
    path = write_sweep(rows=rows, seeds=[1, 2], search=search)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "search.pruner median never stops a trial of base: val/bleu is measured only at the end" in err
    assert main(["sweep", str(_search_file(write_sweep, search | {"pruner": "none"})), "--dry-run"]) == 0
    assert "never stops" not in capsys.readouterr().err


def test_dry_run_json_has_the_search_the_rows_and_the_total(
    write_sweep: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = _search_file(write_sweep, SEARCH)
    assert main(["sweep", str(path), "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert {"search", "rows", "total"} <= set(plan)
    s = plan["search"]
    assert (s["metric"], s["direction"], s["n_trials"], s["sampler"], s["pruner"]) == (
        "val/ppl",
        "minimize",
        6,
        "tpe",
        "median",
    )
    assert s["params"] == ["train.lr_factor in [0.1, 4.0] log", "model.dropout in [0.0, 0.1]"]
    assert (s["search_seed"], s["final_seeds"]) == (1, [2])
    assert [r["row"] for r in plan["rows"]] == ["base", "h=1"]
    for r in plan["rows"]:
        assert r["trials"] == 6 and r["final_seeds"] == [2]
        assert r["bound_device_hours"] == pytest.approx(7 * r["device_hours"])
    total = plan["total"]
    assert total["bound_device_hours"] == pytest.approx(sum(r["bound_device_hours"] for r in plan["rows"]))
    # median pruner, 2 start-up trials of 6: 4/6 of the trials x 50% pruned x 50% of the steps saved
    assert total["expected_pruning_saving"] == pytest.approx(4 / 6 * 0.25)
    assert total["expected_device_hours"] < total["bound_device_hours"]
    _nothing_stored(path)


# ----------------------------------------------------------------------------------------------
# search_spec, pure
# ----------------------------------------------------------------------------------------------


def _spec(params: dict[str, Any], **keys: Any) -> Any:
    return read_search("s.yaml", {"n_trials": 4, "params": params, **keys})


def test_grid_values_of_choices_steps_and_continuous_ranges() -> None:
    assert Param("model.dropout", choices=(0.0, 0.1, 0.3)).grid_values() == [0.0, 0.1, 0.3]
    assert Param("train.warmup_steps", low=50, high=400, step=50).grid_values() == list(range(50, 401, 50))
    # float steps come out as the decimals written, not 0.30000000000000004
    assert Param("model.dropout", low=0.0, high=0.3, step=0.1).grid_values() == [0.0, 0.1, 0.2, 0.3]
    assert Param("x.y", low=1, high=1, step=1).grid_values() == [1]
    assert Param("train.lr_factor", low=0.1, high=2.0).grid_values() is None
    assert Param("train.lr_factor", low=0.1, high=2.0, log=True).grid_values() is None


def test_grid_values_never_exceed_high() -> None:
    assert Param("model.dropout", low=0.0, high=0.9, step=0.25).grid_values() == [0.0, 0.25, 0.5, 0.75]
    assert Param("train.warmup_steps", low=0, high=11, step=3).grid_values() == [0, 3, 6, 9]


def test_is_int_needs_every_number_an_integer() -> None:
    assert Param("train.warmup_steps", low=50, high=400, step=50).is_int
    assert Param("train.warmup_steps", low=50, high=400).is_int
    assert not Param("train.warmup_steps", low=50, high=400, step=0.5).is_int
    assert not Param("model.dropout", low=0, high=0.3).is_int
    assert not Param("model.dropout", low=0.0, high=1.0).is_int
    assert not Param("model.n_heads", choices=(1, 2, 4)).is_int  # choices are categorical
    assert not Param("x.y", low=True, high=False).is_int  # booleans are not integers
    # read from YAML: integers stay integers
    spec = _spec({"train.warmup_steps": {"low": 50, "high": 400, "step": 50}, "model.dropout": {"low": 0, "high": 0.5}})
    assert [p.is_int for p in spec.params] == [True, False]


def test_grid_size_is_the_product_or_none_for_a_continuous_range() -> None:
    spec = _spec(
        {
            "model.dropout": {"choices": [0.0, 0.1, 0.2]},
            "train.warmup_steps": {"low": 100, "high": 400, "step": 100},
            "model.n_heads": {"choices": [1, 2]},
        },
        sampler="grid",
    )
    assert spec.grid_size() == 3 * 4 * 2
    assert spec.keys == ["model.dropout", "train.warmup_steps", "model.n_heads"]
    mixed = _spec({"model.dropout": {"choices": [0.0, 0.1]}, "train.lr_factor": {"low": 0.5, "high": 2.0}})
    assert mixed.grid_size() is None
    assert _spec({"train.lr_factor": {"low": 0.5, "high": 2.0, "log": True}}).grid_size() is None


def test_read_search_defaults_and_options() -> None:
    spec = _spec({"train.lr_factor": {"low": 0.5, "high": 2.0}})
    assert (spec.metric, spec.direction, spec.sampler, spec.pruner, spec.seed, spec.parallel) == (
        "val/ppl",
        "minimize",
        "tpe",
        "none",
        0,
        None,
    )
    assert _spec({"train.lr_factor": {"low": 0.5, "high": 2.0}}, metric="val/bleu").direction == "maximize"
    opts = _spec(
        {"train.lr_factor": {"low": 0.5, "high": 2.0}},
        sampler={"name": "tpe", "n_startup_trials": 3},
        pruner={"name": "median", "n_startup_trials": 1, "n_warmup_steps": 2},
    )
    assert opts.sampler_options == {"n_startup_trials": 3}
    assert opts.pruner_options == {"n_startup_trials": 1, "n_warmup_steps": 2}


@pytest.mark.parametrize(
    "params, words",
    [
        ({"lr_factor": {"low": 0.5, "high": 2}}, "dotted config key"),
        ({"train.lr_factor": [0.5, 2]}, "{low: .., high: ..}"),
        ({"train.lr_factor": {"low": 0.5}}, "missing high"),
        ({"train.lr_factor": {"low": "a", "high": 2}}, "low must be a number"),
        ({"train.lr_factor": {"low": 0.5, "high": 2, "step": 0}}, "step must be a positive number"),
        ({"model.dropout": {"choices": []}}, "non-empty list"),
        ({"model.dropout": {"choices": [0.1, 0.1]}}, "lists a value twice"),
        ({"model.dropout": {"choices": [[0.1]]}}, "plain values"),
    ],
)
def test_read_param_mistakes(params: dict[str, Any], words: str) -> None:
    with pytest.raises(SweepError, match="s.yaml: search.params") as exc:
        _spec(params)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_the_real_entry_point_exits_2_with_one_line(write_sweep: Callable[..., Path]) -> None:
    """`python -m ablate sweep FILE`, as a user runs it: nothing else on stderr (no warning, no traceback)."""
    path = _search_file(write_sweep, {**SEARCH, "pruner": {"name": "median", "n_startup": 2}})
    done = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", str(path)], capture_output=True, text=True, env=fake_env()
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and "'n_startup'" in done.stderr
    _nothing_stored(path)


PRUNED = {"search": {"metric": "val/ppl", "pruner": "median"}}


@pytest.mark.parametrize(
    "study_attrs, attrs, prunes",
    [
        (PRUNED, {"search": {"phase": "search", "study": "t:base", "trial_id": 3}}, True),
        (PRUNED, {"search": {"phase": "final", "study": "t:base", "trial_id": 3}}, False),  # a best re-run
        (PRUNED, {"row": "base"}, False),  # a grid trial
        ({"search": {"metric": "val/ppl", "pruner": "none"}}, {"search": {"phase": "search"}}, False),
    ],
)
def test_which_attempts_are_pruned_while_they_train(study_attrs: dict, attrs: dict, prunes: bool) -> None:
    from ablate.sweep.plan.search import pruning_spec

    assert (pruning_spec(study_attrs, attrs) is not None) == prunes


def test_a_worker_whose_trial_never_prunes_does_not_import_lightning() -> None:
    """Lightning costs a worker 2-3 CPU-seconds to import; the fake trainer's workers (and the stand-in
    trials of a 1,000-trial search) would spend most of their time on it."""
    code = (
        "import sys\n"
        "from ablate.sweep.launch.worker import _with_pruning\n"
        "class Store:\n"
        "    def study_attrs(self): return {'search': {'metric': 'val/ppl', 'pruner': 'none'}}\n"
        "print(_with_pruning(Store(), {'search': {'phase': 'search'}}, None), 'lightning' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=fake_env())
    assert done.stdout.split() == ["None", "False"], done.stderr
