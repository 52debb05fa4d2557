"""SLURM launcher: trials as submitit job arrays, one array per resource profile (the submitting side).

The executor is ``submitit.AutoExecutor(cluster="slurm")``, never its guess (it picks SLURM whenever
``srun`` is on PATH). Each array task runs one trial, or with ``trials_per_device: k`` a pack of up to
k trials sharing the job's device; what runs inside the job (signals, requeue, threads) is
:mod:`ablate.sweep.launch.slurm_job`.

Job states come from ``sacct`` (a cancelled job is seen only there): a RUNNING or WAITING attempt
whose job ended without recording a result is failed with the SLURM state as its reason - TIMEOUT
only once the heartbeat is stale (sacct says TIMEOUT for the seconds before the job requeues itself).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from ablate.errors import SweepError
from ablate.rundir import safe_name
from ablate.sweep.file.spec import Sweep
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.devices import open_jobs, shared_needs
from ablate.sweep.launch.registry import LAUNCHERS
from ablate.sweep.launch.slurm_job import SlurmPack, SlurmTrial
from ablate.sweep.launch.slurm_queue import parse_sacct
from ablate.sweep.store.location import StoreLocation
from ablate.sweep.store.state import Attempt

# Signals that end a task from outside (kill -9, kill, Ctrl-C, a hang-up): a job FAILED by one of them,
# or lost with its node, was killed, and resumes without spending a retry (state.free_retry).
KILLS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def job_of_token(token: str | None) -> str | None:
    """The SLURM job id in an attempt's claim token (``slurm:<job>`` or ``slurm:<job>:<i>`` in a pack)."""
    parts = str(token or "").split(":")
    return parts[1] if len(parts) > 1 and parts[0] == "slurm" and parts[1] else None


def ended_kind(state: str, sig: int | None) -> str:
    """The failure kind of an attempt whose job ended in ``state`` (sacct) by signal ``sig``."""
    if state == "CANCELLED":
        return "cancelled"
    if state == "TIMEOUT":
        return "timeout"
    if state == "OUT_OF_MEMORY":  # SLURM's memory limit killed it (with SIGKILL): it would repeat
        return "oom"
    return "killed" if state == "NODE_FAIL" or sig in KILLS else "crashed"


RESERVE_S = 120.0  # a submit reservation older than this was left by a controller killed while submitting

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
        "trials_per_device": "trials one job runs at once on its device (packing small trials; default 1)",
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
        cls.positive_int(out, "trials_per_device", where)
        if out.get("trials_per_device", 1) > 1 and (out.get("tasks_per_node", 1) > 1 or out.get("nodes", 1) > 1):
            raise SweepError(f"{where}: trials_per_device > 1 packs one-task trials; set tasks_per_node: 1, nodes: 1")
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
    def needs(cls, sweep: Sweep, location: StoreLocation) -> list[str]:
        return shared_needs(sweep, location, "the compute nodes", "launcher.setup lines activate it in each job")

    @classmethod
    def reap_detached(cls, sweep: Sweep, store: Any) -> list[str]:
        """Record the jobs of active attempts that ended without saying so (killed in their start-up,
        before any handler was installed; timed out; cancelled): a detached sweep has no controller, and
        its attempts would otherwise show RUNNING or waiting forever. One ``sacct`` call; one line per job."""
        if shutil.which("sacct") is None or not open_jobs(store, "slurm_job"):
            return []
        launcher = cls(sweep, store)
        active = [a for a in launcher.active() if a.attrs.get("slurm_job")]
        launcher.poll()
        return [
            f"{a.attrs.get('row')} seed {a.attrs.get('seed')}: SLURM job {a.attrs['slurm_job']} "
            f"{launcher._job_state(a) or 'unknown to sacct'}"
            for a in active
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.folder = self.cfg.get("folder") or str(
            self.sweep.path.parent / ".ablate" / "slurm" / safe_name(self.sweep.name, fallback="sweep")
        )
        self._states: dict[str, str] = {}
        self._signals: dict[str, int | None] = {}  # the signal that ended each job, as sacct says
        self.submitter = f"{socket.gethostname()}:{os.getpid()}"  # this controller, in submit reservations
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
                    "-o",
                    "JobID,State,ExitCode,DerivedExitCode",
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
        for job, (state, sig) in parse_sacct(out).items():  # the jobs and their steps' signals
            self._states[job], self._signals[job] = state, sig

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
            job = str(a.attrs["slurm_job"])
            now = self.store.get(a.storage_id)  # afresh: the pass's snapshot may predate a claim
            if now.state not in ("WAITING", "RUNNING"):
                continue
            runner = job_of_token(now.attrs.get("token"))
            if now.state == "RUNNING" and runner and runner != job:
                # Two controllers submitted this attempt at once; the other job claimed it and runs it
                # (this one found it held and ended): follow the job that runs it.
                self.store.set_attr(a.storage_id, "slurm_job", runner)
                continue
            if state == "TIMEOUT" and now.state == "RUNNING" and now.silent_s() <= grace:
                continue  # a job that checkpoints at its time limit requeues itself (TIMEOUT -> REQUEUED)
            kind = ended_kind(state, self._signals.get(job))
            self.store.fail(a.storage_id, f"SLURM job {job} {state}", kind)

    def alive(self, attempt: Attempt) -> bool | None:
        state = self._job_state(attempt)
        if state is None:
            return None
        return True if state in _ALIVE else None  # ended: poll() records why; else the heartbeat

    # -- submission ----------------------------------------------------------------------------
    def start(self, waiting: list[Attempt]) -> None:
        # An attempt already given to a job waits for it; poll() fails it if that job ends unstarted.
        todo = self._reserve([a for a in waiting if not a.attrs.get("slurm_job")])
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
            packs = self._packs(attempts)
            try:
                jobs = self._submit(executor, packs)
            except SweepError:  # sbatch refused: free the reservations, so a rerun submits them at once
                for a in todo:
                    self.store.set_attr(a.storage_id, "slurm_submitting", None)
                raise
            for pack, job in zip(packs, jobs):
                for a in pack:
                    self.store.set_attr(a.storage_id, "slurm_job", str(job.job_id))
                self._states[str(job.job_id)] = "PENDING"
                self.submitted.append(str(job.job_id))

    def _reserve(self, attempts: list[Attempt]) -> list[Attempt]:
        """The attempts this controller may submit: under the store's lock, those that no job holds and no
        other controller is submitting (a reservation younger than RESERVE_S), each reserved by it. Two
        controllers on one sweep submitted the same attempt twice without it (found by the chaos run)."""
        if not attempts:
            return []
        mine, now = [], time.time()
        with self.store.lock():
            for a in attempts:
                fresh = self.store.get(a.storage_id)
                held = fresh.attrs.get("slurm_submitting") or [None, 0.0]
                if fresh.state != "WAITING" or fresh.attrs.get("slurm_job"):
                    continue
                if held[0] not in (None, self.submitter) and now - float(held[1]) < RESERVE_S:
                    continue
                self.store.set_attr(a.storage_id, "slurm_submitting", [self.submitter, now])
                mine.append(a)
        return mine

    def _packs(self, attempts: list[Attempt]) -> list[list[Attempt]]:
        """The array's tasks: one attempt each, or up to ``trials_per_device`` sharing one job's device
        (an attempt retried ``alone`` after running out of memory packed gets a job of its own)."""
        k = int(self.cfg.get("trials_per_device", 1))
        alone = [[a] for a in attempts if k == 1 or a.attrs.get("alone")]
        rest = [a for a in attempts if k > 1 and not a.attrs.get("alone")]
        packs = alone + [rest[i : i + k] for i in range(0, len(rest), k)]
        for pack in packs:
            for a in pack if len(pack) > 1 else []:
                self.store.set_attr(a.storage_id, "packed", len(pack))
        return packs

    def _submit(self, executor: Any, packs: list[list[Attempt]]) -> list[Any]:
        """One sbatch of an array of these packs of attempts. When sbatch refuses (no controller reachable, a
        bad partition...), the attempts stay WAITING for a later `ablate sweep` on a working cluster and the
        error is one line quoting sbatch (submitit also prints sbatch's stderr: it is kept out of the way)."""
        from submitit.core.utils import FailedJobError

        url, study = self.store.url, self.store.study_name
        try:
            with contextlib.redirect_stderr(io.StringIO()), executor.batch():
                return [
                    executor.submit(
                        SlurmTrial(url, study, pack[0].storage_id, self.trial_fn)
                        if len(pack) == 1
                        else SlurmPack(url, study, [a.storage_id for a in pack], self.trial_fn)
                    )
                    for pack in packs
                ]
        except FailedJobError as exc:
            said = " ".join(str(exc).split()) or type(exc).__name__
            raise SweepError(
                f"{self.sweep.path}: sbatch refused the jobs: {said!r}; the trials stay waiting: run `ablate sweep` "
                "again where sbatch reaches the cluster (e.g. a login node)"
            ) from None

    def capacity(self) -> int:
        """A search keeps as many trials queued as the array may run at once (array_parallelism, else 4),
        times the trials each job runs."""
        return int(self.cfg.get("array_parallelism") or 4) * int(self.cfg.get("trials_per_device", 1))

    def shutdown(self) -> None:
        """Ctrl-C detaches: the jobs keep running on the cluster; `ablate status` follows them."""
