"""W&B: the run table shows the best dev PPL / NLL (min) and BLEU (max), and grid trials carry a job type."""

from __future__ import annotations

from types import SimpleNamespace

from ablate.train.loggers import DefineMetrics


class WandbLogger:  # the callback recognises W&B's logger by its class name, as ablate.train.run does
    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.experiment = SimpleNamespace(define_metric=lambda name, **kw: self.calls.append((name, kw)))


def test_define_metrics_sets_summaries_on_rank_zero_only() -> None:
    logger = WandbLogger()
    DefineMetrics().on_fit_start(SimpleNamespace(is_global_zero=True, loggers=[logger, object()]), None)
    got = {name: kw["summary"] for name, kw in logger.calls}
    assert got["val/ppl"] == "min" and got["val/nll"] == "min" and got["val/bleu"] == "max"
    assert all(kw["step_metric"] == "trainer/global_step" for _, kw in logger.calls)
    other = WandbLogger()
    DefineMetrics().on_fit_start(SimpleNamespace(is_global_zero=False, loggers=[other]), None)
    assert other.calls == []


def test_grid_trials_have_a_job_type(tmp_path) -> None:
    import yaml

    from ablate.sweep.file.spec import load_sweep

    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({"model": {"d_model": 16, "n_heads": 2}}))
    (tmp_path / "s.yaml").write_text(
        yaml.safe_dump({"name": "s", "experiment": "exp.yaml", "rows": [{"name": "base", "group": "base"}]})
    )
    (trial,) = load_sweep(tmp_path / "s.yaml").trials
    assert trial.config["logging"]["job_type"] == "trial"


def test_after_a_preemption_wandb_is_torn_down_in_the_job_and_its_errors_never_fail_the_trial(monkeypatch) -> None:
    """SLURM's SIGTERM also ends W&B's service process: finishing then raises, and W&B's own atexit hook
    printed a ConnectionResetError traceback at exit. The job tears W&B down itself, catching both."""
    import sys

    from ablate.train.run import _finish_wandb

    calls: list[str] = []

    def broken(*args, **kwargs):
        calls.append("finish")
        raise ConnectionResetError("Connection lost")

    run = SimpleNamespace(finish=broken, mark_preempting=lambda: calls.append("mark"), summary={})
    fake = SimpleNamespace(run=run, teardown=lambda exit_code=None: calls.append(f"teardown {exit_code}"))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    logger = type("WandbLogger", (), {"experiment": run})()
    _finish_wandb(SimpleNamespace(loggers=[logger]), "preempted")
    assert calls == ["mark", "finish", "teardown 0"]
    calls.clear()
    _finish_wandb(SimpleNamespace(loggers=[logger]), "done")  # a finished trial: W&B's error is only a warning
    assert calls == ["finish"]
