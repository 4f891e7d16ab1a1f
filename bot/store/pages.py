"""Pages runs read, and their condensed text, kept per workspace for its later runs
(RESEARCH_BOT_REUSE_DAYS): what the page reader and the compressor reuse instead of fetching and
condensing again (bot/agent/web/reuse.py, bot/agent/compress.py). A page is found by its address
as asked or as it ended after redirects; a condensing by the exact text and the exact goal it was
made for. Nothing crosses from one workspace (`Origin.scope`) to another, and a page read in a
private conversation is given again only in that conversation (the rule reports follow)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Table, or_, select
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.agent.compress import KeptCondensing
from bot.agent.report.model import Source
from bot.agent.urls import normalize_url
from bot.agent.web.reuse import KeptPage
from bot.domain import Origin
from bot.store.connection import Database
from bot.store.rows import Clock, iso
from bot.store.schema import CONDENSED, PAGES


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class PageStore:
    """The kept pages of every workspace, read within the last `days` days of `clock`."""

    def __init__(self, db: Database, *, days: int, clock: Clock) -> None:
        self._db = db
        self._window = timedelta(days=days)
        self._now = clock

    def _since(self) -> str:
        return iso(self._now() - self._window)

    async def page(self, origin: Origin, url: str) -> KeptPage | None:
        query = (
            select(PAGES)
            .where(
                PAGES.c.scope == origin.scope,
                PAGES.c.url_key == normalize_url(url),
                PAGES.c.read_at >= self._since(),
            )
            .order_by(PAGES.c.read_at.desc())
            .limit(1)
        )
        if origin.platform != "terminal":  # the terminal is the operator's: it sees them all
            query = query.where(or_(PAGES.c.private == 0, PAGES.c.channel == origin.channel))
        row = await self._db.read(lambda conn: conn.execute(query).first())
        if row is None:
            return None
        return KeptPage(
            source=Source.model_validate_json(row.source),
            body=row.body,
            run_id=row.run_id,
            read_at=datetime.fromisoformat(row.read_at),
        )

    async def keep(
        self, origin: Origin, asked: str, *, source: Source, body: str, run_id: str
    ) -> None:
        """Under the address asked for and the one it ended at (a redirect); a conversation's
        newest read of an address replaces its older one."""
        keys = {normalize_url(asked), normalize_url(source.url)}
        rows = [
            {
                "scope": origin.scope,
                "url_key": key,
                "channel": origin.channel,
                "private": origin.private,
                "source": source.model_dump_json(),
                "body": body,
                "run_id": run_id,
                "read_at": iso(self._now()),
            }
            for key in sorted(keys)
        ]
        await self._db.write_grouped(lambda conn: _upsert(conn, PAGES, rows))

    async def condensed(self, scope: str, text: str, goal: str) -> KeptCondensing | None:
        query = select(CONDENSED.c.text, CONDENSED.c.note, CONDENSED.c.model).where(
            CONDENSED.c.scope == scope,
            CONDENSED.c.text_key == _key(text),
            CONDENSED.c.goal_key == _key(goal),
            CONDENSED.c.made_at >= self._since(),
        )
        row = await self._db.read(lambda conn: conn.execute(query).first())
        return None if row is None else KeptCondensing(row.text, row.note, row.model)

    async def keep_condensed(self, scope: str, text: str, goal: str, kept: KeptCondensing) -> None:
        row = {
            "scope": scope,
            "text_key": _key(text),
            "goal_key": _key(goal),
            "text": kept.text,
            "note": kept.note,
            "model": kept.model,
            "made_at": iso(self._now()),
        }
        await self._db.write_grouped(lambda conn: _upsert(conn, CONDENSED, [row]))


def _upsert(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    dialect_insert = postgres_insert if conn.dialect.name == "postgresql" else sqlite_insert
    keys = [column.name for column in table.primary_key.columns]
    for row in rows:
        changed = {name: value for name, value in row.items() if name not in keys}
        statement = dialect_insert(table).values(row)
        conn.execute(statement.on_conflict_do_update(index_elements=keys, set_=changed))
