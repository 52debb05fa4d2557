"""Local launcher: N slots on this machine, one subprocess per trial.

A slot is a CPU core (CPU trials) or a GPU. A trial takes ``devices_per_trial`` slots and sees only
those: ``CUDA_VISIBLE_DEVICES`` for GPUs, ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` (torch's intra-op
threads) for CPU cores. Each trial runs as ``python -m ablate.sweep.launch.worker`` in its own process group,
so a crash or a kill -9 of a trial cannot take the sweep down, and Ctrl-C can stop a trial with
everything it spawned (DataLoader workers, DDP ranks). With ``trial_fn`` set (the launcher contract,
the sweep tests' stand-in trainer: the one knob every launcher has), the worker trains with that
function in place of the trainer.
GPU or CPU is decided by :func:`ablate.devices.device_kind`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ablate.errors import SweepError
from ablate.rundir import SPAWNED_AT_ENV
from ablate.sweep.file.spec import Sweep
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.devices import (
    TRIALS_ON_DEVICE_ENV,
    WITH_TRIAL_FN,
    WORKER_MODULE,
    check_devices,
    check_packing,
    pick_seats,
    uses_gpu,
)
from ablate.sweep.launch.registry import LAUNCHERS
from ablate.sweep.store.state import Attempt

WORKER_COMMAND = (sys.executable, "-m", WORKER_MODULE)

# Signals that end a worker from outside (kill -9, kill, Ctrl-C to its group, a closed terminal): a worker
# dead by one of these without a word was killed, not crashed, and resumes without spending a retry
# (ablate.sweep.store.state.free_retry). SIGSEGV, SIGABRT and exit codes stay crashes.
KILLS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


# launcher.slots may reach this many per CPU core here. A slot is a worker process (torch and Lightning
# imported: some 0.3-0.5 GB each) and a CPU trial's threads are the cores over the slots, so slots past the
# cores only oversubscribe them; a few per core still serve small or waiting trials (trials_per_device packs
# them on purpose), while hundreds on a laptop would exhaust its memory before any trial learned anything.
SLOTS_PER_CORE = 4


def _device_count(gpu: bool) -> int:
    if gpu:
        import torch

        return max(1, torch.cuda.device_count())
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


@dataclass
class _Child:
    proc: subprocess.Popen[bytes]
    devices: list[int]
    attempt: Attempt


@LAUNCHERS.register("local")
class LocalLauncher(Launcher):
    """Run trials as subprocesses on this machine, several at once (slots = cores or GPUs)."""

    KEYS = {
        "name": "local",
        "slots": "devices to share out (default: GPUs if the trials use them, else CPU cores)",
        "devices_per_trial": "slots one trial takes (threads on CPU, GPUs on GPU; default 1)",
        "trials_per_device": "trials sharing one slot (packing small trials; default 1)",
        "poll_s": "seconds between looks at the store (default 1)",
    }

    @classmethod
    def validate(cls, cfg: Mapping[str, Any], where: str) -> dict[str, Any]:
        out = super().validate(cfg, where)
        for key in ("slots", "devices_per_trial", "trials_per_device"):
            cls.positive_int(out, key, where)
        check_packing(out, where)
        if out.get("slots") and out.get("devices_per_trial", 1) > out["slots"]:
            raise SweepError(f"{where}: devices_per_trial={out['devices_per_trial']} exceeds slots={out['slots']}")
        return out

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gpu = any(uses_gpu(t.config) for t in self.sweep.shapes)
        self.slots = int(self.cfg.get("slots") or _device_count(self.gpu))
        self.per_trial = int(self.cfg.get("devices_per_trial", 1))
        if self.per_trial > self.slots:
            raise SweepError(
                f"{self.sweep.path}: launcher.devices_per_trial={self.per_trial} but this machine has "
                f"{self.slots} {'GPUs' if self.gpu else 'CPU cores'}; lower it or set launcher.slots"
            )
        self.check_trials(self.sweep)
        self.per_device = int(self.cfg.get("trials_per_device", 1))
        self.free = [d for d in range(self.slots) for _ in range(self.per_device)]  # a seat per packed trial
        self.children: dict[int, _Child] = {}
        self.token_base = f"local:{socket.gethostname()}:{os.getpid()}"
        self._last_beat = 0.0

    @classmethod
    def check_trials(cls, sweep: Sweep) -> None:
        check_devices(sweep)
        slots, cores = sweep.launcher.get("slots"), _device_count(False)
        if slots and slots > SLOTS_PER_CORE * cores:
            raise SweepError(
                f"{sweep.path}: launcher.slots={slots} is more than {SLOTS_PER_CORE} worker processes per CPU core "
                f"of this machine ({cores} cores); lower it (trials_per_device packs small trials onto a slot)"
            )

    def busy(self) -> bool:
        return bool(self.children)

    def wait(self, seconds: float) -> None:
        """Sleep, but wake within a quarter second of a worker's exit (its slot is free: start the next)
        or of a Ctrl-C."""
        end = time.monotonic() + seconds
        while not self.stopping() and (left := end - time.monotonic()) > 0:
            if any(child.proc.poll() is not None for child in self.children.values()):
                return
            time.sleep(min(0.25, left))

    def capacity(self) -> int:
        return max(1, self.slots * self.per_device // self.per_trial)

    def alive(self, attempt: Attempt) -> bool | None:
        """A child of this controller lives while its process does; a worker of a dead controller of this
        machine is dead once its process is gone and it has missed two heartbeats (it would have
        recorded an end: it was lost, and is reaped now rather than after the heartbeat's grace; the two
        beats keep a worker whose process this controller cannot see, in another container of the same
        host name, from being taken for dead); anything else: the heartbeat decides."""
        child = self.children.get(attempt.storage_id)
        if child is not None:
            return True if child.proc.poll() is None else None
        parts = str(attempt.attrs.get("token", "")).split(":")
        if parts[:2] == ["local", socket.gethostname()] and len(parts) > 2 and not _pid_alive(parts[2]):
            pid = attempt.attrs.get("worker_pid")  # not yet recorded: the heartbeat decides
            missed = attempt.silent_s() > 2 * float(self.sweep.heartbeat["interval_s"])
            return False if pid is not None and not _pid_alive(pid) and missed else None
        return None

    def start(self, waiting: list[Attempt]) -> None:
        held = self._orphan_devices() if waiting else set()
        for a in waiting:
            seats = pick_seats(
                [d for d in self.free if d not in held], self.per_trial, self.per_device, bool(a.attrs.get("alone"))
            )
            if seats is None:
                if a.attrs.get("alone"):
                    continue  # a device of its own frees up later; smaller trials go first
                return
            token = f"{self.token_base}:{a.storage_id}"
            if not self.store.claim(a.storage_id, token):
                continue  # another controller took it
            self.started.add(a.ablate_id)
            for d in seats:
                self.free.remove(d)
            self.children[a.storage_id] = _Child(self._spawn(a, token, seats), seats, a)

    def _orphan_devices(self) -> set[int]:
        """Slots still held by live workers of a controller of this machine that died (kill -9 of the
        controller: its workers run on in their own sessions, beat, and record their results).

        Counted against this controller's slots, or a rerun ran 3 trials on 2 slots until they ended.
        A worker counts while its process lives and its heartbeat is fresh; workers of a live controller
        are that controller's to count. Their own slots (``devices``) when recorded, else the first free.
        """
        host, grace = socket.gethostname(), float(self.sweep.heartbeat["grace_s"])
        held: set[int] = set()
        for a in self.active():
            parts = str(a.attrs.get("token", "")).split(":")
            if a.state != "RUNNING" or a.storage_id in self.children or parts[:2] != ["local", host]:
                continue
            if _pid_alive(parts[2]) or not _pid_alive(a.attrs.get("worker_pid")) or a.silent_s() > grace:
                continue
            mine = [d for d in a.attrs.get("devices") or [] if d in self.free and d not in held]
            if len(mine) < self.per_trial:
                mine = [d for d in self.free if d not in held][: self.per_trial]
            held.update(mine)
        return held

    def _spawn(self, a: Attempt, token: str, seats: list[int]) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        devices = sorted(set(seats))
        if self.gpu:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(d) for d in devices)
            threads = max(1, _device_count(False) // self.capacity())
        else:
            threads = len(devices)
        packed = 1 if a.attrs.get("alone") else self.per_device
        env[TRIALS_ON_DEVICE_ENV] = str(packed)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = str(threads)
        env[SPAWNED_AT_ENV] = repr(time.time())  # the trial's start-up (imports, ...) counts from here
        run_dir = Path(a.attrs["run_dir"])
        run_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            *((sys.executable, "-c", WITH_TRIAL_FN, str(self.trial_fn)) if self.trial_fn else WORKER_COMMAND),
            "--url",
            self.store.url,
            "--study",
            self.store.study_name,
            "--trial",
            str(a.storage_id),
            "--token",
            token,
        ]
        with open(run_dir / "worker.log", "ab") as log:
            log.write(f"\n== attempt {a.attempt} (trial #{a.number}) {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
            log.flush()
            # A new session: a Ctrl-C at the terminal reaches the controller only, which then stops
            # each trial with SIGTERM to its whole process group (DataLoader workers included).
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.store.set_attr(a.storage_id, "worker_pid", proc.pid)
        self.store.set_attr(a.storage_id, "devices", devices)
        if packed > 1:
            self.store.set_attr(a.storage_id, "packed", packed)
        return proc

    def poll(self) -> None:
        beat = time.time() - self._last_beat >= float(self.sweep.heartbeat["interval_s"])
        for sid, child in list(self.children.items()):
            code = child.proc.poll()
            if code is None:
                # Beat for a live child too: a worker that is still importing torch on a loaded
                # machine must not look dead to another controller sharing the store.
                if beat:
                    self.store.set_attr(sid, "heartbeat", time.time())
                continue
            del self.children[sid]
            self.free = sorted(self.free + child.devices)
            now = self.store.get(sid)
            if now.state == "RUNNING":  # the worker died before it could record anything
                how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
                log = Path(now.attrs["run_dir"]) / "worker.log"
                self.store.fail(sid, f"worker {how} (log: {log})", "killed" if -code in KILLS else "crashed")
        if beat:
            self._last_beat = time.time()

    def shutdown(self) -> None:
        # A second Ctrl-C or SIGTERM must not orphan children while they are stopped
        old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for child in self.children.values():
                _signal_group(child.proc, signal.SIGTERM)
            deadline = time.time() + 20
            for child in self.children.values():
                try:
                    child.proc.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    _signal_group(child.proc, signal.SIGKILL)
                    child.proc.wait()
            for sid in list(self.children):
                if self.store.get(sid).state == "RUNNING":
                    self.store.fail(sid, "interrupted (Ctrl-C); resumes from its checkpoint", "interrupted")
            self.children.clear()
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)


def _pid_alive(pid: Any) -> bool:
    """Whether a process with this id exists on this machine (False for a missing or bad id)."""
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped by its parent) is dead
        return Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
