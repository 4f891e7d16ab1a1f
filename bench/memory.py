"""The memory of a process tree, sampled from /proc: RSS and PSS of a process and of its
descendants (the bot and its extraction workers). Imports nothing but the standard library, so
it runs as a process of its own beside the bot (`python -m bench.memory ROOT [EXCLUDE …]`, one
JSON line of figures for each line it reads: `reset`, `peak`, `current`), and nothing of the
sampling happens inside the process measured.
"""

from __future__ import annotations

import json
import os
import sys
import threading

PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1_000_000


class Memory:
    """Samples the memory of a process (this one by default) and of its descendants but the
    fakes (the extraction workers) every 20 ms from a thread, so reading /proc never runs on
    the event loop.

    Two figures: RSS, which counts a page shared by several processes (libraries, and what a
    worker shares with the process it was forked from) once in each, and PSS
    (/proc/PID/smaps_rollup), which splits each shared page between the processes that map it,
    so the sum is what the bot and its workers take from the machine. The goal is checked
    against the PSS sum; both are printed."""

    def __init__(self, exclude: set[int], root: int | None = None) -> None:
        self._exclude = exclude
        self._root = root or os.getpid()
        self.peak: dict[str, int] = {}
        self._workers: set[int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def current(self, *, pss: bool = True) -> dict[str, int]:
        if pss or self._workers is None:  # the process tree is walked with each PSS reading
            self._workers = descendants(self._root, self._exclude)
        workers = self._workers
        figures = {}
        for kind, read in (("rss", _rss), ("pss", _pss)) if pss else (("rss", _rss),):
            main, others = read(self._root), sum(map(read, workers))
            figures |= {
                f"main_{kind}": main,
                f"workers_{kind}": others,
                f"total_{kind}": main + others,
            }
        return figures

    def reset(self) -> None:
        self.peak = {}

    def _run(self) -> None:
        # PSS and the process tree every 100 ms only: smaps_rollup walks every mapping, and a
        # sampler reading both every 20 ms took about a second of the bot's CPU in the burst.
        tick = 0
        while not self._stop.wait(0.02):
            for key, value in self.current(pss=tick % 5 == 0).items():
                self.peak[key] = max(self.peak.get(key, 0), value)
            tick += 1

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _children(pid: int | None = None) -> set[int]:
    found: set[int] = set()
    folder = f"/proc/{pid or 'self'}/task"
    try:
        tasks = os.listdir(folder)
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"{folder}/{task}/children") as children:
                found.update(int(child) for child in children.read().split())
        except OSError:
            continue
    return found


def descendants(pid: int, exclude: set[int]) -> set[int]:
    """Children, their children and so on (a fork server's workers are its children)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()) - exclude - found:
            found.add(child)
            todo.append(child)
    return found


def main() -> None:
    root, *exclude = (int(arg) for arg in sys.argv[1:])
    memory = Memory(exclude={os.getpid(), *exclude}, root=root)
    memory.start()
    for line in sys.stdin:
        command = line.strip()
        if command == "reset":
            memory.reset()
            answer: dict[str, int] = {}
        elif command == "peak":
            answer = dict(memory.peak)
        else:
            answer = memory.current()
        print(json.dumps(answer), flush=True)
    memory.stop()


if __name__ == "__main__":
    main()
