"""What trials need of the machines they run on: devices and their places, the worker command, shared files.

Shared by the launchers (the controller loop is :mod:`ablate.sweep.launch.base`): which trials use GPUs,
how a trial's process is started, the rule that a trial's ranks fit the devices it is given, packing
(``trials_per_device``: several one-device trials sharing a device, each in one of its places), and the
lines the dry run prints for a launcher whose trials run on other machines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.spec import Sweep
from ablate.sweep.store.location import StoreLocation


def shared_needs(sweep: Sweep, location: StoreLocation, nodes: str, env_hint: str) -> list[str]:
    """The dry run's lines for a launcher whose trials run on other machines: the store (at ``location``,
    the opened sweep's), the runs folder and ablate itself must be there too."""
    url = location.url
    if location.file is not None:
        store = f"the store ({url}) on a file system {nodes} share (or a database URL: store: postgresql://...)"
    else:
        store = f"the store ({url}) reachable from {nodes}"
    return [
        store,
        f"runs: ({sweep.runs_dir}) on a file system {nodes} share (checkpoints, logs, metrics)",
        f"ablate and its packages installed where the trials start ({env_hint})",
    ]


WORKER_MODULE = "ablate.sweep.launch.worker"  # what a trial's process runs (python -m)
# The worker with ``trial_fn`` ("module:function", argv[1]) in place of the trainer.
WITH_TRIAL_FN = (
    "import sys; from ablate.sweep.launch.worker import load_trial_fn, main; "
    "sys.exit(main(sys.argv[2:], trial_fn=load_trial_fn(sys.argv[1])))"
)


def uses_gpu(config: Mapping[str, Any]) -> bool:
    """Whether a trial of this config trains on GPUs (:func:`ablate.devices.device_kind`)."""
    from ablate.devices import device_kind

    return device_kind(config.get("trainer", {}).get("accelerator")) == "gpu"


def check_devices(sweep: Sweep) -> None:
    """A trial may not ask for more devices than ``launcher.devices_per_trial`` gives it: on CPU its DDP
    ranks would share one core, on GPU it would see fewer GPUs than it starts ranks for."""
    per_trial = int(sweep.launcher.get("devices_per_trial", 1))
    for t in sweep.shapes:
        asked = t.config.get("trainer", {}).get("devices", 1)
        n = len(asked) if isinstance(asked, list) else asked
        if isinstance(n, int) and not isinstance(n, bool) and n > per_trial:
            raise SweepError(
                f"{sweep.path}: row {t.row!r} sets trainer.devices={asked} but launcher.devices_per_trial="
                f"{per_trial}; set launcher.devices_per_trial: {n} (or lower trainer.devices)"
            )


# How many trials share the device a trial runs on (1: it has the device to itself), for the trainer's log.
TRIALS_ON_DEVICE_ENV = "ABLATE_TRIALS_ON_DEVICE"


def open_jobs(store: Any, attr: str) -> bool:
    """Whether a waiting or running attempt of the store was given to a scheduler's job (``attr``: the
    attribute its launcher records, e.g. ``slurm_job``); one read of the attempts, no trial views."""
    return store.exists() and any(a.attrs.get(attr) for a in store.attempts() if a.state in ("WAITING", "RUNNING"))


def check_packing(cfg: Mapping[str, Any], where: str) -> None:
    """``trials_per_device`` > 1 packs trials of one device each: it cannot combine with devices_per_trial."""
    if cfg.get("trials_per_device", 1) > 1 and cfg.get("devices_per_trial", 1) > 1:
        raise SweepError(f"{where}: trials_per_device > 1 packs one-device trials; set devices_per_trial: 1")


def pick_seats(free: list[int], per_trial: int, per_device: int, alone: bool = False) -> list[int] | None:
    """The seats (device ids, one per packed place) an attempt takes from the free ones, or None.

    ``free`` lists each device once per free place on it (``trials_per_device`` places per device). A
    trial takes ``per_trial`` devices, the emptiest first (fewest neighbours; the lowest id on a tie); an
    attempt ``alone`` (retried after running out of memory packed) takes every place of one
    device that is wholly free.
    """
    places = Counter(free)
    if alone:
        whole = sorted(d for d, n in places.items() if n >= per_device)
        return [whole[0]] * per_device if whole else None
    emptiest = sorted(places, key=lambda d: (-places[d], d))
    return emptiest[:per_trial] if len(emptiest) >= per_trial else None
