"""The history database's schema, one for SQLite and PostgreSQL: migrations, small functions
applied in order, each with the bump of the schema version in one transaction (SQLite counts them
in `user_version`, PostgreSQL in the table judgekit_schema). A migration spells the few words the
two databases differ in through `db.dialect` (judgekit.watch.store).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable

from judgekit.errors import InputError
from judgekit.watch.store import POSTGRES, SQLITE, Store


def _m001_runs(db: Store) -> None:
    db.execute(f"""CREATE TABLE runs (
        id {db.dialect.key},
        criterion TEXT NOT NULL,
        created_at TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        model TEXT,
        prompt_sha TEXT,
        parameters TEXT NOT NULL,
        set_fingerprint TEXT NOT NULL,
        source TEXT NOT NULL,
        n INTEGER NOT NULL,
        abstained INTEGER NOT NULL,
        metrics TEXT NOT NULL,
        judgekit_version TEXT NOT NULL)""")
    db.execute(f"""CREATE TABLE verdicts (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        example_id TEXT NOT NULL,
        label INTEGER NOT NULL,
        passed INTEGER,
        PRIMARY KEY (run_id, example_id)){db.dialect.without_rowid}""")


def _m002_split_and_purpose(db: Store) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN split TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN purpose TEXT NOT NULL DEFAULT 'calibrate'")
    db.execute("CREATE INDEX runs_by_criterion ON runs (criterion, id)")


def _m003_how_asked(db: Store) -> None:
    """How the judge was asked beyond its fingerprint, so `recheck` can ask it exactly so again."""
    db.execute("ALTER TABLE runs ADD COLUMN api_base TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN via TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN structured INTEGER")


def _m004_verdict_file(db: Store) -> None:
    """The digest of a recorded run's verdict file: what it was measured from, not only its name."""
    db.execute("ALTER TABLE runs ADD COLUMN verdicts_sha TEXT")


def _m005_confidence(db: Store) -> None:
    """Selective judging: each verdict's confidence, and the run's certified threshold (drift
    watches coverage)."""
    db.execute(f"ALTER TABLE verdicts ADD COLUMN confidence {db.dialect.real}")
    db.execute(f"ALTER TABLE runs ADD COLUMN threshold {db.dialect.real}")


def _m006_test_looks(db: Store) -> None:
    """Every look at a criterion's test split (`improve`, `compare --adopt`, a re-measured edit):
    what each spent of the split's alpha budget, on which examples; and every label changed in
    review."""
    db.execute(f"""CREATE TABLE test_looks (
        id {db.dialect.key},
        criterion TEXT NOT NULL,
        at TEXT NOT NULL,
        purpose TEXT NOT NULL,
        generation TEXT NOT NULL,
        examples TEXT NOT NULL,
        alpha {db.dialect.real} NOT NULL,
        p_value {db.dialect.real},
        accepted INTEGER,
        candidate TEXT)""")
    db.execute("CREATE INDEX looks_by_criterion ON test_looks (criterion, id)")
    db.execute(f"""CREATE TABLE label_changes (
        id {db.dialect.key},
        criterion TEXT NOT NULL,
        example_id TEXT NOT NULL,
        old INTEGER,
        new INTEGER NOT NULL,
        annotator TEXT,
        at TEXT NOT NULL)""")


def _m007_uids(db: Store) -> None:
    """An id per run, look and label change, the same in every history it is moved to, so `judgekit
    history import` adds what is new and skips what is already there. Rows written before are given
    one from what they hold (their number and every column), so two copies of one older history
    give each row the same id, and merging them duplicates nothing."""
    for table in ("runs", "test_looks", "label_changes"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN uid TEXT")
        rows = db.execute(f"SELECT * FROM {table}").fetchall()
        db.executemany(
            f"UPDATE {table} SET uid = ? WHERE id = ?",
            [
                (
                    hashlib.sha256(json.dumps([table, *row], default=str).encode()).hexdigest()[
                        :32
                    ],
                    row[0],
                )
                for row in rows
            ],
        )
        db.execute(f"CREATE UNIQUE INDEX {table}_by_uid ON {table} (uid)")


def _m008_drift_found(db: Store) -> None:
    """What a re-check found: DRIFT on a recheck run marks its judge (the fingerprint) changed
    from that time on, so older answers of it are not calibration evidence any more."""
    db.execute("ALTER TABLE runs ADD COLUMN drift TEXT")


def _m009_label_made_by(db: Store) -> None:
    """How a changed label was made (judgekit.inputs.sets.Example.made_by): a person's in review."""
    db.execute("ALTER TABLE label_changes ADD COLUMN made_by TEXT")


def _m010_pairwise(db: Store) -> None:
    """Pairwise criteria's runs (judgekit.inputs.pairwise): a run's kind (null: a yes/no one), and
    each pair's label and the winner its judge named in each order."""
    db.execute("ALTER TABLE runs ADD COLUMN kind TEXT")
    db.execute(f"""CREATE TABLE pair_verdicts (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        example_id TEXT NOT NULL,
        label TEXT NOT NULL,
        a_first TEXT,
        b_first TEXT,
        PRIMARY KEY (run_id, example_id)){db.dialect.without_rowid}""")


def _m011_findings_seal(db: Store) -> None:
    """The findings' seal under the evidence key (judgekit.watch.seal): one row; the times a keyed
    writer found the history unsealed (its lapses); and each run's signature (`History.kept`)."""
    db.execute("CREATE TABLE findings_seal (id INTEGER PRIMARY KEY, mac TEXT NOT NULL)")
    db.execute(f"CREATE TABLE seal_lapses (id {db.dialect.key}, at TEXT NOT NULL)")
    # each yes/no run's own signature under the key: a recheck's baseline must be one
    db.execute("ALTER TABLE runs ADD COLUMN mac TEXT")


MIGRATIONS: list[Callable[[Store], None]] = [
    _m001_runs,
    _m002_split_and_purpose,
    _m003_how_asked,
    _m004_verdict_file,
    _m005_confidence,
    _m006_test_looks,
    _m007_uids,
    _m008_drift_found,
    _m009_label_made_by,
    _m010_pairwise,
    _m011_findings_seal,
]
VERSION_TABLE = "judgekit_schema"


# SQLite's header field for the application that owns the file: "JKIT"
APPLICATION_ID = 0x4A4B4954
# the tables the first migration made: a history from before APPLICATION_ID has them
_OWN_TABLES = {"runs", "verdicts"}


def identify(db: Store) -> tuple[int, bool]:
    """This database's schema version and whether it is judgekit's already (False: empty, judgekit
    may make it its own). Another application's database is refused, named, before anything is
    written: a SQLite file is judgekit's by its application id, or, written before judgekit set
    one, by its version and its own tables; a PostgreSQL one by the table judgekit_schema."""
    tables = db.tables()
    if db.dialect is POSTGRES:
        mine = VERSION_TABLE in tables
        version = db.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()[0] if mine else 0
        other = not mine and bool(tables)
    else:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        owner = db.execute("PRAGMA application_id").fetchone()[0]
        mine = owner == APPLICATION_ID or (owner == 0 and version > 0 and tables >= _OWN_TABLES)
        other = not mine and (owner != 0 or version != 0 or bool(tables))
    if other:
        kind = "PostgreSQL" if db.dialect is POSTGRES else "SQLite"
        shown = ", ".join(sorted(tables)[:5]) or "none"
        raise InputError.one(
            db.name,
            "",
            f"is another application's {kind} database (tables: {shown}); it was left "
            "untouched. Give judgekit one of its own with --history",
        )
    if mine:
        _no_rewriters(db)
        if db.dialect is not POSTGRES and version <= len(MIGRATIONS):  # a newer one: refused
            _as_migrated(db, version)
    return version, mine


_MIGRATED: dict[int, set[tuple[str, str, str]]] = {}  # version -> its schema, made once


def _schema(db: Store) -> set[tuple[str, str, str]]:
    """A SQLite database's schema: each table's and index's name, table and statement (white space
    made one)."""
    rows = db.execute(
        # SQLite's own objects by their literal prefix (in LIKE, `_` is any character: an index
        # named sqliteXv would pass for one of them)
        "SELECT name, tbl_name, sql FROM sqlite_master "
        "WHERE type IN ('table', 'index') AND substr(name, 1, 7) <> 'sqlite_'"
    ).fetchall()
    return {(str(n), str(t), " ".join(str(sql or "").split())) for n, t, sql in rows}


def _as_migrated(db: Store, version: int) -> None:
    """Refuse a SQLite history whose schema is not the one judgekit's migrations make at its
    version: a table made again with a CHECK, a DEFAULT, ON CONFLICT IGNORE or another key can
    drop or rewrite what judgekit writes (a recheck's answers, its finding) with no trigger."""
    if version not in _MIGRATED:
        blank = Store(sqlite3.connect(":memory:"), SQLITE, ":memory:", 1.0)
        for migration in MIGRATIONS[:version]:
            migration(blank)
        _MIGRATED[version] = _schema(blank)
        blank.close()
    found, expected = _schema(db), _MIGRATED[version]
    if found != expected:
        odd = sorted(found - expected) or sorted(expected - found)
        raise InputError.one(
            db.name,
            odd[0][0],
            f"its {'definition' if found - expected else 'absence'} is not what judgekit's "
            f"migrations make at schema {version}: the history was changed outside judgekit, "
            "and could drop or rewrite what judgekit writes. Move it away and let judgekit "
            "start a new one (under an evidence key, nothing from before then counts)",
        )


def _no_rewriters(db: Store) -> None:
    """Refuse a history holding what can change what judgekit reads or writes behind its back: a
    trigger, a view, a rule or row security (judgekit makes none). One planted by someone without
    the evidence key could undo a recheck's finding inside the keyed write that seals it, or show
    a reader other rows than the seal was checked against."""
    if db.dialect is POSTGRES:
        rows = db.execute(
            "SELECT 'trigger', trigger_name FROM information_schema.triggers "
            "WHERE trigger_schema = current_schema() "
            "UNION ALL SELECT 'view', table_name FROM information_schema.views "
            "WHERE table_schema = current_schema() "
            "UNION ALL SELECT 'rule', rulename FROM pg_rules WHERE schemaname = current_schema() "
            "UNION ALL SELECT 'row security policy', relname FROM pg_class "
            "WHERE relnamespace = current_schema()::regnamespace AND relrowsecurity"
        ).fetchall()
    else:
        rows = db.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')"
        ).fetchall()
    if rows:
        kind, name = rows[0]
        raise InputError.one(
            db.name,
            "",
            f"holds a {kind} judgekit did not make ({name!r}{' and more' if rows[1:] else ''}): "
            "it could rewrite what judgekit reads and writes, the drift findings among them. "
            "Move this history away and let judgekit start a new one (under an evidence key, "
            "nothing from before then counts)",
        )


def migrate(db: Store) -> None:
    """Apply the migrations this database lacks, with the version bump, in one transaction; a
    database that is not judgekit's, or is a newer judgekit's, is refused before anything
    changes."""
    # another process may be migrating: read the version under the lock
    with db.transaction(lock="schema"):
        version, mine = identify(db)
        if version > len(MIGRATIONS):
            raise InputError.one(
                db.name,
                "",
                f"was written by a newer judgekit (schema {version}, this one knows "
                f"{len(MIGRATIONS)}); upgrade judgekit to read it",
            )
        if db.dialect is POSTGRES and not mine:
            db.execute(f"CREATE TABLE {VERSION_TABLE} (version INTEGER NOT NULL)")
            db.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (0)")
        # a history from before the id is stamped once
        stamped = db.dialect is POSTGRES or (
            db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        )
        if not stamped:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            migration(db)
            if db.dialect is POSTGRES:
                db.execute(f"UPDATE {VERSION_TABLE} SET version = ?", (number,))
            else:
                db.execute(f"PRAGMA user_version = {number}")
