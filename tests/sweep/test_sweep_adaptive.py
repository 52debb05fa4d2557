"""Adaptive seeds: the stopping rule's error rate over repeated looks (simulation), the sweep file's
checks, and a sweep that adds seeds only to the undecided rows and resumes (fake trainer)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from sweep_harness import ablate_cmd, fake_env

from ablate.cli import main
from ablate.errors import SweepError
from ablate.sweep.file.seeds_spec import AdaptiveSeeds, read_adaptive
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.plan import trial_states
from ablate.sweep.plan.adaptive import look, rows_to_extend
from ablate.sweep.store.store import SweepStore

SPEC = AdaptiveSeeds(start=2, max=6)
ROWS = [f"r{i}" for i in range(10)]
SEED_SD, RUN_SD = 0.03, 0.01  # log-PPL noise shared by a seed's rows (init, data order) and of each run


def _simulate(rng: np.random.Generator, effects: dict[str, float], spec: AdaptiveSeeds, level_alpha: float) -> dict:
    """One adaptive sweep on synthetic per-seed PPLs: the verdict each row stopped with (or ended at max)."""
    shared: list[float] = []
    by_row: dict[str, dict[int, float]] = {r: {} for r in ["base", *effects]}

    def run(row: str, seed: int) -> None:
        while len(shared) < seed:
            shared.append(rng.normal(0, SEED_SD))
        by_row[row][seed] = float(
            np.exp(np.log(10.0) + shared[seed - 1] + effects.get(row, 0.0) + rng.normal(0, RUN_SD))
        )

    for row in by_row:
        for seed in range(1, spec.start + 1):
            run(row, seed)
    final: dict[str, str] = {}
    while True:
        verdicts = look(spec, by_row, "base", level_alpha, margin=0.02)
        final.update({r: v for r, v in verdicts.items() if r not in final and v != "undecided"})
        extend = rows_to_extend(spec, by_row, "base", level_alpha, margin=0.02)
        if not extend:
            final.update({r: v for r, v in verdicts.items() if r not in final})
            return final
        seed = max(len(by_row[r]) for r in extend) + 1
        for row in [*extend, "base"]:
            run(row, seed)


def _false_marks(n_tables: int, spec: AdaptiveSeeds, seed: int) -> float:
    rng = np.random.default_rng(seed)
    null = dict.fromkeys(ROWS, 0.0)
    hits = sum(
        any(v in ("better", "worse") for v in _simulate(rng, null, spec, 0.05).values()) for _ in range(n_tables)
    )
    return hits / n_tables


def test_repeated_looks_keep_the_table_wide_error_below_alpha():
    rate = _false_marks(60, SPEC, seed=1)
    # 60 null tables of 10 rows (the slow tier: 2,000): a true rate of 0.05 exceeds 0.05 + 2.5 sd (0.120)
    # 1% of the time; the rule's rate is far lower (Bonferroni over looks, Holm within one: conservative)
    assert rate <= 0.120, rate


@pytest.mark.slow
def test_repeated_looks_keep_the_error_over_2000_tables():
    assert _false_marks(2000, SPEC, seed=2) <= 0.05 + 2.5 * (0.05 * 0.95 / 2000) ** 0.5


def test_a_real_effect_is_decided_early_and_a_null_row_runs_on():
    rng = np.random.default_rng(3)
    decided = [_simulate(rng, {"worse": 0.08, "same": 0.0}, SPEC, 0.05) for _ in range(30)]
    assert sum(d["worse"] == "worse" for d in decided) >= 27  # +8% PPL against a 1% run noise: found
    assert sum(d["same"] in ("better", "worse") for d in decided) <= 2


def test_looking_after_every_seed_at_the_full_alpha_inflates_the_error():
    """What the spending is for: one row against base, a test at the full alpha after every seed."""
    rng = np.random.default_rng(4)
    unspent = AdaptiveSeeds(start=2, max=2)  # level(alpha) = alpha: one look's level, used at each of 9 looks
    hits = 0
    for _ in range(400):
        by_row: dict[str, dict[int, float]] = {"base": {}, "r": {}}
        for seed in range(1, 11):
            shared = rng.normal(0, SEED_SD)
            for row in by_row:
                by_row[row][seed] = float(np.exp(np.log(10.0) + shared + rng.normal(0, RUN_SD)))
            if seed >= 2 and look(unspent, by_row, "base", 0.05, 1e-9)["r"] in ("better", "worse"):  # no equivalence
                hits += 1
                break
    assert hits / 400 > 0.05 + 2.5 * (0.05 * 0.95 / 400) ** 0.5  # measured 0.22: four times alpha


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"start": 1, "max": 4}, "need 2 <= start < max"),
        ({"start": 3, "max": 3}, "need 2 <= start < max"),
        ({"start": 2, "max": "8"}, "seeds.max must be an integer"),
        ({"start": 2, "max": 8, "until": "done"}, "seeds.until must be decided"),
        ({"start": 2, "max": 8, "step": 2}, "unknown key(s) step"),
    ],
)
def test_bad_adaptive_seeds_are_one_line(value, message):
    with pytest.raises(SweepError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_adaptive("sweep.yaml", value)


def test_an_adaptive_sweep_file_expands_its_first_seeds(write_sweep):
    sweep = load_sweep(write_sweep(seeds={"start": 2, "max": 5}))
    assert sweep.adaptive == AdaptiveSeeds(2, 5) and [t.seed for t in sweep.trials] == [1, 2]


ROWS3 = [
    {"name": "base", "group": "base"},
    {"name": "clear", "group": "A", "overrides": ["model.d_ff=64"]},
    {"name": "noisy", "group": "A", "overrides": ["model.d_ff=48"]},
]
FAKE = {
    "*": {"ppl": 10.0, "noise": 0.001},
    "clear": {"ppl": 15.0, "noise": 0.001},  # +50% at every seed: decided at the first look
    "noisy": {"ppl": 10.0, "noise": 0.3},  # +-15% per seed: undecided at every look
}
EXPECTED = {"base": [1, 2, 3, 4], "clear": [1, 2], "noisy": [1, 2, 3, 4]}


def _seeds_run(path) -> dict[str, list[int]]:
    sweep = load_sweep(path)
    seeds: dict[str, list[int]] = {}
    for v in trial_states(SweepStore.for_sweep(sweep), sweep):
        assert v.state == "done", (v.row, v.seed, v.state)
        seeds.setdefault(v.row, []).append(v.seed)
    return {r: sorted(s) for r, s in seeds.items()}


@pytest.mark.integration
def test_only_undecided_rows_get_more_seeds_and_a_rerun_adds_none(write_sweep, fake_trainer, capsys):
    path = write_sweep(rows=ROWS3, fake=FAKE, seeds={"start": 2, "max": 4})
    assert main(["sweep", str(path)]) == 0
    assert "one more seed for 1 undecided row(s): noisy" in capsys.readouterr().out
    assert _seeds_run(path) == EXPECTED
    assert main(["sweep", str(path)]) == 0
    assert "0 new trial(s)" in capsys.readouterr().out
    assert main(["table", str(path), "--format", "md"]) == 0
    assert "Adaptive seeds: rows got more seeds while undecided, deciding at up to 3 looks" in capsys.readouterr().out


@pytest.mark.integration
@pytest.mark.parametrize("who", ["base", "noisy"])
def test_rows_that_learned_nothing_get_no_more_seeds_as_the_table_withholds_them(
    write_sweep, fake_trainer, capsys, who
):
    # dev PPL 10^6: far above the tiny corpus's unigram floor, so "not learned" by the table's rule
    path = write_sweep(rows=ROWS3, fake={**FAKE, who: {"ppl": 1e6, "noise": 0.3}}, seeds={"start": 2, "max": 4})
    assert main(["sweep", str(path)]) == 0
    out = capsys.readouterr().out
    if who == "base":  # every verdict withheld: the seeds end at the first look
        assert "seeds: base learned nothing (dev PPL" in out
        assert _seeds_run(path) == {"base": [1, 2], "clear": [1, 2], "noisy": [1, 2]}
    else:  # the noisy row learned nothing: no verdict to seek, so no more seeds for it
        assert "undecided row(s)" not in out
        assert _seeds_run(path) == {"base": [1, 2], "clear": [1, 2], "noisy": [1, 2]}
    assert main(["table", str(path), "--format", "md"]) == 0
    assert "not learned" in capsys.readouterr().out


@pytest.mark.integration
def test_a_base_that_does_not_translate_ends_the_seeds_as_the_table_marks_no_row(write_sweep, fake_trainer, capsys):
    # base's dev outputs are no translation (chrF near 0): the table marks no row, so no look can decide one
    path = write_sweep(
        rows=ROWS3,
        fake={**FAKE, "base": {"ppl": 10.0, "noise": 0.001, "hyps": "garbage"}},
        seeds={"start": 2, "max": 4},
    )
    assert main(["sweep", str(path)]) == 0
    out = capsys.readouterr().out
    assert "seeds: base's dev chrF is" in out and "every row decided" not in out
    assert _seeds_run(path) == {"base": [1, 2], "clear": [1, 2], "noisy": [1, 2]}
    assert main(["table", str(path), "--format", "md"]) == 0
    assert "its outputs are not translations yet, so no row is marked" in capsys.readouterr().out


@pytest.mark.integration
@pytest.mark.slurm
def test_adaptive_seeds_through_slurm_arrays(slurm_cluster, write_sweep):
    launcher = {"name": "slurm", "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 10, "poll_s": 1}
    path = write_sweep(rows=ROWS3, fake=FAKE, seeds={"start": 2, "max": 4}, launcher=launcher)
    done = subprocess.run(ablate_cmd("sweep", str(path)), env=fake_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _seeds_run(path) == EXPECTED


def test_the_controller_compares_with_the_row_the_table_calls_base() -> None:
    """The table's base is the row with ``paper: base``, else the one in group base, else the first: the
    controller's looks must test against that same row, or it extends seeds the table does not judge."""
    from ablate.sweep.plan.adaptive import base_row

    rows = ["base", "ref", "h=1"]
    assert base_row(rows, {r: "A" for r in rows}, {"ref": "base"}) == "ref"  # not the row merely named base
    assert base_row(["a", "b"], {"b": "base"}, {}) == "b"
    assert base_row(["a", "b"], {}, {}) == "a"
