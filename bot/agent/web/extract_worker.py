"""An extraction worker process: warm up, say so, then one page per message until told to stop.

Started by `extract_pool` as `python -c "...; main()" FD`, FD its end of the pipe. It imports
only `extract` (trafilatura, pypdf) and the pipe: no asyncio, no pydantic, no SDK, so each
worker holds what extraction needs and no more.
"""

from __future__ import annotations

import gc
import sys
from multiprocessing.connection import Connection

from bot.agent.web.extract import Body, extract_page
from bot.errors import ToolError
from bot.memory import tune_malloc

WARM_PAGE = b"<html><body><p>warm up</p></body></html>"  # short: takes the justext path


def main() -> None:
    tune_malloc()  # as the bot does: a page's body and tree are given back once it is read
    serve(Connection(int(sys.argv[1])))


def serve(conn: Connection) -> None:
    extract_page(Body("http://warm.up/", "warm.up", "text/html", None, WARM_PAGE), 100)
    gc.freeze()  # modules and stoplists live as long as the worker: the collector skips them
    conn.send("ready")
    while True:
        try:
            meta = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if meta is None:
            return
        url, host, media_type, charset, max_chars = meta
        data = conn.recv_bytes()
        try:
            page = extract_page(Body(url, host, media_type, charset, data), max_chars)
            conn.send(("ok", page.title, page.text, page.truncated, page.published))
        except ToolError as error:
            conn.send(("refused", str(error)))
        except Exception as error:  # hostile input can break a parser; the page fails, not the bot
            conn.send(("failed", f"{error.__class__.__name__}: {error}"[:300]))
