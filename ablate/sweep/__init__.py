"""ablate.sweep: run every trial of a sweep file once, durably, on this machine or on SLURM.

One direction, no module importing its callers::

    spec.py (YAML -> Sweep/trials, pure) -> loader.py (plugins.py, launch registry check, overrides)
      -> store.py (Optuna storage) + state.py (TrialView: the one trial-state view)
      -> launch/ (registry.py, base.py controller loop, local.py, slurm.py; cost.py orders trials)
      -> worker.py (one claimed trial -> the trainer -> metrics or failure back to the store)

commands.py holds the `sweep`, `status` and `sync` verbs. Nothing here imports ablate.report: the
CLI runs a sweep and then hands the Sweep it ran to the report.
"""
