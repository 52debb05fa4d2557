"""The seed planner (ablate.report.plan): its predicted power against simulated paired t-tests, the
smallest n it picks, where each row's spread comes from, and the command on a sweep with no results."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ablate.cli import main
from ablate.report.plan import plan_lines, plan_rows, power_of, seeds_needed
from ablate.report.rows import AblationTable, ReportRow, Stat


@pytest.mark.parametrize("sd, effect, n", [(0.02, 0.02, 4), (0.01, 0.01, 3), (0.03, 0.02, 10), (0.02, 0.005, 8)])
def test_predicted_power_is_within_a_few_points_of_simulated_power(sd: float, effect: float, n: int) -> None:
    """4,000 simulated paired experiments per case; the spec allows 10 points, the noncentral t is exact."""
    rng = np.random.default_rng(1)
    d = rng.normal(effect, sd, size=(4000, n))
    simulated = float(np.mean(stats.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05))
    assert abs(power_of(n, sd, effect, 0.05) - simulated) < 0.03


def test_seeds_needed_is_the_smallest_n_with_the_power() -> None:
    n = seeds_needed(0.02, math.log1p(0.02), 0.05, 0.8)
    assert n is not None and power_of(n, 0.02, math.log1p(0.02), 0.05) >= 0.8
    assert power_of(n - 1, 0.02, math.log1p(0.02), 0.05) < 0.8
    assert seeds_needed(1.0, 0.001, 0.05, 0.8) is None  # hopeless: more than MAX_SEEDS
    assert seeds_needed(0.0, 0.02, 0.05, 0.8) == 2


def _row(name: str, values: list[float], base: bool = False) -> ReportRow:
    return ReportRow(name, "X", None, {}, {}, ppl=Stat.of(values, list(range(1, len(values) + 1))), is_base=base)


def test_spread_is_measured_where_paired_and_pooled_elsewhere() -> None:
    table = AblationTable(
        "t", [_row("base", [10.0, 10.4, 9.8], True), _row("a", [10.3, 10.5, 10.0]), _row("b", [11.0])]
    )
    rows = {r.row: r for r in plan_rows(table, {"a": 0.5, "b": 0.25}, 0.02, 0.8, 0.05, "holm")}
    d = np.log([10.3, 10.5, 10.0]) - np.log([10.0, 10.4, 9.8])
    assert rows["a"].sd == pytest.approx(float(np.std(d, ddof=1))) and rows["a"].source == "measured (3 seeds)"
    assert rows["b"].sd == pytest.approx(rows["a"].sd) and rows["b"].source == "pooled"
    assert rows["a"].device_hours == pytest.approx(rows["a"].seeds * 0.5)
    text = "\n".join(plan_lines(list(rows.values()), 0.02, 0.8, 0.05, "holm"))
    assert "2.0% PPL change with 80% power" in text and "measured (3 seeds)" in text


def test_without_any_spread_the_plan_asks_for_a_pilot(tmp_path, capsys) -> None:
    import yaml

    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({"model": {"d_model": 16, "n_heads": 2, "d_ff": 32}}))
    rows = [{"name": "base", "group": "base", "paper": "base"}, {"name": "h=1", "overrides": ["model.n_heads=1"]}]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "experiment": "exp.yaml", "rows": rows}))
    assert main(["plan", str(tmp_path / "s.yaml")]) == 0
    out = capsys.readouterr().out
    assert "h=1" in out and "run base and a few rows at 2-3 seeds first" in out
    assert main(["plan", str(tmp_path / "s.yaml"), "--effect", "2"]) == 2


def test_bh_is_planned_at_its_worst_case_like_holm() -> None:
    """With one real difference among m rows BH tests it at alpha / m, as Holm's first step does: a plan at
    alpha would promise power the table does not have."""
    table = AblationTable(
        "t", [_row("base", [10.0, 10.4, 9.8], True), _row("a", [10.3, 10.5, 10.0]), _row("b", [11.0])]
    )
    seeds = {c: plan_rows(table, {}, 0.02, 0.8, 0.05, c)[0].seeds for c in ("holm", "bh", "none")}
    assert seeds["bh"] == seeds["holm"] and seeds["none"] is not None and seeds["none"] < seeds["holm"]


def test_an_adaptive_sweep_is_planned_at_the_level_its_table_decides_at(tmp_path, capsys) -> None:
    import yaml

    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({"model": {"d_model": 16, "n_heads": 2, "d_ff": 32}}))
    rows = [{"name": "base", "group": "base", "paper": "base"}, {"name": "h=1", "overrides": ["model.n_heads=1"]}]
    seeds = {"start": 2, "max": 4, "until": "decided"}  # 3 looks: the table decides at alpha / 3
    sweep = {"name": "s", "experiment": "exp.yaml", "rows": rows, "seeds": seeds}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sweep))
    assert main(["plan", str(tmp_path / "s.yaml")]) == 0
    assert f"at alpha {0.05 / 3:g} (holm)" in capsys.readouterr().out
