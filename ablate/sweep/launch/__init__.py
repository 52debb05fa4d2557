"""Launchers: where a sweep's trials run. ``LAUNCHERS`` maps a sweep file's ``launcher.name`` to a class.

``local`` runs trials as subprocesses on this machine; ``slurm`` submits them as job arrays through
submitit; ``ray`` submits each as a Ray job to a Ray cluster. All share the controller loop of
:mod:`ablate.sweep.launch.base`, which holds one plan (:class:`ablate.sweep.plan.SweepPlan`) and never
asks which kind. Importing this package registers all three (submitit and Ray themselves are imported
only when a sweep of theirs starts). The launch room imports the plan, store and sweep-file rooms below
it, never the commands above it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.spec import SweepFile, Trial
from ablate.sweep.launch import local, ray_jobs, slurm
from ablate.sweep.launch.registry import LAUNCHERS

__all__ = ["LAUNCHERS", "check_launcher", "local", "ray_jobs", "slurm"]


def check_launcher(sf: SweepFile, trials: Iterable[Trial] = ()) -> dict[str, Any]:
    """The sweep's ``launcher:`` checked by its launcher class (and each row's ``resources:``).

    Called before anything is stored or launched; returns the checked launcher settings.
    """
    where = f"{sf.path}: launcher"
    name = sf.launcher["name"]
    if name not in LAUNCHERS:
        raise SweepError(f"{where}: {LAUNCHERS.unknown_message(name)}")
    cls = LAUNCHERS.get(name)
    checked = cls.validate(dict(sf.launcher), where)
    for t in trials:
        if t.resources:
            cls.validate({**checked, **t.resources}, f"{sf.path}: row {t.row!r}: resources")
    return checked
