"""ablate.sweep: run every trial of a sweep file once, durably, on this machine, on SLURM or on Ray.

Four rooms, arrows one way (``tests/test_architecture_rooms.py`` checks them)::

    commands.py, dry_run.py, loader.py   the verbs: sweep (and its dry run), status, sync; opening a sweep
                                          and the checks of this machine (loader.py); efficiency.py, wandb_net.py
      -> launch/   where trials run: base.py (the controller loop), local.py, slurm.py (+ slurm_job.py, the job's
                   side; slurm_queue.py), ray_jobs.py (a Ray job per attempt), devices.py, registry.py,
                   worker.py (one claimed attempt -> the trainer -> the store), progress.py, contract.py
      -> plan/     what runs next: base.py (the Plan interface and its registry), grid.py, search.py,
                   adaptive.py (seeds), plans.py (the plans of one sweep as one); cost.py, budgets.py
      -> store/    the durable store: store.py (Optuna storage), state.py (the one trial-state view),
                   reads.py / sql_reads.py, opening.py, location.py, patience.py (a server that stops
                   answering), reuse.py; it knows no policy
      -> file/     the sweep file, pure: spec.py (YAML -> Sweep and trials), spec_checks.py, expand.py,
                   ids.py, search_spec.py, seeds_spec.py, plugins.py

Nothing here imports ablate.report: the CLI runs a sweep and then hands the Sweep it ran to the report.
"""
