"""The database: the connection and its writer thread (`connection`), the schema as an
append-only list of migrations (`schema`), the statements and row shapes (`rows`), and the
queries of runs (`runs.Store`), follow-ups and report versions (`followups`), and usage.
All SQL lives in this package."""

from bot.store.runs import Store

__all__ = ["Store"]
