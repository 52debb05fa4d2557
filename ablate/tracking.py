"""W&B mode: the one rule used by trials, the sweep summary run and `ablate sync`.

``auto`` (the default) is online only when ``WANDB_API_KEY`` is set and ``WANDB_MODE`` does not say
otherwise; else offline. With a key but no network ``wandb.init`` stalls ~90 s and then fails, so
nothing here ever chooses online without a key.
"""

from __future__ import annotations

import os

MODES = ("auto", "online", "offline", "disabled")


def wandb_mode(setting: str | None) -> str:
    """online / offline / disabled from a configured setting, WANDB_MODE and WANDB_API_KEY."""
    mode = setting or "auto"
    if mode == "auto":
        env = os.environ.get("WANDB_MODE")
        if env in ("online", "offline", "disabled", "dryrun"):
            mode = env
        else:
            mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
    return "offline" if mode == "dryrun" else mode  # dryrun: W&B's old name for offline
