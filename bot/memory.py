"""Process-wide memory settings, applied once at start by the `research-bot` command."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_ARENA_MAX = -8
"""glibc's `mallopt` parameter for the most malloc arenas (malloc.h)."""
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas; True when applied.

    glibc gives threads that allocate at the same time arenas of their own (up to 8 per core),
    and an arena keeps the memory freed in it. After 100 hostile page reads at once (page
    bodies and compression bombs handled on the loop and in worker threads) the process kept
    77-104 MB more; with two arenas, 65-69 MB (bench/scale.py, hostile phase). Arenas made
    before the call stay, so it is called first thing. A no-op off glibc, and when the operator
    chose with `MALLOC_ARENA_MAX` (which glibc reads itself).
    """
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # musl and others: no glibc `mallopt`
        return False
