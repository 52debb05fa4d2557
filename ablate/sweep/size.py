"""How big a sweep is, counted before any trial is built: the trial limit and what the commands say.

`ablate sweep` refuses a sweep of more than :data:`MAX_TRIALS` trials unless ``--max-trials`` confirms
the number (a typo in a grid can multiply a sweep a hundredfold); the reading commands refuse, in one
line, a file that expands past it at a size that never ran. Each row's config is composed and checked
on its own (about 0.5 ms on 2 cores), so a sweep of thousands of rows says so before the wait.
"""

from __future__ import annotations

import sys

from ablate.errors import SweepError
from ablate.sweep.file.expand import EXPANDED_ATTR, count_row, count_trials
from ablate.sweep.file.spec import SweepFile
from ablate.sweep.store.store import SweepStore

# `ablate sweep` refuses a sweep of more trials than this unless --max-trials says how many are meant.
MAX_TRIALS = 500


def check_size(sf: SweepFile, max_trials: int) -> int:
    """The sweep's trial count, counted before anything is built; above ``max_trials`` a SweepError."""
    n, per_row = count_trials(sf.rows, len(sf.seeds))
    if n > max_trials:
        big = ", ".join(f"{name!r} {k:,}" for name, k in per_row[:3])
        raise SweepError(
            f"{sf.path}: the sweep expands to {n:,} trials (largest rows: {big}; {len(sf.seeds)} seed(s)), "
            f"over the limit of {max_trials:,}; check grid:/seeds, or pass --max-trials {n} to confirm"
        )
    return n


def check_read_size(sf: SweepFile, store: SweepStore) -> None:
    """What `ablate sweep` refuses (over MAX_TRIALS without --max-trials) and never ran at this size,
    status, table and the other reading commands refuse too, with one line, before building its trials
    (a 100,002-trial grid kept them busy past a minute). A sweep that ran at this size or larger,
    confirmed by --max-trials, is read; so is a store that predates the record of that size."""
    n, _ = count_trials(sf.rows, len(sf.seeds))
    if n <= MAX_TRIALS:
        return
    if not store.exists():
        ran = "has not run"
    else:
        size = store.study_attrs().get(EXPANDED_ATTR)
        if not isinstance(size, int) or n <= size:
            return
        ran = f"ran at {size:,} (the file has grown since)"
    raise SweepError(
        f"{sf.path}: the sweep expands to {n:,} trials, over the limit of {MAX_TRIALS:,}, and {ran}; check "
        f"grid:/seeds, or see it with `ablate sweep {sf.path} --dry-run --max-trials {n}` and run it with "
        f"--max-trials {n}"
    )


# Rows whose configs take long enough to compose and check (about 0.5 ms each on 2 cores) to say so first.
LONG_EXPANSION_ROWS = 4_000


def say_long_expansion(sf: SweepFile) -> None:
    """One line on stderr before a sweep of many rows is expanded: each row's config is composed and
    checked on its own (50,001 rows: 18 s of `ablate status`), so a long silence is explained."""
    rows = sum(count_row(r) for r in sf.rows)
    if rows >= LONG_EXPANSION_ROWS:
        print(f"{sf.path}: composing and checking the configs of {rows:,} rows ...", file=sys.stderr, flush=True)
