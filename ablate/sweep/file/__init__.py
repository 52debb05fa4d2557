"""The sweep-file room: a sweep file read, checked and expanded into trials with stable ids. Pure.

:mod:`~ablate.sweep.file.spec` is the entry (``load_sweep``); the checks, the expansion of rows into
configs, the trial ids and the ``search:`` / ``seeds:`` blocks each have a file of their own. Nothing
here touches a store or starts a process; every mistake is a :class:`~ablate.errors.SweepError`
naming the file and the key.

The built-in blocks (``search:``, ``seeds: {start, max}``) register here, with the room: a sweep file read
through any of its modules knows them.
"""

from ablate.sweep.file import search_block, seeds_spec  # noqa: F401 - registers the built-in blocks
