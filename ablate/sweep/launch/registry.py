"""The launcher registry: a sweep file's ``launcher.name`` -> a :class:`~ablate.sweep.launch.base.Launcher`.

Defined on its own so the launchers can register themselves without importing the package that
lists them (``ablate.sweep.launch`` imports the built-in ones, which import this).
"""

from ablate.registry import Registry

LAUNCHERS: Registry = Registry("launcher", "where a sweep's trials run (sweep file: launcher.name)")
