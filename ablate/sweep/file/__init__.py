"""The sweep-file room: a sweep file read, checked and expanded into trials with stable ids. Pure.

:mod:`~ablate.sweep.file.spec` is the entry (``load_sweep``); the checks, the expansion of rows into
configs, the trial ids and the ``search:`` / ``seeds:`` blocks each have a file of their own. Nothing
here touches a store or starts a process; every mistake is a :class:`~ablate.errors.SweepError`
naming the file and the key.
"""
