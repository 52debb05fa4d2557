"""The store room: a sweep's attempts on Optuna storage (SQLite, a journal file, any SQLAlchemy URL).

:class:`~ablate.sweep.store.store.SweepStore` creates, claims, beats, finishes and reaps attempts;
:mod:`~ablate.sweep.store.state` decides what a trial's attempts amount to. It returns attempts and
knows no policy: which trials a sweep has beyond its file (a search's samples, adaptive seeds) is the
plan room's to say (:func:`ablate.sweep.plan.trial_states`). Imports only the sweep-file room.
"""
