"""Launchers: where a sweep's trials run. ``LAUNCHERS`` maps a sweep file's ``launcher.name`` to a class.

``local`` runs trials as subprocesses on this machine; ``slurm`` submits them as job arrays through
submitit. Both share the controller loop of :mod:`ablate.sweep.launch.base`.
"""

from ablate.registry import Registry

LAUNCHERS: Registry = Registry("launcher", "where a sweep's trials run (sweep file: launcher.name)")

# Registration happens on import; submitit itself is imported only when a SLURM sweep starts.
from ablate.sweep.launch import local, slurm  # noqa: E402,F401
