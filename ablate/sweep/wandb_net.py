"""Is the W&B server reachable? One short TCP probe per sweep, before any trial starts.

With an API key and no network ``wandb.init`` stalls ~90 s and then fails (measured with wandb 0.31), once per
trial attempt. So a sweep whose trials would log online probes the server once (a TCP connect to
``WANDB_BASE_URL``, default https://api.wandb.ai, 3 s timeout): when it cannot be reached, trials
that chose online by the ``auto`` rule log offline instead (``WANDB_MODE=offline`` in the controller's
environment, which local workers and SLURM jobs inherit and :func:`ablate.tracking.wandb_mode`
honours), with one warning line; a sweep that asks for ``online`` explicitly stops with one line.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable
from urllib.parse import urlsplit

from ablate.errors import SweepError
from ablate.tracking import wandb_mode

PROBE_TIMEOUT_S = 3.0


def endpoint() -> tuple[str, str, int]:
    """(netloc as written, host, port) of ``WANDB_BASE_URL``."""
    url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    parts = urlsplit(url if "://" in url else f"https://{url}")
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.netloc or url, parts.hostname or url, port or (80 if parts.scheme == "http" else 443)


def unreachable(timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the W&B server opens within ``timeout_s``; else why not (one line)."""
    _, host, port = endpoint()
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return None


def resolve_modes(
    settings: Iterable[str | None], where: str, sync_hint: str, fix: str = "wandb: {mode: offline}"
) -> str | None:
    """Probe once when any of the W&B ``settings`` (``logging.wandb`` of the trials, the sweep's
    ``wandb.mode``) comes out online; returns the warning printed when falling back to offline.
    ``fix``: the setting that logs offline, as the user would write it where ``where`` points."""
    settings = {s or "auto" for s in settings}
    if not any(wandb_mode(s) == "online" for s in settings):
        return None
    why = unreachable()
    if why is None:
        return None
    netloc = endpoint()[0]
    if "online" in settings:
        raise SweepError(
            f"{where}: W&B mode online, but {netloc} is unreachable ({why}); set {fix} "
            f"(then `{sync_hint}` uploads) or run where there is a network"
        )
    os.environ["WANDB_MODE"] = "offline"  # inherited by every worker this controller starts
    line = (
        f"warning: W&B server {netloc} unreachable ({why}, {PROBE_TIMEOUT_S:.0f} s probe); runs log offline, "
        f"upload them later with `{sync_hint}`"
    )
    print(line, file=sys.stderr, flush=True)
    return line
