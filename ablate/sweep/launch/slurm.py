"""SLURM launcher: trials as submitit job arrays, one array per resource profile.

The executor is ``submitit.AutoExecutor(cluster="slurm")``, never its guess (it picks SLURM whenever
``srun`` is on PATH). Each array task runs :class:`SlurmTrial`: it claims its attempt with a token that
is the job id (``slurm:<array>_<task>``, kept by a requeue) and trains it in-process.

Preemption and time limits (one owner of the signals and of requeueing: :class:`SlurmTrial`):
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
intra-op threads (OMP/MKL, torch) to the CPUs it asked for.

Job states come from ``sacct`` (a cancelled job is seen only there): a RUNNING or WAITING attempt
whose job ended without recording a result is failed with the SLURM state as its reason - TIMEOUT
only once the heartbeat is stale (sacct says TIMEOUT for the seconds before the job requeues itself).

Why this file is long: the submitting side (arrays per resource profile, sacct polling) and the
job's side (signals, requeue, threads) are one protocol over the same job token and attributes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from ablate.rundir import safe_name
from ablate.sweep.file.errors import SweepError
from ablate.sweep.file.spec import Sweep
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.devices import shared_needs
from ablate.sweep.launch.registry import LAUNCHERS
from ablate.sweep.store.state import Attempt

# sacct states of a job that may still run the attempt (pending after a requeue counts).
_ALIVE = {
    "PENDING",
    "RUNNING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "SUSPENDED",
    "CONFIGURING",
    "COMPLETING",
    "RESIZING",
    "PREEMPTED",
    "SIGNALING",
    "STAGE_OUT",
}

# Launcher key -> submitit AutoExecutor parameter.
_PARAMS = {
    "timeout_min": "timeout_min",
    "mem_gb": "mem_gb",
    "cpus_per_task": "cpus_per_task",
    "gpus_per_node": "gpus_per_node",
    "tasks_per_node": "tasks_per_node",
    "nodes": "nodes",
    "partition": "slurm_partition",
    "account": "slurm_account",
    "qos": "slurm_qos",
    "constraint": "slurm_constraint",
    "array_parallelism": "slurm_array_parallelism",
    "additional": "slurm_additional_parameters",
    "setup": "slurm_setup",
    "signal_delay_s": "slurm_signal_delay_s",
}


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
            refused = _requeue_if_needed(preempt.signals())
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


def _requeue_if_needed(signals: list[int]) -> str | None:
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


@LAUNCHERS.register("slurm")
class SlurmLauncher(Launcher):
    """Submit trials to SLURM as job arrays (submitit); resumable across preemption and requeue."""

    KEYS = {
        "name": "slurm",
        "partition": "--partition",
        "account": "--account",
        "qos": "--qos",
        "constraint": "--constraint",
        "timeout_min": "--time in minutes",
        "mem_gb": "--mem in GB",
        "cpus_per_task": "--cpus-per-task",
        "gpus_per_node": "--gpus-per-node",
        "tasks_per_node": "--ntasks-per-node (DDP ranks per node)",
        "nodes": "--nodes",
        "array_parallelism": "tasks of one array running at once",
        "additional": "extra sbatch options {key: value}",
        "setup": "shell lines run before the trial",
        "signal_delay_s": "seconds before the time limit that the checkpoint signal comes",
        "folder": "submitit logs (default: .ablate/slurm/<sweep> beside the sweep file)",
        "poll_s": "seconds between looks at the store and sacct (default 5)",
    }
    poll_s = 5.0
    can_detach = True
    # "module:function" that trains a trial in an array task (None: ablate.train.run:train); the
    # sweep tests give a fake trainer here or through the constructor.
    trial_fn: str | None = None

    @classmethod
    def validate(cls, cfg: Mapping[str, Any], where: str) -> dict[str, Any]:
        out = super().validate(cfg, where)
        for key in ("timeout_min", "mem_gb", "cpus_per_task", "tasks_per_node", "nodes", "array_parallelism"):
            cls.positive_int(out, key, where)
        if out.get("gpus_per_node") is not None and (
            not isinstance(out["gpus_per_node"], int) or out["gpus_per_node"] < 0
        ):
            raise SweepError(f"{where}: gpus_per_node must be an integer >= 0, got {out['gpus_per_node']!r}")
        if "additional" in out and not isinstance(out["additional"], Mapping):
            raise SweepError(f"{where}: additional must be a mapping of sbatch options, e.g. {{mail-type: END}}")
        if "setup" in out and not (isinstance(out["setup"], list) and all(isinstance(s, str) for s in out["setup"])):
            raise SweepError(f"{where}: setup must be a list of shell lines")
        return out

    @classmethod
    def launch_problem(cls, sweep: Sweep) -> str | None:
        if shutil.which("sbatch") is None:
            return (
                f"{sweep.path}: launcher slurm: `sbatch` is not on PATH here (no SLURM client); run `ablate sweep` "
                "on a machine of the cluster, or set launcher: local"
            )
        return None

    @classmethod
    def needs(cls, sweep: Sweep) -> list[str]:
        return shared_needs(sweep, "the compute nodes", "launcher.setup lines activate it in each job")

    @classmethod
    def reap_detached(cls, sweep: Sweep, store: Any) -> None:
        """Record the jobs of active attempts that ended without saying so (killed in their start-up,
        before any handler was installed; timed out; cancelled): a detached sweep has no controller, and
        its attempts would otherwise show RUNNING or waiting forever. One ``sacct`` call."""
        if shutil.which("sacct") is None:
            return
        launcher = cls(sweep, store)
        if any(a.attrs.get("slurm_job") for a in launcher.active()):
            launcher.poll()

    def __init__(self, *args: Any, trial_fn: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if trial_fn is not None:
            self.trial_fn = trial_fn
        self.folder = self.cfg.get("folder") or str(
            self.sweep.path.parent / ".ablate" / "slurm" / safe_name(self.sweep.name, fallback="sweep")
        )
        self._states: dict[str, str] = {}
        self.submitted: list[str] = []

    # -- job states ----------------------------------------------------------------------------
    def _refresh_states(self, ids: list[str]) -> None:
        if not ids:
            return
        try:
            out = subprocess.run(
                [
                    "sacct",
                    "-n",
                    "-P",
                    "-X",
                    "-o",
                    "JobID,State",
                    "-j",
                    ",".join(sorted(set(i.split("_")[0] for i in ids))),
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return  # unknown: the heartbeat decides
        for line in out.splitlines():
            job, _, state = line.partition("|")
            if job and state:
                self._states[job.strip()] = state.split()[0] if state.split() else state

    def _job_state(self, attempt: Attempt) -> str | None:
        job = attempt.attrs.get("slurm_job")
        return self._states.get(str(job)) if job else None

    def poll(self) -> None:
        attempts, grace = self.active(), float(self.sweep.heartbeat["grace_s"])
        self._refresh_states([str(a.attrs["slurm_job"]) for a in attempts if a.attrs.get("slurm_job")])
        for a in attempts:
            state = self._job_state(a)
            if state is None or state in _ALIVE:
                continue
            if a.state == "RUNNING" and self.store.get(a.storage_id).state != "RUNNING":
                continue
            if state == "TIMEOUT" and a.state == "RUNNING" and a.silent_s() <= grace:
                continue  # a job that checkpoints at its time limit requeues itself (TIMEOUT -> REQUEUED)
            kind = "cancelled" if state == "CANCELLED" else ("crashed" if state != "TIMEOUT" else "timeout")
            self.store.fail(a.storage_id, f"SLURM job {a.attrs['slurm_job']} {state}", kind)

    def alive(self, attempt: Attempt) -> bool | None:
        state = self._job_state(attempt)
        if state is None:
            return None
        return True if state in _ALIVE else None  # ended: poll() records why; else the heartbeat

    # -- submission ----------------------------------------------------------------------------
    def start(self, waiting: list[Attempt]) -> None:
        # An attempt already given to a job waits for it; poll() fails it if that job ends unstarted.
        todo = [a for a in waiting if not a.attrs.get("slurm_job")]
        if not todo:
            return
        import submitit

        resources = {t.trial_id: t.resources for t in self.sweep.trials}
        groups: dict[str, list[Attempt]] = {}
        for a in todo:
            profile = {**{k: v for k, v in self.cfg.items() if k in _PARAMS}, **resources.get(a.ablate_id, {})}
            groups.setdefault(json.dumps(profile, sort_keys=True), []).append(a)
        for key, attempts in groups.items():
            profile = json.loads(key)
            executor = submitit.AutoExecutor(folder=self.folder, cluster="slurm")
            params = {_PARAMS[k]: v for k, v in profile.items() if k in _PARAMS}
            params.setdefault("timeout_min", 60)
            executor.update_parameters(name=f"ablate-{self.sweep.name}", **params)
            jobs = self._submit(executor, attempts)
            for a, job in zip(attempts, jobs):
                self.store.set_attr(a.storage_id, "slurm_job", str(job.job_id))
                self._states[str(job.job_id)] = "PENDING"
                self.submitted.append(str(job.job_id))

    def _submit(self, executor: Any, attempts: list[Attempt]) -> list[Any]:
        """One sbatch of an array of these attempts. When sbatch refuses (no controller reachable, a bad
        partition...), the attempts stay WAITING for a later `ablate sweep` on a working cluster and the
        error is one line quoting sbatch (submitit also prints sbatch's stderr: it is kept out of the way)."""
        from submitit.core.utils import FailedJobError

        try:
            with contextlib.redirect_stderr(io.StringIO()), executor.batch():
                return [
                    executor.submit(SlurmTrial(self.store.url, self.store.study_name, a.storage_id, self.trial_fn))
                    for a in attempts
                ]
        except FailedJobError as exc:
            said = " ".join(str(exc).split()) or type(exc).__name__
            raise SweepError(
                f"{self.sweep.path}: sbatch refused the jobs: {said!r}; the trials stay waiting: run `ablate sweep` "
                "again where sbatch reaches the cluster (e.g. a login node)"
            ) from None

    def busy(self) -> bool:
        return False

    def capacity(self) -> int:
        """A search keeps as many trials queued as the array may run at once (array_parallelism, else 4)."""
        return int(self.cfg.get("array_parallelism") or 4)

    def shutdown(self) -> None:
        """Ctrl-C detaches: the jobs keep running on the cluster; `ablate status` follows them."""
