"""The history database's schema: migrations, small functions applied in order (the database's
`user_version` counts those applied), the one write transaction, and what a SQLite error means
for the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

from judgekit.errors import InputError


def _m001_runs(db: sqlite3.Connection) -> None:
    db.execute("""CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
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
    db.execute("""CREATE TABLE verdicts (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        example_id TEXT NOT NULL,
        label INTEGER NOT NULL,
        passed INTEGER,
        PRIMARY KEY (run_id, example_id)) WITHOUT ROWID""")


def _m002_split_and_purpose(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN split TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN purpose TEXT NOT NULL DEFAULT 'calibrate'")
    db.execute("CREATE INDEX runs_by_criterion ON runs (criterion, id)")


def _m003_how_asked(db: sqlite3.Connection) -> None:
    """How the judge was asked beyond its fingerprint, so `recheck` can ask it exactly so again."""
    db.execute("ALTER TABLE runs ADD COLUMN api_base TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN via TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN structured INTEGER")


def _m004_verdict_file(db: sqlite3.Connection) -> None:
    """The digest of a recorded run's verdict file: what it was measured from, not only its name."""
    db.execute("ALTER TABLE runs ADD COLUMN verdicts_sha TEXT")


def _m005_confidence(db: sqlite3.Connection) -> None:
    """Selective judging: each verdict's confidence, and the run's certified threshold (drift watches coverage)."""
    db.execute("ALTER TABLE verdicts ADD COLUMN confidence REAL")
    db.execute("ALTER TABLE runs ADD COLUMN threshold REAL")




def _m006_test_looks(db: sqlite3.Connection) -> None:
    """Every look at a criterion's test split (`improve`, `compare --adopt`, a re-measured edit):
    what each spent of the split's alpha budget, on which examples; and every label changed in review."""
    db.execute("""CREATE TABLE test_looks (
        id INTEGER PRIMARY KEY,
        criterion TEXT NOT NULL,
        at TEXT NOT NULL,
        purpose TEXT NOT NULL,
        generation TEXT NOT NULL,
        examples TEXT NOT NULL,
        alpha REAL NOT NULL,
        p_value REAL,
        accepted INTEGER,
        candidate TEXT)""")
    db.execute("CREATE INDEX looks_by_criterion ON test_looks (criterion, id)")
    db.execute("""CREATE TABLE label_changes (
        id INTEGER PRIMARY KEY,
        criterion TEXT NOT NULL,
        example_id TEXT NOT NULL,
        old INTEGER,
        new INTEGER NOT NULL,
        annotator TEXT,
        at TEXT NOT NULL)""")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m001_runs, _m002_split_and_purpose, _m003_how_asked,
                                                           _m004_verdict_file, _m005_confidence, _m006_test_looks]


def refusal(path: Path, error: sqlite3.Error, timeout_s: float) -> InputError:
    """What a SQLite error means for the history file, and what to do about it."""
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return InputError.one(path, "", f"is locked by another process (another judgekit run writing to it, or "
                                        f"a program holding it open); waited {timeout_s:g} s. Run again once it "
                                        "has finished")
    if name.startswith("SQLITE_READONLY"):
        return InputError.one(path, "", f"cannot be written ({error}); make the file and its folder writable, "
                                        "or pass --history with another file (calibrate: --no-history to keep "
                                        "no history)")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_IOERR", "SQLITE_FULL")):
        return InputError.one(path, "", f"cannot be opened or written ({error}); check the file, its folder and "
                                        "the free space, or pass --history with another file")
    return InputError.one(path, "", f"is damaged or not a judgekit history database ({error}); move it away and "
                                    "judgekit starts a new one (`sqlite3 FILE .recover` may save its runs)")


class transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error): one writer at a time, waiting its turn."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Apply the migrations this database lacks, each with the version bump in one transaction."""
    with transaction(db):  # another process may be migrating: read the version under the lock
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == 0 and tables:  # someone else's database: judgekit's always has a version
            raise InputError.one(path, "", f"is another application's SQLite database (tables: "
                                           f"{', '.join(sorted(tables)[:5])}); give judgekit a file of its own "
                                           "with --history")
        if version > len(MIGRATIONS):
            raise InputError.one(path, "", f"was written by a newer judgekit (schema {version}, this one knows "
                                           f"{len(MIGRATIONS)}); upgrade judgekit to read it")
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            migration(db)
            db.execute(f"PRAGMA user_version = {number}")
