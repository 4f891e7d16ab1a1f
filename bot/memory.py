"""Process-wide memory settings, applied once at start by the `research-bot` command."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameters (malloc.h)."""
ARENAS = 2
MMAP_THRESHOLD = 128 * 1024
"""glibc's own starting value, kept fixed."""


def tune_malloc() -> set[str]:
    """Set glibc's malloc for a bot that reads pages in threads; returns the environment
    variables of the settings applied (none off glibc).

    - At most two arenas (`MALLOC_ARENA_MAX`). glibc gives threads that allocate at the same
      time arenas of their own (up to 8 per core), and an arena keeps the memory freed in it.
      After 100 hostile page reads at once the process kept 77-104 MB more; with two arenas,
      65-69 MB (bench/scale.py, hostile phase).
    - A fixed mmap threshold (`MALLOC_MMAP_THRESHOLD_`). Page bodies are megabytes each, and
      glibc raises its threshold to the size of each large block freed, so later bodies come
      from the heap, which keeps what they leave in holes. Fixed, each body is a mapping of
      its own, given back to the system when it is freed: 30 hostile runs through `serve
      slack` peaked 10-20 MB lower (bench/serve.py, two alternated pairs).

    Arenas made before the call stay, so it is called first thing. A setting the operator
    chose in the environment (which glibc reads itself) is left alone."""
    if not sys.platform.startswith("linux"):
        return set()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        settings = {
            "MALLOC_ARENA_MAX": (M_ARENA_MAX, ARENAS),
            "MALLOC_MMAP_THRESHOLD_": (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        }
        return {
            name
            for name, (parameter, value) in settings.items()
            if name not in os.environ and libc.mallopt(parameter, value)
        }
    except (OSError, AttributeError):  # musl and others: no glibc `mallopt`
        return set()
