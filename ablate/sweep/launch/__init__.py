"""Launchers: where a sweep's trials run. ``LAUNCHERS`` maps a sweep file's ``launcher.name`` to a class.

``local`` runs trials as subprocesses on this machine; ``slurm`` submits them as job arrays through
submitit; ``ray`` submits each as a Ray job to a Ray cluster. All share the controller loop of
:mod:`ablate.sweep.launch.base`, which holds one plan (:class:`ablate.sweep.plan.base.Plan`) and never
asks which kind. Importing this package registers all three (submitit and Ray themselves are imported
only when a sweep of theirs starts). The launch room imports the plan, store and sweep-file rooms below
it, never the commands above it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.spec import SweepFile, Trial
from ablate.sweep.launch import local, ray_jobs, slurm
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.registry import LAUNCHERS

__all__ = ["LAUNCHERS", "check_launcher", "check_resources", "local", "ray_jobs", "slurm"]


def check_launcher(sf: SweepFile) -> tuple[type[Launcher], dict[str, Any]]:
    """The class of the sweep's ``launcher:`` and the settings it checked.

    Called once, before anything is stored or launched; the opened sweep keeps the class, so no command
    looks it up again (:class:`ablate.sweep.loader.OpenSweep`).
    """
    where = f"{sf.path}: launcher"
    name = sf.launcher["name"]
    if name not in LAUNCHERS:
        raise SweepError(f"{where}: {LAUNCHERS.unknown_message(name)}")
    cls = LAUNCHERS.get(name)
    return cls, cls.validate(dict(sf.launcher), where)


def check_resources(sf: SweepFile, cls: type[Launcher], checked: Mapping[str, Any], trials: Iterable[Trial]) -> None:
    """Each trial's ``resources:`` (its row's) checked by the launcher class over the ``checked`` settings
    (:func:`check_launcher`'s); called once the rows are expanded into trials."""
    for t in trials:
        if t.resources:
            cls.validate({**checked, **t.resources}, f"{sf.path}: row {t.row!r}: resources")
