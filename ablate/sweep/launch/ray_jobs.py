"""Ray launcher: one Ray job per attempt, through Ray's job API (``ray.job_submission``).

Why jobs, not Ray tasks: a job is a process of its own on a node of the cluster, started from a shell
command, with the resources it asked for reserved while it runs (``entrypoint_num_cpus`` / ``_gpus`` /
``_memory``, fractions included) and Ray's own record of how it ended. The trial then runs exactly as
on the local launcher: ``python -m ablate.sweep.launch.worker`` claims its attempt (token
``ray:<submission id>``), beats, trains, resumes from ``last.ckpt`` and records its end in the store.
Nothing of the trial lives in the controller, so a controller killed and rerun adopts the running jobs
(it reads their ids from the store and asks Ray how they are), like the SLURM launcher.

- **Submission ids**: ``ablate-<sweep>-<storage id>-<random>``, recorded on the attempt under the store's
  lock before the job is submitted: two controllers never submit one attempt twice, and a controller
  killed between the record and the submission resubmits under the recorded id (Ray refuses a
  second job of one id, which is read as "submitted").
- **Resources**: a GPU trial asks ``devices_per_trial / trials_per_device`` GPUs (``trials_per_device``
  packs small trials on one GPU; Ray sets the job's ``CUDA_VISIBLE_DEVICES`` to the GPUs it reserved)
  and ``cpus_per_trial`` CPUs (shared by its DDP ranks); a CPU trial asks ``devices_per_trial /
  trials_per_device`` CPUs and trains with ``devices_per_trial`` threads (OMP/MKL). A trial that needs
  more than the largest node holds is refused before anything is stored.
- **Throttle**: at most ``max_running`` jobs submitted and unfinished (default: as many as the cluster
  holds at once), so a search samples no further ahead than the cluster runs.
- **Environment**: the job sees the controller's ``ABLATE_*``, ``WANDB_*`` and ``PYTHONPATH`` variables,
  and starts in the controller's folder where that folder exists on its node. The store and ``runs:``
  must be reachable from every node: an RDB URL or a shared file system (the dry run says so).
- **Ending**: a job Ray reports ended (FAILED, STOPPED, SUCCEEDED) while its attempt is still open fails
  the attempt with Ray's state and the command that shows its log; a stopped job (``ray job stop``)
  ends as ``interrupted`` by the worker itself and is retried, resuming from its checkpoint.
- **A lost cluster** (its dashboard unreachable for ``LOST_AFTER_S``; a dashboard restart takes seconds):
  the running attempts of the sweep are failed as ``killed`` (their processes died with the cluster; each
  resumes from its checkpoint with no retry spent) and the controller ends in one line; a rerun on a live
  cluster submits them again. Nothing is left RUNNING for the heartbeat's grace period to find.
- **Ctrl-C** stops the jobs this controller submitted (``stop_job``: SIGTERM, the worker records
  ``interrupted``); ``--detach`` leaves them running and ``ablate status`` follows them.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ablate.errors import SweepError
from ablate.rundir import SPAWNED_AT_ENV, safe_name
from ablate.sweep.file.spec import Sweep
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.devices import (
    TRIALS_ON_DEVICE_ENV,
    WITH_TRIAL_FN,
    WORKER_MODULE,
    check_devices,
    check_packing,
    open_jobs,
    shared_needs,
    uses_gpu,
)
from ablate.sweep.launch.registry import LAUNCHERS
from ablate.sweep.store.location import StoreLocation
from ablate.sweep.store.state import Attempt

EXTRA = 'pip install -e ".[ray]"'  # what installs Ray beside ablate
_OPEN = ("PENDING", "RUNNING")  # Ray job states of a job that may still run its attempt
LOST_AFTER_S = 30.0  # a cluster whose dashboard has not answered this long is lost
_PASSED_ENV = ("ABLATE_", "WANDB_", "PYTHONPATH")


def job_client(address: str, where: str) -> Any:
    """Ray's job client for ``address``; one line (SweepError) when Ray is missing or the cluster does not answer."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise SweepError(f"{where}: launcher ray needs Ray, which is not installed here: {EXTRA}") from None
    try:
        return JobSubmissionClient(address)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        said = " ".join(str(exc).split())[:160]
        raise SweepError(
            f"{where}: no Ray cluster answers at address {address!r} ({said}); start one (`ray start --head`) "
            "or set launcher.address to its dashboard, e.g. http://head-node:8265"
        ) from None


def nodes(address: str) -> list[dict[str, float]]:
    """The total resources of each live node of the cluster (CPU, GPU, memory...)."""
    from ray.util.state import list_nodes

    return [dict(n.resources_total) for n in list_nodes(address=address) if n.state == "ALIVE"]


def trial_resources(cfg: Mapping[str, Any], gpu: bool) -> dict[str, float]:
    """What one trial asks Ray for: ``num_cpus``, ``num_gpus`` (fractions when packed), ``memory`` bytes."""
    per, k = int(cfg.get("devices_per_trial", 1)), int(cfg.get("trials_per_device", 1))
    out = {"num_gpus": per / k, "num_cpus": float(cfg.get("cpus_per_trial", 1))} if gpu else {"num_cpus": per / k}
    if cfg.get("memory_gb"):
        out["memory"] = float(cfg["memory_gb"]) * 2**30
    return out


def room(resources: dict[str, float], node_list: list[dict[str, float]]) -> int:
    """How many trials asking ``resources`` the cluster runs at once (each on one node)."""
    key = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}
    total = 0
    for node in node_list:
        fits = [int(node.get(key[k], 0.0) / v + 1e-9) for k, v in resources.items() if v > 0]
        total += min(fits) if fits else 0
    return total


@LAUNCHERS.register("ray")
class RayLauncher(Launcher):
    """Run every trial as a Ray job on a Ray cluster (one job per attempt)."""

    KEYS = {
        "name": "ray",
        "address": "the cluster's dashboard (default auto: the cluster this machine belongs to; or http://head:8265)",
        "devices_per_trial": "GPUs of a GPU trial, CPU threads of a CPU trial (default 1)",
        "trials_per_device": "trials packed on one device: each asks 1/k of it (default 1)",
        "cpus_per_trial": "CPUs a GPU trial asks beside its GPUs (default 1)",
        "memory_gb": "memory a trial asks, in GB (default: none reserved)",
        "max_running": "jobs submitted and unfinished at once (default: what the cluster holds)",
        "python": "the interpreter on the cluster's nodes (default: this one)",
        "poll_s": "seconds between looks at the store and Ray (default 2)",
    }
    poll_s = 2.0
    can_detach = True

    @classmethod
    def validate(cls, cfg: Mapping[str, Any], where: str) -> dict[str, Any]:
        out = super().validate(cfg, where)
        for key in ("devices_per_trial", "trials_per_device", "cpus_per_trial", "memory_gb", "max_running"):
            cls.positive_int(out, key, where)
        address = out.setdefault("address", "auto")
        if not isinstance(address, str) or not (address == "auto" or address.startswith(("http://", "https://"))):
            raise SweepError(
                f"{where}: address must be auto or the dashboard's http://host:8265 (Ray's job API), got {address!r}"
            )
        check_packing(out, where)
        return out

    @classmethod
    def check_trials(cls, sweep: Sweep) -> None:
        check_devices(sweep)  # as on the local launcher: a trial's ranks fit the devices it asks

    @classmethod
    def launch_problem(cls, sweep: Sweep) -> str | None:
        """Ray missing, no cluster at the address, or a trial no node can hold; None when it can launch."""
        where = f"{sweep.path}: launcher ray"
        try:
            job_client(str(sweep.launcher.get("address", "auto")), where)
            node_list = nodes(str(sweep.launcher.get("address", "auto")))
        except SweepError as exc:
            return str(exc)
        for t in sweep.shapes:
            need = trial_resources({**sweep.launcher, **t.resources}, uses_gpu(t.config))
            if room(need, node_list) == 0:
                asked = ", ".join(f"{k}={v:g}" for k, v in need.items())
                return (
                    f"{where}: row {t.row!r} asks {asked} per trial, which no node of the cluster has "
                    f"({len(node_list)} node(s)); lower devices_per_trial or add nodes"
                )
        return None

    @classmethod
    def needs(cls, sweep: Sweep, location: StoreLocation) -> list[str]:
        return shared_needs(sweep, location, "the Ray cluster's nodes", "launcher.python names the interpreter")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = str(self.cfg.get("address", "auto"))
        self._client: Any = None
        self._states: dict[str, str] = {}
        self._room: int | None = None
        self.submitted: list[str] = []
        self.check_trials(self.sweep)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = job_client(self.address, f"{self.sweep.path}: launcher ray")
        return self._client

    # -- job states ----------------------------------------------------------------------------
    def _refresh(self) -> None:
        """One list_jobs call: every job's state by submission id (unknown: the heartbeat decides)."""
        try:
            self._states = {j.submission_id: str(j.status.value) for j in self.client.list_jobs() if j.submission_id}
            self._unreachable_since = None
        except (ConnectionError, RuntimeError, OSError) as exc:
            self._states = {}
            self._unreachable(exc)

    _unreachable_since: float | None = None

    def _unreachable(self, exc: BaseException) -> None:
        """The cluster did not answer: after LOST_AFTER_S of that, it is lost (see the module doc)."""
        now = time.monotonic()
        if self._unreachable_since is None:
            self._unreachable_since = now
        if now - self._unreachable_since < LOST_AFTER_S:
            return
        lost = [a for a in self.active() if a.state == "RUNNING" and a.attrs.get("ray_job")]
        for a in lost:
            self.store.fail(a.storage_id, f"the Ray cluster at {self.address} was lost", "killed")
        said = " ".join(str(exc).split())[:160]
        raise SweepError(
            f"{self.sweep.path}: the Ray cluster at {self.address} has not answered for {LOST_AFTER_S:.0f} s ({said}); "
            f"{len(lost)} running trial(s) marked lost (each resumes from its checkpoint, no retry spent): start the "
            f"cluster and run `ablate sweep {self.sweep.path}` again"
        )

    def _job(self, attempt: Attempt) -> str | None:
        job = attempt.attrs.get("ray_job")
        return self._states.get(str(job)) if job else None

    def poll(self) -> None:
        self._refresh()
        for a in self.active():
            state, job = self._job(a), a.attrs.get("ray_job")
            if state is None or state in _OPEN or self.store.get(a.storage_id).state not in ("WAITING", "RUNNING"):
                continue
            kind = "cancelled" if state == "STOPPED" else "crashed"
            self.store.fail(a.storage_id, f"Ray job {job} ended {state} (log: ray job logs {job})", kind)

    def alive(self, attempt: Attempt) -> bool | None:
        return True if self._job(attempt) in _OPEN else None

    def capacity(self) -> int:
        if self.cfg.get("max_running"):
            return int(self.cfg["max_running"])
        if self._room is None:
            gpu = any(uses_gpu(t.config) for t in self.sweep.shapes)
            try:
                self._room = max(1, room(trial_resources(self.cfg, gpu), nodes(self.address)))
            except (ConnectionError, RuntimeError, OSError):
                return 1
        return self._room

    # -- submission ----------------------------------------------------------------------------
    def start(self, waiting: list[Attempt]) -> None:
        in_flight = sum(1 for a in self.active() if self._job(a) in _OPEN)
        for a in waiting:
            if self._job(a) in _OPEN:
                continue  # submitted: Ray runs it when it has room
            if in_flight >= self.capacity():
                return
            job = self._reserve(a)
            if job is None:
                continue  # another controller took it
            if not self._submit(a, job):
                return  # the cluster did not answer: no more submissions this pass
            self.started.add(a.ablate_id)
            in_flight += 1

    def _reserve(self, a: Attempt) -> str | None:
        """The attempt's submission id: recorded under the store's lock (a new one), or the one it has."""
        with self.store.lock():
            now = self.store.get(a.storage_id)
            if now.state != "WAITING":
                return None
            if now.attrs.get("ray_job"):
                return str(now.attrs["ray_job"])
            job = f"ablate-{safe_name(self.sweep.name, fallback='sweep')}-{a.storage_id}-{uuid.uuid4().hex[:8]}"
            self.store.set_attr(a.storage_id, "ray_job", job)
            return job

    def _submit(self, a: Attempt, job: str) -> bool:
        spec = next((t for t in self.sweep.trials if t.trial_id == a.ablate_id), None)
        gpu = uses_gpu(spec.config) if spec is not None else False
        packed = 1 if a.attrs.get("alone") else int(self.cfg.get("trials_per_device", 1))
        need = trial_resources({**self.cfg, **(spec.resources if spec else {}), "trials_per_device": packed}, gpu)
        per = int(self.cfg.get("devices_per_trial", 1))  # a GPU trial's ranks share its CPUs
        threads = str(max(1, int(self.cfg.get("cpus_per_trial", 1)) // per if gpu else per))
        env = {k: v for k, v in os.environ.items() if k.startswith(_PASSED_ENV)}
        env.update({v: threads for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
        env[SPAWNED_AT_ENV] = repr(time.time())
        env[TRIALS_ON_DEVICE_ENV] = str(packed)
        if packed > 1:
            self.store.set_attr(a.storage_id, "packed", packed)
        kwargs = {"entrypoint_num_cpus": need["num_cpus"], "entrypoint_num_gpus": need.get("num_gpus")}
        if "memory" in need:
            kwargs["entrypoint_memory"] = int(need["memory"])
        try:
            self.client.submit_job(
                entrypoint=self.entrypoint(a, job), submission_id=job, runtime_env={"env_vars": env}, **kwargs
            )
        except (ConnectionError, OSError) as exc:  # the cluster is not answering: the next passes tell
            self._unreachable(exc)  # whether it is lost; the attempt stays WAITING under its recorded id
            return False
        except RuntimeError as exc:
            if "already exists" not in str(exc):  # a resubmission of a recorded id: it is Ray's already
                said = " ".join(str(exc).split())[-200:]
                raise SweepError(f"{self.sweep.path}: Ray refused job {job}: {said}; the trial stays waiting") from None
        self._states[job] = "PENDING"
        self.submitted.append(job)
        return True

    def entrypoint(self, a: Attempt, job: str) -> str:
        """The shell command a job runs: the worker, in the controller's folder where the node has it."""
        python = str(self.cfg.get("python") or sys.executable)
        head = [python, "-c", WITH_TRIAL_FN, str(self.trial_fn)] if self.trial_fn else [python, "-m", WORKER_MODULE]
        args = ["--url", self.store.url, "--study", self.store.study_name, "--trial", str(a.storage_id)]
        cwd = shlex.quote(os.getcwd())
        return f"cd {cwd} 2>/dev/null; exec {shlex.join([*head, *args, '--token', f'ray:{job}'])}"

    def shutdown(self) -> None:
        """Ctrl-C: stop the jobs this controller submitted (each records ``interrupted`` and resumes later)."""
        mine = [a for a in self.active() if a.ablate_id in self.started and a.attrs.get("ray_job")]
        for a in mine:
            try:
                self.client.stop_job(str(a.attrs["ray_job"]))
            except (ConnectionError, RuntimeError, OSError):
                continue
        deadline = time.time() + 20
        while mine and time.time() < deadline:
            self._refresh()
            if all(self._job(a) not in _OPEN for a in mine):
                break
            time.sleep(0.5)
        for a in mine:
            if self.store.get(a.storage_id).state in ("WAITING", "RUNNING"):
                self.store.fail(a.storage_id, "interrupted (Ctrl-C); resumes from its checkpoint", "interrupted")

    @classmethod
    def reap_detached(cls, sweep: Sweep, store: Any) -> list[str]:
        """``ablate status``: record the jobs Ray says ended, as a controller's poll would; Ray's view of
        each open attempt's job, one line each."""
        if not open_jobs(store, "ray_job"):  # one light read: most sweeps never ran on Ray
            return []
        launcher = cls(sweep, store)
        active = [a for a in launcher.active() if a.attrs.get("ray_job")]
        try:
            launcher.poll()
        except SweepError as exc:  # no cluster answers: the heartbeat shows what it can
            return [str(exc)]
        return [
            f"{a.attrs.get('row')} seed {a.attrs.get('seed')}: Ray job {a.attrs['ray_job']} "
            f"{launcher._job(a) or 'unknown to Ray'}"
            for a in active
        ]
