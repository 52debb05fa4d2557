"""``ablate`` as a subprocess whose launchers run the fake trainer (kill -9, two controllers, Ctrl-C).

Usage: ``python fake_controller.py sweep FILE ...`` - the same arguments as ``ablate``. The fake
trainer is injected through the launchers' own settings (the local launcher's worker command, the
SLURM launcher's trial function), as a test in-process does with the ``fake_trainer`` fixture.
"""

from __future__ import annotations

import sys

from sweep_harness import use_fake_trainer

from ablate.cli import main

if __name__ == "__main__":
    use_fake_trainer()
    sys.exit(main(sys.argv[1:]))
