"""A broad search on both engines ranks only the newest texts it finds (`ranked`), and the best of
those come first: an older text that would rank higher is not among them. The runs are spread
over hundreds of PostgreSQL's time buckets, so the walk takes all its steps and then the rest."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, insert

from bot.store.rows import iso
from bot.store.runs import Store
from bot.store.schema import REPORTS, RUNS
from bot.store.search_index import BUCKET_RUNS
from tests.store.stepped import START

RUNS_EACH = 300
RANKED = 200
"""More than PostgreSQL's walk of buckets finds here (one public text a bucket), so it also
takes its last step (the rest at once)."""
WORDS = 20
T1 = {"platform": "slack", "workspace": "T1"}


def _times(n: int) -> int:
    """How often run n's report says the word: 1 to 7 in a text of constant length, so both
    engines rank by this alone, and the oldest run says it most of all."""
    return WORDS - 1 if n == 1 else n % 7 + 1


def _rows(n: int, channel: str, private: bool, workspace: str) -> tuple[dict[str, Any], ...]:
    run_id = f"r{n:04d}{channel}{workspace}"
    created = iso(START + timedelta(seconds=n))
    words = ["robots"] * _times(n) + [f"filler{k}" for k in range(WORDS - _times(n))]
    run = {
        "run_id": run_id,
        "platform": "slack",
        "workspace": workspace,
        "channel": channel,
        "thread": "",
        "user_id": "U1",
        "user_name": "ada",
        "topic": f"Company {n}",
        "mode": "company",
        "status": "done",
        "created_at": created,
        "created_seq": n * BUCKET_RUNS + (channel == "D1") + 2 * (workspace == "T2"),
        "private": private,
    }
    report = {
        "run_id": run_id,
        "title": f"Company {n}",
        "tldr": "",
        "markdown": f"# Company {n}\n\n{' '.join(words)}.\n",
        "report_json": "{}",
        "created_at": created,
    }
    return run, report


async def _fill(store: Store) -> None:
    """Each n: a public run, a private one in D1 and one in another workspace, all saying the
    word, in the order they were made (n), one bucket per n."""
    made = [
        _rows(n, *place)
        for n in range(1, RUNS_EACH + 1)
        for place in [("C1", False, "T1"), ("D1", True, "T1"), ("C1", False, "T2")]
    ]

    def work(conn: Connection) -> None:
        conn.execute(insert(RUNS), [run for run, _ in made])
        conn.execute(insert(REPORTS), [report for _, report in made])

    await store.database.write(work)


async def test_a_broad_search_ranks_only_its_newest_texts_best_first(store: Store) -> None:
    await _fill(store)

    capped = await store.search_reports(
        "robots", **T1, viewer_channel="C1", limit=100, ranked=RANKED
    )
    everything = await store.search_reports("robots", **T1, viewer_channel="C1", limit=5)
    from_d1 = await store.search_reports(
        "robots", **T1, viewer_channel="D1", limit=100, ranked=RANKED
    )

    newest = range(RUNS_EACH, RUNS_EACH - RANKED, -1)
    best = sorted(newest, key=lambda n: (-_times(n), -n))[:100]
    assert [hit.run_id for hit in capped] == [f"r{n:04d}C1T1" for n in best]
    assert [hit.rank for hit in capped] == sorted((hit.rank for hit in capped), reverse=True)
    # Uncapped, the oldest run says it most and comes first; the newest 200 leave it out.
    assert everything[0].run_id == "r0001C1T1"
    assert "r0001C1T1" not in {hit.run_id for hit in capped}
    # From D1, its private runs share the newest 200 with the public ones.
    assert {hit.run_id[5:] for hit in from_d1} == {"C1T1", "D1T1"}
    assert {int(hit.run_id[1:5]) for hit in from_d1} <= set(range(RUNS_EACH - 99, RUNS_EACH + 1))
