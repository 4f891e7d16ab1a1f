"""Which process owns a run, and whether that owner is gone (so the run is an orphan).

An owner is `host:pid:token`. It renews a lease on its runs while it lives. On the same host
a dead pid is known at once; elsewhere, or when the pid was reused, the lease decides.
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def owner_pid(owner: str | None) -> int | None:
    """The process id an owner names, when that owner is on this host."""
    parts = (owner or "").split(":")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    return int(parts[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def owner_gone(
    owner: str | None, lease_until: datetime | None, *, now: datetime, me: str | None
) -> bool:
    """True when nobody is running a run any more: no owner, a dead local process, an owner
    that was an earlier life of this very process id (a restarted container), or a lapsed lease."""
    if owner is None:
        return True
    if owner == me:
        return False
    pid = owner_pid(owner)
    if pid is not None:
        return pid == os.getpid() or not _alive(pid)
    return lease_until is None or lease_until < now
