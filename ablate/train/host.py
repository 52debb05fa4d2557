"""Host set-up of a training process: keep freed memory in the process (glibc malloc).

glibc serves every allocation above its mmap threshold (128 KiB at start, adapting up to 32 MiB) with a
fresh ``mmap`` and returns it to the OS on free, so each training step's large activations (logits
chunks, FFN and attention buffers of a 4k-token batch: 8-64 MiB each) are page-faulted in anew, every
step. Measured on this 2-core CPU: allocating and filling a 64 MiB tensor took 20 ms against 2-3 ms with
the memory kept; a mini-model training step (4k tokens) ran 7-10% faster with it
(benchmarks/bench_vs_plain.py, each contender in its own process). The same effect is why CPU training
guides recommend jemalloc or tcmalloc; this needs neither. The cost: the process keeps its peak heap
instead of returning it between steps, which a training process reaches every step anyway.

:func:`train` calls :func:`keep_freed_memory` once; ``ABLATE_KEEP_FREED_MEMORY=0`` turns it off.
Elsewhere (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

ENV = "ABLATE_KEEP_FREED_MEMORY"
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_LIMIT = 2**31 - 1  # mallopt takes an int: 2 GiB, above any single activation here


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds; True if both took effect."""
    if os.environ.get(ENV, "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # musl's mallopt is a stub that returns 0: nothing changes there
    return bool(mallopt(_M_MMAP_THRESHOLD, _LIMIT)) and bool(mallopt(_M_TRIM_THRESHOLD, _LIMIT))
