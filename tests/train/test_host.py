"""The training process's host set-up: glibc keeps freed memory unless ABLATE_KEEP_FREED_MEMORY=0."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ablate.train.host import ENV

PROBE = "from ablate.train.host import keep_freed_memory; print(keep_freed_memory())"


def _probe(env_value: str | None) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if k != ENV}
    if env_value is not None:
        env[ENV] = env_value
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_takes_effect_on_glibc_and_can_be_turned_off():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc: keep_freed_memory does nothing there")
    assert _probe(None).strip() == "True"
    assert _probe("0").strip() == "False"
