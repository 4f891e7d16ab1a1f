"""The full-text index over stored texts (reports, their later versions, and follow-up answers,
which are the reports of follow-up runs): what `METADATA` cannot say, created with a new
database and by the migration that indexes the rows already stored. Kept in sync by the
database itself (triggers on both), so no write path of the store can forget it.

SQLite: one FTS5 index whose text lives where it already is (external content, read through a
view), keyed by `report_search_keys`, whose INTEGER PRIMARY KEY survives VACUUM (the rowid of a
table keyed by text does not). Beside each text the index holds its scope as three tokens (its
workspace, its conversation, and public or not, each the hex of those names), so a search's
workspace and privacy rule are part of its MATCH and FTS5 can rank and cut to the best few
itself. PostgreSQL: a `tsvector` column on each table, with a GIN index, holding the text's
words and the same scope as lexemes, and its run's time bucket (`BUCKET_RUNS`), so that the
index itself finds only the viewer's texts, the newest buckets first.

Both engines index words as written, lowercased, neither stemmed nor stripped of stop words or
accents: reports are in whatever language their asker writes, and a stemmer for one language
mangles the others (PostgreSQL's `simple` configuration, SQLite's `unicode61` without diacritic
folding), so a word found on one engine is found on the other.
"""

from __future__ import annotations

from sqlalchemy import Connection, inspect

MAX_INDEXED_CHARS = 400_000
"""Of one text, what PostgreSQL indexes: a tsvector holds at most 1 MB (a longer report would
fail its write), and a report is far shorter than this."""

_TEXTS = {"reports": "1", "report_versions": "new.version"}
"""Each table of texts, and the version number its rows are (the run's own report is 1)."""

SEPARATOR = "\x1f"
"""Between the names a scope token is the hex of (no platform, workspace or channel has one)."""
_NAMES = "r.platform || char(31) || r.workspace"
SCOPE_OF_RUN = (
    f"'a' || hex({_NAMES}) || ' c' || hex({_NAMES} || char(31) || r.channel)"
    f" || CASE WHEN r.private THEN ' x' ELSE ' p' END || hex({_NAMES})"
)
"""A run `r`'s scope tokens: `a<workspace>`, `c<workspace and channel>`, and `p<workspace>` when
it is public (`x…` when not, so every text has as many scope tokens: bm25 weighs length)."""
_SCOPE = f"coalesce((SELECT {SCOPE_OF_RUN} FROM runs r WHERE r.run_id = {{row}}.run_id), '')"

_SQLITE = [
    """CREATE TABLE report_search_keys (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        scope TEXT NOT NULL,
        UNIQUE (run_id, version)
    )""",
    """CREATE VIEW report_search_text AS
        SELECT k.id AS id, coalesce(v.markdown, r.markdown) AS markdown, k.scope AS scope
        FROM report_search_keys k
        LEFT JOIN reports r ON k.version = 1 AND r.run_id = k.run_id
        LEFT JOIN report_versions v ON k.version > 1 AND v.run_id = k.run_id
            AND v.version = k.version""",
    """CREATE VIRTUAL TABLE report_search USING fts5(
        markdown, scope, content='report_search_text', content_rowid='id',
        tokenize='unicode61 remove_diacritics 0'
    )""",
    "INSERT INTO report_search_keys (run_id, version, scope) "
    f"SELECT run_id, 1, {_SCOPE.format(row='reports')} FROM reports",
    "INSERT INTO report_search_keys (run_id, version, scope) "
    f"SELECT run_id, version, {_SCOPE.format(row='report_versions')} FROM report_versions",
    "INSERT INTO report_search (report_search) VALUES ('rebuild')",
    # A run moved to another conversation, or made public: its texts' scope follows.
    f"""CREATE TRIGGER runs_search_scope AFTER UPDATE OF platform, workspace, channel, private
        ON runs BEGIN
            INSERT INTO report_search (report_search, rowid, markdown, scope)
                SELECT 'delete', id, markdown, scope FROM report_search_text
                WHERE id IN (SELECT id FROM report_search_keys WHERE run_id = new.run_id);
            UPDATE report_search_keys SET scope = {_SCOPE.format(row="new")}
                WHERE run_id = new.run_id;
            INSERT INTO report_search (rowid, markdown, scope)
                SELECT id, markdown, scope FROM report_search_text
                WHERE id IN (SELECT id FROM report_search_keys WHERE run_id = new.run_id);
        END""",
]
_REBUILT = ["TRIGGER runs_search_scope", "TABLE report_search", "VIEW report_search_text"]
"""What `scope_search_index` drops (with the texts' triggers and the keys) to build it anew."""


def _sqlite_triggers(table: str, version: str) -> list[str]:
    """A row added, removed or rewritten in `table` is added, removed or rewritten in the index."""
    old_version = version.replace("new.", "old.")
    key = "SELECT id, scope FROM report_search_keys WHERE run_id = {row}.run_id AND version = {v}"
    old_key, new_key = key.format(row="old", v=old_version), key.format(row="new", v=version)
    forget = (
        "INSERT INTO report_search (report_search, rowid, markdown, scope) "
        f"SELECT 'delete', id, old.markdown, scope FROM ({old_key});"
    )
    index = (
        "INSERT INTO report_search (rowid, markdown, scope) "
        f"SELECT id, new.markdown, scope FROM ({new_key});"
    )
    return [
        f"""CREATE TRIGGER {table}_search_added AFTER INSERT ON {table} BEGIN
            INSERT INTO report_search_keys (run_id, version, scope)
                VALUES (new.run_id, {version}, {_SCOPE.format(row="new")});
            {index}
        END""",
        f"""CREATE TRIGGER {table}_search_removed AFTER DELETE ON {table} BEGIN
            {forget}
            DELETE FROM report_search_keys WHERE run_id = old.run_id AND version = {old_version};
        END""",
        f"""CREATE TRIGGER {table}_search_changed AFTER UPDATE OF markdown ON {table} BEGIN
            {forget}
            {index}
        END""",
    ]


BUCKET_RUNS = 1_000
"""PostgreSQL: runs per time bucket. A text's vector holds `b:<n>`, n its run's `created_seq`
divided by this, so a broad search can ask the GIN index for the newest buckets first."""
_HEX = "encode(convert_to({}, 'UTF8'), 'hex')"
_PLACE = "r.platform || chr(31) || r.workspace"
_POSTGRES_FILL = f"""CREATE FUNCTION report_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        SELECT to_tsvector('simple'::regconfig, left(NEW.markdown, {MAX_INDEXED_CHARS}))
            || array_to_tsvector(ARRAY[
                'ws:' || {_HEX.format(_PLACE)},
                CASE WHEN r.private = 0 THEN 'pub:' || {_HEX.format(_PLACE)}
                    ELSE 'ch:' || {_HEX.format(_PLACE + " || chr(31) || r.channel")} END,
                'b:' || (r.created_seq / {BUCKET_RUNS})]),
            r.created_seq
        INTO NEW.search, NEW.search_seq FROM runs r WHERE r.run_id = NEW.run_id;
        RETURN NEW;
    END $$"""
"""A text's vector: its words as written (the `simple` configuration) and, taken verbatim (no
parser between), its run's scope and bucket: `ws:` its workspace, `pub:` that workspace when
the run is public or `ch:` its conversation when not, each the hex of the names (so no name can
break or reach into a query), and `b:` its bucket; `search_seq` its run's `created_seq`."""
_POSTGRES_SCOPE = """CREATE FUNCTION runs_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE reports SET markdown = markdown WHERE run_id = NEW.run_id;
        UPDATE report_versions SET markdown = markdown WHERE run_id = NEW.run_id;
        RETURN NULL;
    END $$"""
"""A run moved to another conversation, or made public: its texts' vectors are made again."""


def _postgres() -> list[str]:
    # Trigger-kept, not generated: a generated column may not read another table (the run).
    statements = [
        _POSTGRES_FILL,
        _POSTGRES_SCOPE,
        "CREATE TRIGGER runs_search_scope AFTER UPDATE OF platform, workspace, channel, private,"
        " created_seq ON runs FOR EACH ROW EXECUTE FUNCTION runs_search_scope()",
    ]
    for table in _TEXTS:
        statements += [
            f"ALTER TABLE {table} ADD COLUMN search tsvector, ADD COLUMN search_seq bigint",
            f"CREATE TRIGGER {table}_search BEFORE INSERT OR UPDATE OF markdown, run_id"
            f" ON {table} FOR EACH ROW EXECUTE FUNCTION report_search_fill()",
            f"UPDATE {table} SET markdown = markdown",  # the texts stored before
            f"CREATE INDEX {table}_search ON {table} USING gin (search)",
        ]
    return statements


def search_index_added(conn: Connection) -> bool:
    """The index is there already (a database made whole from `METADATA` has it)."""
    if conn.dialect.name == "sqlite":
        return inspect(conn).has_table("report_search")
    return "search" in {column["name"] for column in inspect(conn).get_columns("reports")}


def create_search_index(conn: Connection) -> None:
    """The index over the texts stored now as this release builds it, and what keeps it in sync
    from here on. Also step 15: on PostgreSQL, where step 11 of an earlier release left a
    generated column of words only, the vectors are made again with their scope and bucket;
    an index already built this way is left as it is."""
    if conn.dialect.name == "sqlite":
        if search_index_added(conn):
            return
        statements = [*_SQLITE]
        for table, version in _TEXTS.items():
            statements += _sqlite_triggers(table, version)
    else:
        columns = {column["name"]: column for column in inspect(conn).get_columns("reports")}
        if "search" in columns and "computed" not in columns["search"]:
            return
        statements = [f"ALTER TABLE {table} DROP COLUMN IF EXISTS search" for table in _TEXTS]
        statements += _postgres()
    for statement in statements:
        conn.exec_driver_sql(statement)


def scope_search_index(conn: Connection) -> None:
    """13: on SQLite, the index built anew with each text's scope in it (see above), unless it
    has it already (a database made whole from `METADATA`, or by step 11 of this release)."""
    if conn.dialect.name != "sqlite":
        return
    if "scope" in {column["name"] for column in inspect(conn).get_columns("report_search_keys")}:
        return
    for table in _TEXTS:
        for change in ("added", "removed", "changed"):
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {table}_search_{change}")
    for kind_and_name in [*_REBUILT, "TABLE report_search_keys"]:
        conn.exec_driver_sql(f"DROP {kind_and_name.replace(' ', ' IF EXISTS ', 1)}")
    create_search_index(conn)
