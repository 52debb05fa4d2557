"""The contract every registered launcher must keep: it starts trials, polls them and reports how they end.

:func:`run_contract` runs one tiny sweep (rows ``done``, ``fails``, ``vanishes``; one seed, no retries)
under a registered launcher in a temporary folder (a journal store: the quickest to open, and no part
of the contract), with the stand-in trainer :func:`contract_trial` (milliseconds, no torch) as the
launcher's ``trial_fn``, which the launcher must start its trials with.
Then each check reads what the store says and raises :class:`ContractError` (one line) when broken:

- ``starts``: every trial was claimed by a worker and trained exactly once
- ``done``: the trial whose trainer returns is COMPLETE with the metrics it returned
- ``failed``: the trial whose trainer raises is FAIL, with that error in its one-line failure
- ``vanished``: the trial whose process dies without a word (``os._exit``) is FAIL with a reason, found
  by the launcher's ``poll``/``alive`` or by the heartbeat
- ``ends``: ``run()`` returns within the deadline with the tally 1 done, 2 failed

tests/sweep parametrizes over every registered launcher; a user calls ``run_contract("mine")`` after
importing the module that registers their launcher (``options``: its ``launcher:`` settings).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablate.errors import ContractError
from ablate.sweep.launch.progress import ProgressView
from ablate.sweep.launch.registry import LAUNCHERS
from ablate.sweep.plan import trial_states

TRIAL_FN = "ablate.sweep.launch.contract:contract_trial"
ROWS = ("done", "fails", "vanishes")
CALLS = "contract_calls.log"  # one line per call of the stand-in, in the trial's run dir
FAILS = "launcher contract: this trial fails on purpose"
EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": 2, "warmup_steps": 1, "val_every_steps": 2, "log_every_steps": 1},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


def contract_trial(
    cfg: Any, output_dir: str, *, resume: bool = True, trainer_kwargs: Any = None, wandb_id: Any = None
) -> dict[str, Any]:
    """The stand-in trainer: returns, raises or kills its process, by row name (``cfg.logging.name``)."""
    row = str(cfg.logging.name)
    run_dir = Path(output_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / CALLS, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "row": row, "time": time.time()}) + "\n")
    if row == "fails":
        raise RuntimeError(FAILS)
    if row == "vanishes":
        os._exit(3)  # no result, no failure recorded: the launcher (or the heartbeat) must notice
    return {"val/ppl": 1.5, "contract_row": row}


@dataclass
class Outcome:
    """What one contract sweep left: the tally run() returned (None: it raised) and each row's trial."""

    launcher: str
    counts: dict[str, int] | None
    trials: dict[str, Any]  # row -> TrialView
    error: str = ""  # run() raised (or the deadline passed): one line
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def trial(self, row: str) -> Any:
        if self.error:
            raise ContractError(f"the sweep did not end: {self.error}")
        return self.trials[row]


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise ContractError(what)


def _calls(view: Any) -> list[dict[str, Any]]:
    path = Path(view.trial.run_dir) / CALLS
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def check_starts(out: Outcome) -> None:
    for row in ROWS:
        view = out.trial(row)
        _require(bool(view.attempts), f"trial {row} was never put in the store")
        first = view.attempts[0]
        _require(bool(first.attrs.get("token")), f"trial {row} was never claimed by a worker (state {first.state})")
        n = len(_calls(view))
        _require(n > 0, f"trial {row} never reached the trainer: were its workers started with launcher.trial_fn?")
        _require(n == 1, f"trial {row} trained {n} times, not once")


def check_done(out: Outcome) -> None:
    view = out.trial("done")
    _require(view.state == "done", f"the trial that finishes is {view.state}, not done ({_failure(view)})")
    metrics = view.deciding.attrs.get("metrics") or {}
    _require(metrics.get("contract_row") == "done", f"the finished trial's metrics are not its trainer's: {metrics}")


def check_failed(out: Outcome) -> None:
    view = out.trial("fails")
    _require(view.state == "failed", f"the trial whose trainer raises is {view.state}, not failed")
    _require(FAILS in _failure(view), f"the failed trial does not say why: {_failure(view)!r}")


def check_vanished(out: Outcome) -> None:
    view = out.trial("vanishes")
    _require(view.state == "failed", f"the trial whose process died is {view.state}, not failed")
    _require(bool(_failure(view)), "the trial whose process died was failed without a reason")


def check_ends(out: Outcome) -> None:
    if out.error:
        raise ContractError(f"the sweep did not end: {out.error}")
    counts = {k: v for k, v in (out.counts or {}).items() if v}
    _require(counts == {"done": 1, "failed": 2}, f"run() returned {counts}, not {{'done': 1, 'failed': 2}}")


def _failure(view: Any) -> str:
    last = view.deciding
    return str(last.attrs.get("failure", "")) if last is not None else ""


CHECKS: dict[str, Callable[[Outcome], None]] = {
    "starts": check_starts,
    "done": check_done,
    "failed": check_failed,
    "vanished": check_vanished,
    "ends": check_ends,
}


def write_sweep(
    folder: Path, name: str, options: Mapping[str, Any] | None = None, store: str = "journal:contract.journal"
) -> Path:
    """The contract's sweep file (and its experiment) in ``folder``, for launcher ``name``, on ``store``."""
    import yaml

    cls = LAUNCHERS.get(name)
    launcher = {"name": name, **({"poll_s": 0.5} if "poll_s" in cls.KEYS else {}), **dict(options or {})}
    sweep = {
        "name": "contract",
        "experiment": "experiment.yaml",
        "seeds": [1],
        "store": store,
        "launcher": launcher,
        "heartbeat": {"interval_s": 1, "grace_s": 10},
        "wandb": {"mode": "disabled"},
        "max_retries": 0,
        # distinct configs, or the rows would be one trial
        "rows": [
            {"name": row, "group": "contract", "overrides": {"model.d_ff": 16 * (i + 1)}} for i, row in enumerate(ROWS)
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "experiment.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def run_sweep(
    name: str,
    folder: Path,
    options: Mapping[str, Any] | None = None,
    timeout_s: float = 180.0,
    store: str = "journal:contract.journal",
) -> Outcome:
    """Run the contract sweep under launcher ``name`` in ``folder`` on ``store``; stops it after ``timeout_s``."""
    from ablate.sweep.file.spec import load_sweep, read_sweep_file
    from ablate.sweep.launch import check_launcher
    from ablate.sweep.store.store import SweepStore

    path = write_sweep(folder, name, options, store)
    check_launcher(read_sweep_file(path))
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    deadline = time.monotonic() + timeout_s
    launcher = _bounded(LAUNCHERS.get(name), deadline, timeout_s)(sweep, store)
    launcher.trial_fn = TRIAL_FN
    view = _QuietView(sweep)
    t0, counts, error = time.monotonic(), None, ""
    try:
        counts = launcher.run(view=view)
    except Exception as exc:  # noqa: BLE001 - a launcher may raise anything; one line says what
        error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        with contextlib.suppress(Exception):
            launcher.shutdown()  # stop what it started (local: its workers)
    trials = {v.row: v for v in trial_states(store, sweep)}
    return Outcome(name, counts, trials, error, time.monotonic() - t0, view.lines)


def _bounded(cls: type, deadline: float, timeout_s: float) -> type:
    """``cls`` whose poll raises once the deadline has passed (so a launcher that never ends is a failure)
    and whose trials are not costed (the order they start in is no part of the contract)."""

    class Bounded(cls):  # type: ignore[misc, valid-type]
        def poll(self) -> None:
            if time.monotonic() > deadline:
                raise ContractError(f"still running after {timeout_s:g} s (a trial never reported its end?)")
            super().poll()

        def _costs(self) -> dict[str, float]:  # the rows cost alike: start order is not part of the contract
            return {t.trial_id: 0.0 for t in self.sweep.trials}

    Bounded.__name__ = Bounded.__qualname__ = cls.__name__
    return Bounded


class _QuietView(ProgressView):
    """Keeps the controller's notes instead of printing them; draws nothing."""

    def __init__(self, sweep: Any) -> None:
        super().__init__(sweep, live=False)
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)

    def update(self, trials: Any) -> None:
        pass


@dataclass(frozen=True)
class CheckResult:
    name: str
    check: str
    ok: bool
    message: str = ""

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  launcher={self.name:<9} {self.check:<16} {self.message}".rstrip()


def evaluate(out: Outcome, checks: Iterable[str] | None = None) -> list[CheckResult]:
    """Each check (default: all) on one contract sweep's outcome; an exception is a failed check."""
    results = []
    for check in checks if checks is not None else CHECKS:
        try:
            CHECKS[check](out)
        except Exception as exc:  # noqa: BLE001
            prefix = "" if isinstance(exc, ContractError) else f"{type(exc).__name__}: "
            results.append(CheckResult(out.launcher, check, False, prefix + (str(exc).splitlines() or [""])[0]))
        else:
            results.append(CheckResult(out.launcher, check, True))
    return results


def run_contract(
    name: str, checks: Iterable[str] | None = None, options: Mapping[str, Any] | None = None, timeout_s: float = 180.0
) -> list[CheckResult]:
    """Run the contract sweep under launcher ``name`` (in a temporary folder) and every check on it."""
    with tempfile.TemporaryDirectory(prefix=f"ablate-contract-{name}-") as tmp:
        return evaluate(run_sweep(name, Path(tmp), options, timeout_s), checks)
