"""A search store opens in optuna-dashboard: its WSGI app lists one study per row, with the row's
trials, their sampled parameters, states and values (what `optuna-dashboard sqlite:///...` serves)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest
import yaml
from sweep_harness import TINY_EXPERIMENT

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.plan.search import Searcher
from ablate.sweep.store.store import SweepStore


def _get(app: Any, path: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    setup_testing_defaults(env)
    env["PATH_INFO"] = path
    status: list[str] = []
    body = b"".join(app(env, lambda s, headers, exc_info=None: status.append(s)))
    assert status[0].startswith("200"), (path, status, body[:300])
    return json.loads(body)


def test_dashboard_lists_one_study_per_row_with_params(tmp_path: Path) -> None:
    dashboard = pytest.importorskip(
        "optuna_dashboard", reason="optuna-dashboard is not installed (pip install -e '.[dev]')"
    )
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))
    sweep_file = tmp_path / "s.yaml"
    search = {"n_trials": 2, "sampler": "random", "params": {"train.lr_factor": {"low": 0.1, "high": 2.0, "log": True}}}
    rows = [{"name": "base", "group": "base"}, {"name": "h=1", "group": "A", "overrides": ["model.n_heads=1"]}]
    sweep_file.write_text(yaml.safe_dump({"name": "dash", "experiment": "exp.yaml", "search": search, "rows": rows}))
    sweep = load_sweep(sweep_file)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    searcher = Searcher(sweep, store)
    searcher.step(room=4)
    for i, a in enumerate(store.attempts()):  # each sampled trial "trains" to a result
        assert store.claim(a.storage_id, "test")
        store.finish(a.storage_id, {"val/ppl": 10.0 + i, "step": 6})
    searcher.step(room=0)  # tells the row studies the results

    app = dashboard.wsgi(store.url)
    studies = {s["study_name"]: s for s in _get(app, "/api/studies")["study_summaries"]}
    assert {"dash:base", "dash:h=1"} <= set(studies)
    for row in ("base", "h=1"):
        detail = _get(app, f"/api/studies/{studies[f'dash:{row}']['study_id']}")
        trials = detail["trials"]
        assert len(trials) == 2 and {t["state"] for t in trials} == {"Complete"}
        for t in trials:
            (param,) = t["params"]
            assert param["name"] == "train.lr_factor" and 0.1 <= float(param["param_external_value"]) <= 2.0
        attrs = {a["key"]: a["value"] for a in detail.get("user_attrs", [])} or {
            a["key"]: a["value"] for a in studies[f"dash:{row}"]["user_attrs"]
        }
        assert attrs["row"] == row
