"""A chaos run: a sweep on the local launcher while a driver, from a fixed seed, kills workers (kill -9),
kills the controller (kill -9, and SIGTERM as `timeout` or a logout sends it) and starts a second one;
then checks that nothing was lost against the same sweep run undisturbed.

Checked at the end: every trial has exactly one completed attempt and nothing is left waiting or
running; every failed attempt was lost from outside (killed, interrupted or stale: no crash); every
retry was a free resume (no retry of ``max_retries`` spent, which is 0 here, so a spent one would leave
the trial failed); and every metric of every trial equals the undisturbed run's, bit for bit (timings,
the resume step and the W&B id aside).

    python tests/sweep/chaos.py [--faults 100] [--seed 0] [--trainer fake|real] [--rows 10] [--launcher slurm]

``fake`` trials are the sweep tests' fake trainer (a few seconds each, metrics fixed by row and seed: the
bookkeeping is what is tested); ``real`` trials train the tiny model of the real-training sweep test on
the built-in corpus (minutes: the resumes' bit-identity is tested too). ``--launcher slurm`` runs the
trials as SLURM jobs of a cluster on this machine (the shared tools' one: its workers' processes are
here to kill). The integration tier runs a bounded fake run on each (tests/sweep/test_chaos.py); the
full runs are the command above.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep_harness import TINY_EXPERIMENT, ablate_cmd, fake_env  # noqa: E402

from ablate.errors import SweepError  # noqa: E402
from ablate.sweep.file.spec import load_sweep  # noqa: E402
from ablate.sweep.store.state import FREE_STALLS, LOST_KINDS  # noqa: E402
from ablate.sweep.store.store import SweepStore  # noqa: E402

REAL_EXPERIMENT = {  # the real-training sweep test's tiny model, with a checkpoint every 5 steps
    "model": {"n_layers": 1, "d_model": 32, "d_ff": 64, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 200, "max_len": 64, "max_tokens": 512, "tokenizer_sample": 2000},
    "train": {"warmup_steps": 10, "val_every_steps": 50, "log_every_steps": 5},  # max_steps: --steps
    "trainer": {"accelerator": "cpu"},
    "eval": {"beam_size": 1, "bleu_max_sentences": 20, "test": False},
    "logging": {"wandb": "disabled", "progress_bar": False},
}
REAL_EXPERIMENT["train"]["checkpoint_every_steps"] = 5
DEADLINE_S = 3600.0  # the faults' phase of a run; a sweep that never ends fails the run instead of hanging it
NOT_COMPARED = ("resumed_from", "wandb_run_id", "tokens_per_sec", "run_dir", "attempt")  # and every timing (*_s)


@dataclass
class Report:
    faults: Counter = field(default_factory=Counter)
    lost: Counter = field(default_factory=Counter)  # failed attempts by kind
    trials: int = 0
    compared: int = 0  # metric values compared with the undisturbed run
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        return [
            f"faults injected: {_counts(self.faults)}",
            f"attempts lost and resumed: {_counts(self.lost)}",
            f"trials: {self.trials}, metric values compared with the undisturbed run: {self.compared}",
            f"problems: {len(self.problems)}" + "".join(f"\n  {p}" for p in self.problems),
            f"chaos run: {self.seconds:.0f} s",
        ]


def _counts(counter: Counter) -> str:
    return f"{sum(counter.values())} ({', '.join(f'{k} {v}' for k, v in sorted(counter.items()))})"


LAUNCHERS = {
    "local": {"name": "local", "slots": 2, "poll_s": 0.2},
    "slurm": {"name": "slurm", "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 10, "poll_s": 1},
}


def write_sweep(
    folder: Path,
    trainer: str,
    rows: int,
    steps: int = 24,
    launcher: str = "local",
    step_s: float = 0.25,
    store: str = "sqlite",
) -> Path:
    """The sweep file (rows x seeds 1, 2) and its experiment in ``folder`` (``steps``: a fake trial's, of
    ``step_s`` seconds each) on ``store``."""
    folder.mkdir(parents=True, exist_ok=True)
    experiment = REAL_EXPERIMENT if trainer == "real" else TINY_EXPERIMENT
    experiment = {**experiment, "train": {**experiment["train"], "max_steps": steps}}
    if trainer == "fake":
        (folder / "fake.json").write_text(json.dumps({"*": {"step_s": step_s, "ppl": 6.0, "noise": 0.2}}))
    (folder / "exp.yaml").write_text(yaml.safe_dump(experiment))
    sweep = {
        "name": "chaos",
        "experiment": "exp.yaml",
        "seeds": [1, 2],
        "store": store,
        "launcher": LAUNCHERS[launcher],
        "heartbeat": {"interval_s": 0.5, "grace_s": 10},
        "wandb": {"mode": "disabled"},
        "max_retries": 0,
        "rows": [{"name": f"r{i}", "group": "g", "overrides": [f"model.dropout={0.05 * i:.2f}"]} for i in range(rows)],
    }
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def controller(path: Path, trainer: str, log: Any) -> subprocess.Popen:
    cmd = ablate_cmd("sweep", str(path)) if trainer == "fake" else [sys.executable, "-m", "ablate", "sweep", str(path)]
    env = fake_env({"ABLATE_CACHE": str(path.parent.parent / "cache")})
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def attempts(path: Path) -> dict[str, list[Any]]:
    """Each trial's attempts, oldest first (none before the first controller has made the store)."""
    sweep = load_sweep(path)
    try:
        by = SweepStore.for_sweep(sweep).by_trial()
    except SweepError:
        return {}
    return {f"{t.row} seed {t.seed}": by.get(t.trial_id, []) for t in sweep.trials}


def running(path: Path) -> list[Any]:
    return [a for v in attempts(path).values() for a in v if a.state == "RUNNING"]


def _worker_pid(attempt: Any) -> int | None:
    """The process that trains the attempt: the local launcher records it; in a SLURM job, the fake
    trainer's own record of its last start (the job's task runs it) - both on this machine."""
    if attempt.attrs.get("worker_pid") is not None:
        return int(attempt.attrs["worker_pid"])
    log = Path(attempt.attrs.get("run_dir", "")) / "calls.log"
    lines = log.read_text().splitlines() if log.is_file() else []
    return int(json.loads(lines[-1])["pid"]) if lines else None


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, TypeError, ValueError):
        return False


def _spared(attempt: Any) -> bool:
    """An attempt near FREE_STALLS losses in a row without a new step: one more fault before it steps on
    would be retried as a crash (by design: something kills it every time), which is not what a chaos run
    tests; it is spared until it moves on. Seen once in 7 CI runs, from faults that came too fast."""
    return int(attempt.attrs.get("stalls", 0)) >= FREE_STALLS - 2


def inject(kind: str, path: Path, controllers: list, start: Any, rng: random.Random) -> bool:
    """One fault of ``kind``; False when there was nothing to hit (no running worker, one controller max,
    or a running trial to spare: :func:`_spared`)."""
    active = running(path)
    if kind == "kill -9 worker":
        pids = sorted(p for a in active if not _spared(a) and (p := _worker_pid(a)) is not None and _alive(p))
        if not pids:
            return False
        os.kill(int(rng.choice(pids)), signal.SIGKILL)
        return True
    if kind == "second controller":
        if len(controllers) > 1:
            return False
        controllers.append(start())
        return True
    if any(_spared(a) for a in active):  # a controller's fault stops every trial it runs
        return False
    victim = rng.choice(controllers)
    victim.send_signal(signal.SIGKILL if kind == "kill -9 controller" else signal.SIGTERM)
    victim.wait(timeout=120)
    controllers.remove(victim)
    controllers.append(start())
    return True


def drive(path: Path, trainer: str, faults: int, seed: int, log: Any, pause: tuple[float, float]) -> Counter:
    """Run the sweep at ``path`` while injecting ``faults`` faults, then to its end; the faults by kind."""
    rng = random.Random(seed)
    kinds = ["kill -9 worker"] * 3 + ["kill -9 controller", "SIGTERM controller", "second controller"]
    done: Counter = Counter()
    controllers = [controller(path, trainer, log)]
    deadline = time.time() + DEADLINE_S
    while sum(done.values()) < faults:
        if time.time() > deadline:
            raise RuntimeError(f"the chaos run did not end in {DEADLINE_S:.0f} s: see {log.name}")
        time.sleep(rng.uniform(*pause))
        controllers = [c for c in controllers if c.poll() is None]
        if not controllers:  # the sweep ended (or every controller did): go on while faults remain
            seen = attempts(path)
            if seen and all(any(a.state == "COMPLETE" for a in v) for v in seen.values()):
                break
            controllers.append(controller(path, trainer, log))
            continue
        kind = rng.choice(kinds)
        if inject(kind, path, controllers, lambda: controller(path, trainer, log), rng):
            done[kind] += 1
    for c in controllers:
        c.wait(timeout=1800)
    final = controller(path, trainer, log)  # whatever the last controllers left stopped is resumed here
    final.wait(timeout=1800)
    return done


def _compared(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if k not in NOT_COMPARED and not k.endswith("_s")}


def check(calm: Path, chaos: Path, report: Report) -> None:
    """Exactly one completion per trial, only losses from outside, only free retries, identical metrics."""
    quiet, stormy = attempts(calm), attempts(chaos)
    report.trials = len(stormy)
    for name, tries in stormy.items():
        done = [a for a in tries if a.state == "COMPLETE"]
        if len(done) != 1 or any(a.state in ("WAITING", "RUNNING") for a in tries):
            report.problems.append(f"{name}: {[(a.attempt, a.state) for a in tries]}")
            continue
        for a in tries:
            if a.state == "FAIL":
                report.lost[str(a.kind)] += 1
                if a.kind not in LOST_KINDS:
                    report.problems.append(f"{name}: attempt {a.attempt} failed: {a.attrs.get('failure')}")
            if a.attempt > 0 and "resumed_at" not in a.attrs:
                report.problems.append(f"{name}: attempt {a.attempt} spent a retry")
        want = _compared(next(a for a in quiet[name] if a.state == "COMPLETE").attrs["metrics"])
        got = _compared(done[0].attrs["metrics"])
        report.compared += len(want)
        if got != want:
            diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
            report.problems.append(f"{name}: metrics differ from the undisturbed run: {diff}")


def run(
    root: Path,
    faults: int,
    seed: int,
    trainer: str = "fake",
    rows: int = 10,
    steps: int = 24,
    launcher: str = "local",
    postgres: str | None = None,
) -> Report:
    """The undisturbed sweep, then the same sweep under ``faults`` faults (fewer if it ends first: the
    report says how many); the report of the comparison. ``postgres``: a server's URL (no database): each
    sweep's store is a new database there, not a SQLite file."""
    import pg_server

    stores = [pg_server.new_database(postgres) for _ in "ab"] if postgres else ["sqlite", "sqlite"]
    # The undisturbed fake sweep trains without sleeping: its metrics are fixed by row and seed, and the
    # sleep per step only gives the faults time to land mid-trial in the disturbed one.
    calm = write_sweep(root / "calm", trainer, rows, steps, launcher, step_s=0.0, store=stores[0])
    chaos = write_sweep(root / "chaos", trainer, rows, steps, launcher, store=stores[1])
    pause = (0.2, 1.2) if trainer == "fake" else (0.5, 3.0)
    with open(root / "calm.log", "wb") as log:
        quiet = controller(calm, trainer, log)
        if quiet.wait(timeout=3600) != 0:
            raise RuntimeError(f"the undisturbed sweep failed: see {root / 'calm.log'}")
    report = Report()
    t0 = time.time()
    with open(root / "chaos.log", "wb") as log:
        report.faults = drive(chaos, trainer, faults, seed, log, pause)
    report.seconds = time.time() - t0
    check(calm, chaos, report)
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--faults", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trainer", choices=("fake", "real"), default="fake")
    p.add_argument("--rows", type=int, default=10, help="rows of the sweep (x 2 seeds)")
    p.add_argument("--steps", type=int, default=0, help="steps of a trial (default: fake 60 of 0.25 s, real 150)")
    p.add_argument("--launcher", choices=sorted(LAUNCHERS), default="local", help="slurm: a cluster on this machine")
    p.add_argument("--keep", default="", help="a folder to keep the sweeps and logs in (default: a temporary one)")
    p.add_argument("--postgres", default=None, help="a PostgreSQL server's URL (no database) for the stores")
    args = p.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="ablate-chaos-"))
    steps = args.steps or (60 if args.trainer == "fake" else 150)
    report = run(root, args.faults, args.seed, args.trainer, args.rows, steps, args.launcher, args.postgres)
    print("\n".join(report.lines()))
    print(f"sweeps and logs: {root}")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
