"""The sweep tests' worker: ``ablate.sweep.launch.worker.main`` with the fake trainer passed in explicitly.

The local launcher runs it in place of ``python -m ablate.sweep.launch.worker`` when a test gives
``worker_command=FAKE_WORKER`` (see sweep_harness.py); nothing in ablate itself knows about it.
"""

from __future__ import annotations

import sys

from fake_trainer import train

from ablate.sweep.launch.worker import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], trial_fn=train))
