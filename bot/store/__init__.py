"""The database, on SQLite (a file: the default, nothing to run beside it) or PostgreSQL (when
RESEARCH_BOT_DATABASE_URL names one), with one schema and one set of queries for both.

- `schema`: the tables, once (SQLAlchemy Core), and the migration steps; `migrations` applies
  them at start, one process at a time;
- `connection`: which engine; `sqlite`: one file driven from one thread (each unit of work one
  hop to it, small writes group-committed: measured 2.3-3k writes/s against 0.9-1k through
  aiosqlite, which hops per statement); `postgres`: psycopg 3 (it ties with asyncpg on durable
  commits, connects in C, and takes the ISO text times the store writes);
- `grouped`: the unit of work both engines run, and their group commit;
- `rows`: row shapes; `runs.Store` and its parts `history`, `followups` and `shared` (the
  queue, control and heartbeats replicas share); `signals`: NOTIFY between replicas;
  `usage`: the figures of the `usage` command; `copy` and `status`: `research-bot db copy`
  (a SQLite history into PostgreSQL) and `db status`.

All SQL lives in this package.
"""

from bot.store.runs import Store

__all__ = ["Store"]
