"""The malloc arena cap the command applies at start (its effect is measured in bench/scale.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = "from bot.memory import limit_malloc_arenas; print(limit_malloc_arenas())"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_cap_applies_on_glibc_unless_the_operator_chose() -> None:
    env = {"PATH": "/usr/bin:/bin"}
    applied = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True)
    chosen = subprocess.run(
        [sys.executable, "-c", PROBE], env={**env, "MALLOC_ARENA_MAX": "4"}, capture_output=True
    )

    assert applied.stdout.decode().strip() == "True"
    assert chosen.stdout.decode().strip() == "False"
