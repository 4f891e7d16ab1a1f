"""The malloc settings the command applies at start (their effect is measured in bench/)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = "from bot.memory import tune_malloc; print(sorted(tune_malloc()))"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_each_setting_applies_on_glibc_unless_the_operator_chose_it() -> None:
    env = {"PATH": "/usr/bin:/bin"}

    def applied(**chosen: str) -> str:
        probe = [sys.executable, "-c", PROBE]
        return subprocess.run(probe, env=env | chosen, capture_output=True).stdout.decode().strip()

    assert applied() == "['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']"
    assert applied(MALLOC_ARENA_MAX="4") == "['MALLOC_MMAP_THRESHOLD_']"
    assert applied(MALLOC_MMAP_THRESHOLD_="65536") == "['MALLOC_ARENA_MAX']"
