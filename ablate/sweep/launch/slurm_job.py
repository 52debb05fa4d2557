"""The SLURM job's side: what an array task runs (one trial, or a pack of trials sharing its device).

Each array task runs :class:`SlurmTrial`: it claims its attempt with a token that is the job id
(``slurm:<array>_<task>``, kept by a requeue) and trains it in-process. With ``trials_per_device: k``
an array task runs :class:`SlurmPack` instead: up to k trials at once, each in a child process of its
own with its own attempt and token (``slurm:<array>_<task>:<i>``), all on the job's device.

Preemption and time limits (one owner of the signals and of requeueing: the task):
:mod:`ablate.train.preempt` takes SIGTERM (``scontrol requeue``, a preemption, ``scancel``) and
SIGUSR2 (submitit's ``--signal=USR2@signal_delay_s`` before the time limit) from submitit (whose
SIGUSR2 handler exits mid-step) and from Lightning (whose SIGTERM handler raises without a checkpoint;
``SLURMEnvironment(auto_requeue=False)`` keeps its own scontrol requeue off). Training stops at the
next step boundary with ``last.ckpt`` written there; the attempt stays RUNNING under the job's token
(no failure, no retry spent; ``requeues`` counts them) and W&B is closed as preempting. The task
runs ``scontrol requeue`` itself where nothing else would: after SIGUSR2, and after a SIGTERM that
squeue shows to be the time limit (``Reason=TimeLimit``; SLURM sends it 0-30 s after the limit, with no
SIGUSR2 before it when ``signal_delay_s`` is 0, and ends the job TIMEOUT, never requeued; a requeue
within KillWait of it is accepted). After any other SIGTERM SLURM is requeueing already (or
cancelling: a requeue must not undo that). The requeued job re-enters the same attempt by its token,
resumes from last.ckpt into the same W&B run and finishes - no controller needed. A requeue refused
fails the attempt as ``timeout`` with one line saying so (a rerun retries it). Each task sets its
intra-op threads (OMP/MKL, torch) to the CPUs it asked for (a pack's children share them).

A pack's task passes the stop signals it receives on to its children (SLURM may signal the task's
process only), waits for every child to stop at a step boundary, and requeues once for all of them;
a requeued pack re-enters each unfinished attempt by its token, and a finished one is skipped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from ablate.sweep.launch.devices import TRIALS_ON_DEVICE_ENV


def job_token() -> str:
    """This job's id as submitit names it (``123_4`` in an array); unchanged by a requeue."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"slurm:{array}_{task}" if array and task else f"slurm:{os.environ.get('SLURM_JOB_ID', '?')}"


class SlurmTrial:
    """The callable an array task runs: claim (or re-enter) one attempt and train it in-process.

    ``trial_fn`` (``"module:function"``, default: the real trainer) is what trains; the sweep tests
    give a fake one through :class:`SlurmLauncher`'s constructor.
    """

    def __init__(self, url: str, study: str, storage_id: int, trial_fn: str | None = None) -> None:
        self.url, self.study, self.storage_id, self.trial_fn = url, study, storage_id, trial_fn

    def __call__(self) -> str:
        from ablate.sweep.launch.worker import load_trial_fn, run_trial, slurm_trainer_kwargs
        from ablate.train import preempt

        # Before anything slow: from here SIGTERM / SIGUSR2 only ask training to stop at a step boundary
        # (replacing submitit's handlers: its SIGUSR2 one exits mid-step, and it ignores SIGTERM).
        preempt.install()
        set_threads(_cpus_per_task())
        fn = load_trial_fn(self.trial_fn) if self.trial_fn else None  # None: the trainer, after the claim
        state = run_trial(self.url, self.study, self.storage_id, job_token(), slurm_trainer_kwargs(), trial_fn=fn)
        if state == "PREEMPTED":
            names = ", ".join(signal.Signals(n).name for n in preempt.signals())
            print(
                f"ablate: {names} received: trial #{self.storage_id} checkpointed, kept for this job", file=sys.stderr
            )
            refused = requeue_if_needed(preempt.signals())
            if refused:
                from ablate.sweep.store.store import SweepStore

                SweepStore(self.url, self.study).fail(self.storage_id, refused, "timeout")
            # Like submitit after its own requeue: exit without a result, so nothing reads this run as done.
            raise SystemExit(-1)
        return state

    def checkpoint(self) -> Any:
        """submitit's Checkpointable hook: resubmit the same call (the trainer resumes from last.ckpt).

        Not reached through signals any more (:func:`ablate.train.preempt.install` owns them); kept so a
        submitit-driven ``job._interrupt()`` still requeues."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)


def set_threads(cpus: str | None) -> None:
    """One intra-op thread per CPU the job asked for (OMP/MKL for child processes, torch for this one).

    Without it torch uses every core of the node: several jobs on one unpinned node oversubscribe it
    (1200 steps took 13 min instead of 40 s)."""
    if not cpus or not cpus.isdigit() or int(cpus) < 1:
        return
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = cpus
    import torch

    torch.set_num_threads(int(cpus))


def _cpus_per_task() -> str | None:
    """--cpus-per-task of this job; without one, the job's CPUs on this node shared by its tasks."""
    if os.environ.get("SLURM_CPUS_PER_TASK"):
        return os.environ["SLURM_CPUS_PER_TASK"]
    on_node, tasks = os.environ.get("SLURM_CPUS_ON_NODE", ""), os.environ.get("SLURM_NTASKS_PER_NODE", "1")
    if on_node.isdigit() and tasks.isdigit() and int(tasks) > 0:
        return str(max(1, int(on_node) // int(tasks)))
    return None


def requeue_if_needed(signals: list[int]) -> str | None:
    """Requeue this job where nothing else will; returns the line to record when SLURM refused.

    SIGUSR2 (the time limit is near, or a preemption that sends the job's signal) and a SIGTERM that is
    the time limit: nothing requeues the job unless it does. Any other SIGTERM: SLURM is already
    requeueing it (scontrol requeue, preemption) - or cancelling it, which a requeue must not undo."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job or os.environ.get("SLURM_PROCID", "0") != "0":
        return None  # rank 0 requeues a multi-task job
    if signal.SIGUSR2 in signals:
        why = "SIGUSR2 before the time limit"
    elif signal.SIGTERM in signals and _sigterm_is_time_limit(job):
        why = "SIGTERM at the time limit"
    else:
        return None
    done = _slurm(["scontrol", "requeue", job], timeout=20)
    code = "no answer" if done is None else f"exit code {done.returncode}"
    print(f"ablate: {why}: scontrol requeue {job}: {code}", file=sys.stderr)
    if done is not None and done.returncode == 0:
        return None
    err = done.stderr.strip().splitlines()[-1] if done is not None and done.stderr.strip() else code
    line = f"{why}: checkpointed, but scontrol requeue {job} failed ({err}); a rerun of the sweep retries it"
    print(f"ablate: {line}", file=sys.stderr)
    return line


def _sigterm_is_time_limit(job: str) -> bool:
    """Ask slurmctld why the job is stopping (squeue); its end time from the environment if it cannot say."""
    from ablate.sweep.launch.slurm_queue import env_end_time, is_time_limit, parse_squeue

    done = _slurm(["squeue", "-h", "-j", job, "-o", "%T|%r|%e"], timeout=5)
    info = parse_squeue(done.stdout) if done is not None and done.returncode == 0 else None
    env_end = env_end_time(os.environ.get("SLURM_JOB_END_TIME"))
    verdict = is_time_limit(time.time(), info, env_end)
    seen = f"squeue: {done.stdout.strip()!r}" if info is not None else f"SLURM_JOB_END_TIME={env_end}"
    print(f"ablate: SIGTERM {'is' if verdict else 'is not'} the time limit ({seen})", file=sys.stderr)
    return verdict


def _slurm(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    """Run a SLURM client command; once more if a signal killed it (the stop's second SIGTERM, sent to
    the whole step, kills children too). None when it could not run or did not answer in time."""
    done = None
    for _ in range(2):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode >= 0:
            return done
    return done


# A pack's child: argv = url, study, storage id, token, trial_fn ("" for the trainer). Exit 3: preempted.
_CHILD = "import sys; from ablate.sweep.launch.slurm_job import pack_child; sys.exit(pack_child(sys.argv[1:]))"
PREEMPTED_EXIT = 3


class SlurmPack:
    """The callable an array task runs for a pack: its trials at once, each in a child process."""

    def __init__(self, url: str, study: str, storage_ids: list[int], trial_fn: str | None = None) -> None:
        self.url, self.study, self.storage_ids, self.trial_fn = url, study, list(storage_ids), trial_fn

    def __call__(self) -> str:
        got: list[int] = []
        children: list[subprocess.Popen[bytes]] = []

        def forward(signum: int, frame: Any) -> None:  # record, and tell every child to stop at a step
            got.append(signum)
            for child in children:
                if child.poll() is None:
                    child.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGUSR2):
            signal.signal(sig, forward)
        cpus = _cpus_per_task()
        env = {**os.environ, TRIALS_ON_DEVICE_ENV: str(len(self.storage_ids))}
        if cpus:  # the job's CPUs shared by its trials
            env["ABLATE_PACK_THREADS"] = str(max(1, int(cpus) // len(self.storage_ids)))
        token = job_token()
        for i, sid in enumerate(self.storage_ids):
            argv = [self.url, self.study, str(sid), f"{token}:{i}", self.trial_fn or ""]
            children.append(subprocess.Popen([sys.executable, "-c", _CHILD, *argv], env=env))
        codes = [child.wait() for child in children]
        preempted = [sid for sid, code in zip(self.storage_ids, codes) if code == PREEMPTED_EXIT]
        if not preempted:
            return "PACK DONE"
        print(f"ablate: pack of {len(codes)}: trials {preempted} checkpointed, kept for this job", file=sys.stderr)
        refused = requeue_if_needed(got)
        if refused:
            from ablate.sweep.store.store import SweepStore

            for sid in preempted:
                SweepStore(self.url, self.study).fail(sid, refused, "timeout")
        raise SystemExit(-1)  # as a single trial's task: no result, so nothing reads this run as done

    def checkpoint(self) -> Any:
        """submitit's Checkpointable hook: resubmit the same pack (each trial resumes from its last.ckpt)."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)


def pack_child(argv: list[str]) -> int:
    """One trial of a pack, in a child process of the array task: as :class:`SlurmTrial`, own token."""
    from ablate.sweep.launch.worker import load_trial_fn, run_trial, slurm_trainer_kwargs
    from ablate.train import preempt

    url, study, sid, token, fn = argv
    preempt.install()
    set_threads(os.environ.get("ABLATE_PACK_THREADS"))
    trial_fn = load_trial_fn(fn) if fn else None
    state = run_trial(url, study, int(sid), token, slurm_trainer_kwargs(), trial_fn=trial_fn)
    print(f"ablate: pack trial #{sid}: {state}", file=sys.stderr)
    return PREEMPTED_EXIT if state == "PREEMPTED" else 0
