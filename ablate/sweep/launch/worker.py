"""Run one claimed trial: config from the store -> train() -> metrics or failure back to the store.

Used in two ways: as a subprocess of the local launcher (``python -m ablate.sweep.launch.worker``, so a
crash cannot take the controller down) and in-process inside a SLURM job (``run_trial``). While the
trial runs a thread keeps a heartbeat in the store; a worker that dies stops beating and is reaped.
A SLURM stop signal (:mod:`ablate.train.preempt`) ends training with ``Preempted`` after last.ckpt is
written: the attempt then stays RUNNING under the job's token (``requeues`` + 1), for the requeued job.

The trial function is ``ablate.train.run:train`` (``train(cfg, output_dir, *, resume, trainer_kwargs,
wandb_id) -> metrics``). Another one is passed explicitly: ``main(argv, trial_fn=...)`` or
``run_trial(..., trial_fn=...)`` (the sweep tests' own worker script passes a fake trainer).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ablate.errors import AblateError, Pruned, SweepError, TrainingDiverged
from ablate.sweep.file.plugins import import_plugins
from ablate.sweep.plan.plans import attempt_callbacks
from ablate.sweep.store.store import SweepStore
from ablate.train import preempt
from ablate.train.preempt import Preempted

DEFAULT_TRIAL_FN = "ablate.train.run:train"
TrialFn = Callable[..., Any]


class Interrupted(BaseException):
    """SIGTERM to a local worker (its controller's Ctrl-C): stop, leave the trial resumable. In a SLURM
    job the scheduler's signal is :class:`Preempted` instead (:mod:`ablate.train.preempt`)."""


def load_trial_fn(spec: str | None = None) -> TrialFn:
    """The function ``"module:function"`` names (default: the real trainer, imported only now), or
    ``"path/to/file.py:function"``: the file loaded as a module of its own (a stand-in trainer in a file)."""
    module, sep, name = (spec or DEFAULT_TRIAL_FN).rpartition(":")
    if not sep or not module or not name:
        raise SweepError(f"trial_fn {spec!r}: give it as module:function or path/to/file.py:function")
    if not module.endswith(".py"):
        return getattr(importlib.import_module(module), name)
    path = Path(module).resolve()
    found = importlib.util.spec_from_file_location(f"ablate_trial_fn_{path.stem}_{abs(hash(str(path)))}", path)
    if found is None or found.loader is None or not path.is_file():
        raise SweepError(f"trial_fn {spec!r}: no Python file {path}")
    loaded = importlib.util.module_from_spec(found)
    sys.modules[found.name] = loaded
    found.loader.exec_module(loaded)
    return getattr(loaded, name)


def _stored_config(store: SweepStore, attrs: dict[str, Any]) -> Any:
    """The attempt's config, after importing the sweep's plugins (a row may name a variant they add)."""
    from ablate.config import from_dict

    sattrs = store.study_attrs()
    os.environ.setdefault("ABLATE_SWEEP_DIR", str(sattrs.get("import_path", ".")))  # for the run's provenance
    import_plugins(sattrs.get("imports", []), Path(sattrs.get("import_path", ".")), "sweep imports")
    return from_dict(attrs["config"], source=f"trial {attrs['row']!r} (stored config)")


def _is_divergence(exc: BaseException) -> bool:
    # ablate.train raises TrainingDiverged("loss became NaN or infinite at step N"); it lives in ablate.errors, so
    # classifying an error imports nothing of the training stack (and its Lightning).
    return isinstance(exc, TrainingDiverged)


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's out-of-memory error (``torch.OutOfMemoryError``, CUDA's or the CPU allocator's), told by
    its class name and message so that classifying an error imports no torch."""
    text = str(exc).lower()
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in text or "can't allocate memory" in text


class _Heartbeat(threading.Thread):
    def __init__(self, store: SweepStore, storage_id: int, interval_s: float) -> None:
        super().__init__(daemon=True, name="ablate-heartbeat")
        self.store, self.storage_id, self.interval_s = store, storage_id, interval_s
        self.stopped = threading.Event()

    def run(self) -> None:
        self.store.beat(self.storage_id)
        while not self.stopped.wait(self.interval_s):
            try:
                self.store.beat(self.storage_id)
            except Exception:  # noqa: BLE001 - a missed beat is retried; the grace period absorbs it
                continue


def slurm_trainer_kwargs() -> dict[str, Any]:
    """Inside a SLURM job: let submitit own requeueing, so Lightning must not requeue on its own."""
    if "SLURM_JOB_ID" not in os.environ:
        return {}
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    return {"plugins": [SLURMEnvironment(auto_requeue=False)]}


def process_rank() -> int:
    """This process's DDP rank as its launcher tells it, before Lightning is imported.

    A SLURM task has ``SLURM_PROCID``; a rank Lightning's subprocess launcher starts (local multi-device
    trials re-execute this worker's command line) has ``LOCAL_RANK`` > 0; torchrun sets ``RANK``. Only
    rank 0 claims the attempt and records its result: another rank that did would store an empty result
    first and make rank 0's real one fail as an update of a finished trial."""
    ranks = [os.environ.get(k, "0") for k in ("SLURM_PROCID", "RANK", "LOCAL_RANK")]
    return max(int(r) if r.strip().isdigit() else 0 for r in ranks)


def run_trial(
    url: str,
    study: str,
    storage_id: int,
    token: str,
    trainer_kwargs: dict[str, Any] | None = None,
    *,
    trial_fn: TrialFn | None = None,
) -> str:
    """Claim (or re-enter) an attempt and run it to the end; returns the final state name."""
    store = SweepStore(url, study)
    if process_rank() != 0:
        return _run_rank(store, storage_id, trainer_kwargs, trial_fn or load_trial_fn())
    if not store.claim(storage_id, token):
        print(f"ablate worker: trial #{storage_id} is held by someone else; nothing to do", file=sys.stderr)
        return "SKIPPED"
    attempt = store.get(storage_id)
    run_dir = Path(attempt.attrs["run_dir"])
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # the same on every try: failed as an error (the next `ablate sweep` retries it)
        why = (
            f"cannot create the run directory {run_dir} ({exc.strerror}); set runs: to a folder this machine can write"
        )
        store.fail(storage_id, why, "error")
        return "FAIL"
    share_compile_cache(run_dir)
    interval = float(store.study_attrs().get("heartbeat", {}).get("interval_s", 10.0))
    beat = _Heartbeat(store, storage_id, interval)
    beat.start()
    try:
        cfg = _stored_config(store, attempt.attrs)
        fn = trial_fn or load_trial_fn()  # after the claim: importing the trainer takes seconds
        kwargs = _with_pruning(store, attempt.attrs, trainer_kwargs)
        metrics = fn(cfg, str(run_dir), resume=True, trainer_kwargs=kwargs, wandb_id=attempt.attrs.get("wandb_id"))
    except BaseException as exc:  # noqa: BLE001 - every way a trial ends is recorded; the worker then exits
        beat.stopped.set()  # no beat may land after the final state
        return _record_end(store, attempt, run_dir, exc)
    finally:
        beat.stopped.set()
    store.finish(storage_id, {**dict(metrics or {}), "run_dir": str(run_dir), "attempt": attempt.attempt})
    return "COMPLETE"


COMPILE_CACHE = ".compile-cache"  # beside the sweep's run directories: torch.compile's cache, shared


def share_compile_cache(run_dir: Path) -> None:
    """Point torch.compile's cache (inductor's ``TORCHINDUCTOR_CACHE_DIR``) at the sweep's runs folder,
    so a sweep compiles each shape once, not once per trial and node (its default is this machine's
    /tmp). A cache the user set is kept. Measured on CPU (benchmarks/bench_compile_cache.py, a 2-layer
    d_model 64 model): the first compiled step took 46.1 s cold and 8.7 s warm, the process 55.5 s vs 15.2 s."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(run_dir.parent / COMPILE_CACHE))


def _record_end(store: SweepStore, attempt: Any, run_dir: Path, exc: BaseException) -> str:
    """Store how a trial that raised ended: pruned, kept for a requeue, interrupted or failed."""
    sid = attempt.storage_id
    if isinstance(exc, Pruned):  # a search trial its row's pruner stopped: a result, never retried
        where = {"step": exc.step, "pruned_at": exc.step, "run_dir": str(run_dir), "attempt": attempt.attempt}
        store.prune(sid, {exc.metric: exc.value, **where})
        return "PRUNED"
    if isinstance(exc, Preempted):  # a SLURM stop signal: last.ckpt written; keep the claim for the requeue
        _keep_for_requeue(store, sid, str(exc))
        return "PREEMPTED"
    if isinstance(exc, Interrupted):
        store.fail(sid, "interrupted (Ctrl-C or SIGTERM); resumes from its checkpoint", "interrupted")
        return "FAIL"
    return _record_failure(store, sid, run_dir, exc)


def _with_pruning(store: SweepStore, attrs: dict[str, Any], kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
    """Trainer keywords plus the callbacks the plans give this attempt (``callbacks`` are added to ours)."""
    extra = attempt_callbacks(store, attrs)
    if not extra:
        return kwargs or None
    out = dict(kwargs or {})
    out["callbacks"] = [*out.get("callbacks", []), *extra]
    return out


def _record_failure(store: SweepStore, storage_id: int, run_dir: Path, exc: BaseException) -> str:
    """FAIL the attempt with its kind and a one-line reason (traceback in error.txt); see the module doc."""
    (run_dir / "error.txt").write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    if preempt.requested() and not _is_divergence(exc):
        # Caused by the stop signal before training could stop at a step (e.g. SLURM's SIGTERM also
        # ended W&B's service process): resume from the last checkpoint written, as for Preempted.
        _keep_for_requeue(store, storage_id, f"{type(exc).__name__} after a stop signal")
        return "PREEMPTED"
    if _is_divergence(exc):
        kind = "diverged"
    elif is_out_of_memory(exc):
        kind = "oom"
    elif isinstance(exc, AblateError):
        kind = "error"
    elif isinstance(exc, KeyboardInterrupt):
        kind = "interrupted"
    else:
        kind = "crashed"
    msg = str(exc).splitlines()[0] if str(exc) else ""
    store.fail(storage_id, f"{type(exc).__name__}: {msg} (traceback in {run_dir / 'error.txt'})", kind)
    return "FAIL"


def _keep_for_requeue(store: SweepStore, storage_id: int, why: str) -> None:
    """Leave the attempt RUNNING under this job's token (no failure, no retry spent): the same SLURM job,
    requeued, re-enters it by that token. The heartbeat is refreshed so it is not reaped meanwhile (the
    controller also asks sacct, which reports the job PENDING / REQUEUED)."""
    store.set_attr(storage_id, "requeues", int(store.get(storage_id).attrs.get("requeues", 0)) + 1)
    store.set_attr(storage_id, "preempted", why)
    store.set_attr(storage_id, "heartbeat", time.time())


def _run_rank(store: SweepStore, storage_id: int, trainer_kwargs: dict[str, Any] | None, fn: TrialFn) -> str:
    """A DDP rank other than 0 in a multi-task SLURM job: train alongside rank 0, record nothing
    (rank 0 owns the claim, the heartbeat and the result)."""
    attrs = store.get(storage_id).attrs
    cfg = _stored_config(store, attrs)
    share_compile_cache(Path(attrs["run_dir"]))
    try:
        fn(cfg, attrs["run_dir"], resume=True, trainer_kwargs=trainer_kwargs or None, wandb_id=attrs.get("wandb_id"))
    except (Preempted, Pruned):
        return "PREEMPTED"
    return "RANK"


def main(argv: list[str] | None = None, trial_fn: TrialFn | None = None) -> int:
    """``python -m ablate.sweep.launch.worker --url ... --study ... --trial N --token T`` (one claimed trial)."""
    p = argparse.ArgumentParser(prog="python -m ablate.sweep.launch.worker", description="run one claimed sweep trial")
    p.add_argument("--url", required=True, help="store URL (sqlite:///..., journal:PATH, ...)")
    p.add_argument("--study", required=True, help="study (sweep) name")
    p.add_argument("--trial", type=int, required=True, help="storage id of the attempt")
    p.add_argument("--token", required=True, help="claim token given by the controller")
    args = p.parse_args(argv)

    def _on_term(signum: int, frame: Any) -> None:
        raise Interrupted()

    signal.signal(signal.SIGTERM, _on_term)
    state = run_trial(args.url, args.study, args.trial, args.token, trial_fn=trial_fn)
    print(json.dumps({"trial": args.trial, "state": state}))
    return 0 if state in NORMAL_ENDS else 1


# States a worker ends in normally: exit 0. "RANK" is a rank other than 0 that trained to the end: it
# finishes before rank 0's final evaluation (dev and test PPL, beam search), and Lightning's DDP launcher
# takes a non-zero exit of any rank as a crash and kills the others, rank 0 in the middle of recording.
NORMAL_ENDS = ("COMPLETE", "SKIPPED", "PRUNED", "RANK")


if __name__ == "__main__":
    sys.exit(main())
