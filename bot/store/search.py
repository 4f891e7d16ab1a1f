"""Full-text search over a workspace's stored texts: its reports, their later versions and its
follow-up answers (each a report of its own follow-up run), ranked, each hit with a snippet. The
index is the engine's own (bot/store/search_index.py); the query around it is one for both. A
part of `Store` (bot/store/runs.py), which provides the database."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, Float, Integer, Row, Select, select, text
from sqlalchemy import Text as SQLText

from bot.agent.report.markdown import parse, text_of
from bot.domain import strip_controls
from bot.errors import RequestError
from bot.store.connection import Database
from bot.store.rows import NEWEST_FIRST, scope, visible_from
from bot.store.schema import REPORT_VERSIONS, REPORTS, RUNS
from bot.store.search_index import BUCKET_RUNS, SEPARATOR

MAX_QUERY_CHARS = 400
MAX_WORDS = 32
"""Of a query, the words searched for (all of them must be in a text)."""
MAX_LIMIT = 100
SNIPPET_CHARS = 200

_WORD = re.compile(r"[^\W_]+")
"""A word as both indexes cut them: letters and digits; anything else separates words."""

RANKED = 500
"""Of the texts a search finds in its scope, the newest this many are ranked (all of them when
they are fewer), and the best of them shown: the best of a broad search's newest texts is what
a person looks for. Ranking costs each text's vector read whole (about 15 µs a text on
PostgreSQL): 2,000 of them took about 35 ms of the 50 ms a search may take at p99."""

_SQLITE_BEST = """
    SELECT k.run_id AS run_id, k.version AS version, -newest.rank AS rank
    FROM (
        SELECT rowid, bm25(report_search, 1.0, 0.0) AS rank FROM report_search
        WHERE report_search MATCH :match ORDER BY rowid DESC LIMIT :ranked
    ) AS newest JOIN report_search_keys k ON k.id = newest.rowid
"""
"""The newest matching texts (the last indexed), ranked, (run_id, version, rank), higher
rank better: bm25 over the text only, not its scope tokens, negated (FTS5 gives the best the
lowest). The scope is in the MATCH, so FTS5 reads only texts the viewer may see."""
_POSTGRES_NEWEST = """
    SELECT run_id, version, seq, ts_rank(search, plainto_tsquery('simple', :words), 1) AS rank
    FROM (
        SELECT run_id, 1 AS version, search_seq AS seq, search FROM reports
        WHERE search @@ (plainto_tsquery('simple', :words) && CAST(:scope AS tsquery))
            AND search_seq < :below
        UNION ALL
        SELECT run_id, version, search_seq, search FROM report_versions
        WHERE search @@ (plainto_tsquery('simple', :words) && CAST(:scope AS tsquery))
            AND search_seq < :below
        ORDER BY seq DESC, version DESC LIMIT :wanted
    ) AS newest
"""
"""On PostgreSQL, (run_id, version, seq, rank) of the newest `wanted` texts that have the words
and the scope lexemes of `:scope` (its time buckets too, while a search walks them), of runs
before `below`: ts_rank divided by the log of the text's length, as bm25 weighs long texts
down. The GIN index finds them; only the newest are read and ranked."""
WALK = (2, 8, 32, 128)
"""The buckets a broad search asks for at each step, newest first, before the rest at once."""


_Place = tuple[str, str]
"""A workspace: (platform, workspace)."""


class ReportHit(BaseModel):
    """A stored text that has every searched word, as a person or a run is shown it."""

    run_id: str
    """The run whose text matched: a follow-up's own id when its answer matched."""
    parent_run_id: str | None = None
    """For a follow-up's answer: the run it asked about."""
    topic: str
    created_at: datetime
    user_name: str
    """Who asked."""
    channel: str
    thread: str
    version: int
    """The report version that matched best (1: the run's own report)."""
    snippet: str
    """Plain text around the first searched word (no Markdown, nothing that mentions anyone)."""
    rank: float
    """Higher is better; comparable within one search only (each engine scores its own way)."""
    private: bool


def search_words(words: str) -> list[str]:
    """The words a query searches for, lowercased, each once; [] when it has none."""
    if len(words) > MAX_QUERY_CHARS:
        raise RequestError(f"Keep the search under {MAX_QUERY_CHARS} characters.")
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(words)))[:MAX_WORDS]


class SearchQueries:
    """The search of `Store`."""

    _db: Database

    async def search_reports(
        self,
        words: str,
        *,
        platform: str,
        workspace: str,
        viewer_channel: str | None,
        limit: int = 10,
        ranked: int = RANKED,
    ) -> list[ReportHit]:
        """The texts of one workspace (the terminal is `platform="terminal"`) that have every
        word of `words`, best first, newest first among equals, one hit per run. A private
        conversation's runs are found only from that conversation (`viewer_channel`); None is
        the operator's view from the terminal, which sees the whole workspace. Syntax in
        `words` is not syntax: only its words count; with none, []. Of the texts found, the
        newest `ranked` are ranked (`RANKED`)."""
        wanted = search_words(words)
        if not wanted:
            return []
        limit = max(1, min(limit, MAX_LIMIT))

        def work(conn: Connection) -> list[ReportHit]:
            best = _best(conn, wanted, (platform, workspace), viewer_channel, limit, ranked)
            return [_hit(conn, run, version, rank, wanted) for run, version, rank in best]

        return await self._db.read(work)


def _best(
    conn: Connection, words: list[str], place: _Place, viewer: str | None, n: int, ranked: int
) -> list[tuple[Row[Any], int, float]]:
    """The best `n` runs, each with its best text: the best texts in the order hits are shown
    (rank, then newest run, then latest version), a few more than `n`, more when several
    versions of one run take places. Who may see a run is decided from `runs` as it is now
    (the index's copy of each text's scope narrows what is read, never decides alone)."""
    fetch, sqlite = 2 * n + 8, conn.dialect.name == "sqlite"
    texts = [] if sqlite else _postgres_ranked(conn, words, place, viewer, ranked)
    while True:
        if sqlite:
            rows = conn.execute(_sqlite_texts(words, place, viewer, fetch, ranked)).all()
            found = [(row, row.version, row.rank) for row in rows]
            every = len(found) < fetch
        else:
            found, every = _visible(conn, texts[:fetch], place, viewer), fetch >= len(texts)
        best: dict[str, tuple[Row[Any], int, float]] = {}
        for hit in found:  # in the hits' own order, so a run's first text is its best
            best.setdefault(hit[0].run_id, hit)
        if len(best) >= n or every:
            return list(best.values())[:n]
        fetch *= 4


def _sqlite_texts(
    wanted: list[str], place: _Place, viewer: str | None, n: int, ranked: int
) -> Select[Any]:
    """The best `n` texts of the workspace that the viewer may see, best first, with their runs.
    The index's copy of each text's scope narrows what FTS5 reads."""
    platform, workspace = place
    # Each word quoted: FTS5 reads a bare `OR`, `NEAR(`, `-` or `col:` as its own syntax.
    words = " ".join(f'"{word}"' for word in wanted)
    names = SEPARATOR.join([platform, workspace])
    seen = f'"a{names.encode().hex()}"'
    if viewer is not None:
        channel = SEPARATOR.join([names, viewer]).encode().hex()
        seen = f'("p{names.encode().hex()}" OR "c{channel}")'
    match = f"markdown : ({words}) AND scope : {seen}"
    sql = text(_SQLITE_BEST).bindparams(match=match, ranked=ranked)
    texts = sql.columns(run_id=SQLText, version=Integer, rank=Float).subquery("texts")
    return (
        select(RUNS, texts.c.version, texts.c.rank)
        .join_from(texts, RUNS, RUNS.c.run_id == texts.c.run_id)
        .where(*scope(platform, workspace), *visible_from(viewer))
        .order_by(texts.c.rank.desc(), *NEWEST_FIRST, texts.c.version.desc())
        .limit(n)
    )


def _postgres_ranked(
    conn: Connection, wanted: list[str], place: _Place, viewer: str | None, ranked: int
) -> list[Row[Any]]:
    """The newest `ranked` texts of the scope that have the words, best first. The newest
    buckets are asked for first, more of them at each step, so a word in a third of the
    reports reads a few thousand texts, not tens of thousands."""
    platform, workspace = place
    names = SEPARATOR.join(place).encode().hex()
    lexemes = f"'ws:{names}'"  # hex and digits only: nothing here is tsquery syntax
    if viewer is not None:
        channel = SEPARATOR.join([*place, viewer]).encode().hex()
        lexemes += f" & ('pub:{names}' | 'ch:{channel}')"
    newest = select(RUNS.c.created_seq).where(*scope(platform, workspace))
    last = conn.execute(newest.order_by(*NEWEST_FIRST).limit(1)).scalar()
    if last is None:
        return []
    found: list[Row[Any]] = []
    top = last // BUCKET_RUNS + 1  # one more: a run made a moment earlier may count later
    words = " ".join(wanted)
    for size in (*WALK, 0):
        if top < 0 or len(found) >= ranked:
            break
        low = max(0, top - size + 1) if size else 0
        buckets = " | ".join(f"'b:{bucket}'" for bucket in range(top, low - 1, -1))
        step = f"{lexemes} & ({buckets})" if size else lexemes
        found += conn.execute(
            text(_POSTGRES_NEWEST),
            {
                "words": words,
                "scope": step,
                "below": (top + 1) * BUCKET_RUNS,
                "wanted": ranked - len(found),
            },
        ).all()
        top = low - 1
    return sorted(found, key=lambda row: (-row.rank, -row.seq, -row.version))


def _visible(
    conn: Connection, texts: list[Row[Any]], place: _Place, viewer: str | None
) -> list[tuple[Row[Any], int, float]]:
    """Of `texts`, in their order, those whose run is in the place and seen from the viewer."""
    ids = {row.run_id for row in texts}
    query = select(RUNS).where(RUNS.c.run_id.in_(ids), *scope(*place), *visible_from(viewer))
    runs = {run.run_id: run for run in conn.execute(query)}
    return [(runs[row.run_id], row.version, row.rank) for row in texts if row.run_id in runs]


def _hit(
    conn: Connection, run: Row[Any], version: int, rank: float, wanted: list[str]
) -> ReportHit:
    data = run._mapping
    if version == 1:
        source = select(REPORTS.c.markdown).where(REPORTS.c.run_id == run.run_id)
    else:
        versions = REPORT_VERSIONS.c
        source = select(versions.markdown).where(
            versions.run_id == run.run_id, versions.version == version
        )
    markdown = str(conn.execute(source).scalar_one())
    return ReportHit.model_validate(
        {**data, "version": version, "snippet": snippet(markdown, wanted), "rank": float(rank)}
    )


def snippet(markdown: str, wanted: list[str], width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of plain text around the first of `wanted` in the text's prose
    (its headings when only they have it). Only the lines around that word are parsed, so a long
    report costs no more than a short one."""
    pattern = re.compile(
        r"(?<![^\W_])(?:" + "|".join(map(re.escape, wanted)) + r")(?![^\W_])", re.IGNORECASE
    )
    title_end = markdown.find("\n") if markdown.startswith("# ") else -1
    found = pattern.search(markdown, title_end + 1) or pattern.search(markdown)
    at = found.start() if found else 0
    # The lines around the word, each cut to the window around it at a space: a paragraph can
    # be thousands of characters, and parsing is the cost of a search's snippets.
    low, high = max(0, at - width), at + width
    start = markdown.rfind("\n", 0, low) + 1
    end = markdown.find("\n", high)
    lines = markdown[start : end if end >= 0 else len(markdown)].split("\n")
    kept, offset = [], start
    for line in lines:
        left = max(0, low - offset)
        space = line.find(" ", left) if left else -1
        left = space + 1 if space >= 0 else left
        right = min(len(line), high - offset)
        right = len(line) if right >= len(line) else max(line.rfind(" ", left, right), left)
        kept.append(line if (left, right) == (0, len(line)) else line[left:right])
        offset += len(line) + 1
    blocks = _blocks("\n".join(kept))
    prose = " ".join(block for heading, block in blocks if not heading)
    plain = prose if pattern.search(prose) else " ".join(block for _, block in blocks)
    plain = strip_controls(plain).replace("<", "").replace(">", "")
    found = pattern.search(plain)
    left = max(0, (found.start() if found else 0) - width // 3)
    left = left if left == 0 else plain.find(" ", left) + 1  # from a word's start
    right = len(plain) if left + width >= len(plain) else plain.rfind(" ", left, left + width)
    cut = plain[left : max(right, left + 1)].strip()
    return ("…" if left > 0 else "") + cut + ("…" if right < len(plain) else "")


def _blocks(markdown: str) -> list[tuple[bool, str]]:
    """Each block's plain text, and whether it is a heading."""
    tokens = parse(markdown)
    return [
        (
            index > 0 and tokens[index - 1].type == "heading_open",
            " ".join(text_of(t.children or []).split()),
        )
        for index, t in enumerate(tokens)
        if t.type == "inline"
    ]
