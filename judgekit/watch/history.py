"""Calibration history: every run of every criterion, with its verdicts, in one SQLite file.

The schema grows by migrations, a list of small functions applied in order; the database's
`user_version` counts those applied. Several processes may share one file (WAL journal, a busy
timeout, one write transaction per run), so parallel CI jobs and xdist workers lose nothing.

>>> import tempfile, pathlib
>>> with History.open(pathlib.Path(tempfile.mkdtemp()) / "history.sqlite") as history:
...     history.runs()
[]
"""

from __future__ import annotations

import functools
import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypeVar

from judgekit.errors import InputError
from judgekit.report.model import CriterionReport, Report
from judgekit.version import version


DEFAULT_PATH = Path(".judgekit/history.sqlite")
PURPOSES = ("calibrate", "recheck")
BUSY_TIMEOUT_S = 60.0  # how long to wait for another process's write before calling the history locked


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


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m001_runs, _m002_split_and_purpose, _m003_how_asked,
                                                           _m004_verdict_file, _m005_confidence]


@dataclass(frozen=True)
class Run:
    """One calibration (or re-check) of one criterion, as the history keeps it."""

    id: int
    criterion: str
    created_at: datetime
    purpose: str
    fingerprint: str
    model: str | None
    prompt_sha: str | None
    parameters: dict[str, Any]
    set_fingerprint: str
    split: str | None
    source: str
    n: int
    abstained: int
    metrics: dict[str, float | None]
    api_base: str | None = None  # the endpoint asked, without credentials
    via: str | None = None
    structured: bool | None = None
    verdicts_sha: str | None = None  # a recorded run's verdict file, by the digest of its bytes
    threshold: float | None = None  # selective judging: the judge's certified confidence threshold

    def parts(self) -> dict[str, Any]:
        """What defines the judge and what it was measured on, by name (for telling changes apart)."""
        return {"model": self.model, "prompt": self.prompt_sha, "parameters": self.parameters,
                "set": self.set_fingerprint, "verdicts": self.verdicts_sha}


def _refusal(path: Path, error: sqlite3.Error, timeout_s: float) -> InputError:
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


Returned = TypeVar("Returned")


def _refusing_sqlite_errors(method: Callable[..., Returned]) -> Callable[..., Returned]:
    """A History method whose SQLite errors become InputErrors that say what to do."""

    @functools.wraps(method)
    def checked(self: History, *args: Any, **kwargs: Any) -> Returned:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            raise _refusal(self.path, error, self.timeout_s) from None

    return checked


class History:
    """The history database: `record` a report's criteria, read back `runs` and their `outcomes`."""

    def __init__(self, db: sqlite3.Connection, path: Path, timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.db, self.path, self.timeout_s = db, path, timeout_s

    @classmethod
    def open(cls, path: Path | str = DEFAULT_PATH, create: bool = True,
             timeout_s: float = BUSY_TIMEOUT_S) -> "History":
        """Open (creating and migrating as needed) the history at `path`, waiting up to `timeout_s`
        for another process's write to finish."""
        path = Path(path)
        if not create and not path.is_file():
            raise InputError.one(path, "", "no calibration history here yet; run `judgekit calibrate` first, "
                                           "or pass --history with the right file")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
        except OSError as error:
            raise InputError.one(path, "", f"cannot be opened: {error}") from None
        except sqlite3.Error as error:
            raise _refusal(path, error, timeout_s) from None
        history = cls(db, path, timeout_s)
        try:
            history._prepare()
        except BaseException:
            history.close()
            raise
        return history

    @_refusing_sqlite_errors
    def _prepare(self) -> None:
        self.db.execute("PRAGMA foreign_keys=ON")
        _migrate(self.db, self.path)  # first: a database that is not judgekit's is refused before anything changes
        self.db.execute("PRAGMA journal_mode=WAL")

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @_refusing_sqlite_errors
    def record(self, report: Report, purpose: str = "calibrate") -> list[int]:
        """Keep every criterion of a fresh report (with its verdicts), in one transaction."""
        if purpose not in PURPOSES:
            raise ValueError(f"purpose {purpose!r}; use one of {PURPOSES}")
        ids = []
        with _transaction(self.db):
            for c in report.criteria:
                ids.append(self._insert(c, purpose))
        return ids

    def _insert(self, c: CriterionReport, purpose: str) -> int:
        judge = c.judge
        created = (c.calibrated_at or datetime.now(timezone.utc)).isoformat()
        cursor = self.db.execute(
            "INSERT INTO runs (criterion, created_at, fingerprint, model, prompt_sha, parameters, set_fingerprint, "
            "source, n, abstained, metrics, judgekit_version, split, purpose, api_base, via, structured, verdicts_sha, "
            "threshold) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (c.id, created, c.fingerprint, judge.model if judge else None, judge.prompt_sha if judge else None,
             json.dumps(judge.parameters if judge else {}, sort_keys=True), c.set_fingerprint,
             judge.source if judge else "live", c.n, c.abstained, json.dumps(c.metrics, sort_keys=True),
             version(), c.split, purpose, judge.api_base if judge else None, judge.via if judge else None,
             None if judge is None else int(judge.structured), (c.inputs or {}).get("verdicts"),
             c.selective.stages[0].threshold if c.selective and c.selective.stages else None))
        run_id = int(cursor.lastrowid)
        self.db.executemany("INSERT INTO verdicts (run_id, example_id, label, passed, confidence) VALUES (?,?,?,?,?)",
                            ((run_id, example_id, int(label), None if passed is None else int(passed),
                              c.confidences.get(example_id)) for example_id, (label, passed) in c.outcomes.items()))
        return run_id

    @_refusing_sqlite_errors
    def runs(self, criterion: str | None = None, purpose: str | None = None) -> list[Run]:
        """Runs, oldest first; of one criterion and one purpose when given."""
        where, args = [], []
        if criterion is not None:
            where.append("criterion = ?")
            args.append(criterion)
        if purpose is not None:
            where.append("purpose = ?")
            args.append(purpose)
        sql = f"SELECT {_COLUMNS} FROM runs" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id"
        return [_run(row) for row in self.db.execute(sql, args)]

    @_refusing_sqlite_errors
    def run(self, run_id: int) -> Run:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise InputError.one(self.path, f"run {run_id}", "no such run; `judgekit history` lists them")
        return _run(row)

    @_refusing_sqlite_errors
    def outcomes(self, run_id: int) -> dict[str, tuple[bool, bool | None]]:
        """Example id -> (label, verdict) of one run; verdict None is an abstention."""
        rows = self.db.execute("SELECT example_id, label, passed FROM verdicts WHERE run_id = ?", (run_id,))
        return {example_id: (bool(label), None if passed is None else bool(passed)) for example_id, label, passed in rows}

    @_refusing_sqlite_errors
    def confidences(self, run_id: int) -> dict[str, float]:
        """Example id -> the confidence of its verdict, where the run kept one (selective judging)."""
        rows = self.db.execute("SELECT example_id, confidence FROM verdicts WHERE run_id = ? AND confidence IS NOT "
                               "NULL", (run_id,))
        return {example_id: float(confidence) for example_id, confidence in rows}

    @_refusing_sqlite_errors
    def split_warning(self, criterion: str, prompt_sha: str | None) -> str | None:
        """Warn when this prompt (its few-shot examples included) has been measured on the dev split,
        where it was tuned, and never on the test split: its figures are optimistic."""
        splits = {row[0] for row in self.db.execute(
            "SELECT DISTINCT split FROM runs WHERE criterion = ? AND prompt_sha IS ? AND purpose = 'calibrate'",
            (criterion, prompt_sha))}
        if "dev" in splits and "test" not in splits:
            return ("this prompt has only been measured on the dev split it was tuned on; "
                    "run `judgekit calibrate --split test` before trusting its figures")
        return None


_COLUMNS = ("id, criterion, created_at, purpose, fingerprint, model, prompt_sha, parameters, set_fingerprint, "
            "split, source, n, abstained, metrics, api_base, via, structured, verdicts_sha, threshold")


def _run(row: tuple) -> Run:
    (run_id, criterion, created, purpose, fp, model, prompt_sha, parameters, set_fp, split, source, n,
     abstained, metrics, api_base, via, structured, verdicts_sha, threshold) = row
    return Run(run_id, criterion, datetime.fromisoformat(created), purpose, fp, model, prompt_sha,
               json.loads(parameters), set_fp, split, source, n, abstained, json.loads(metrics), api_base, via,
               None if structured is None else bool(structured), verdicts_sha, threshold)


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error): one writer at a time, waiting its turn."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Apply the migrations this database lacks, each with the version bump in one transaction."""
    with _transaction(db):  # another process may be migrating: read the version under the lock
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


def record_history(report: Report, path: Path, purpose: str = "calibrate") -> Report:
    """Keep a fresh report's runs in the history at `path`; return it with the warnings the
    history adds (a prompt measured only on the split it was tuned on)."""
    with History.open(path) as history:
        history.record(report, purpose)
        criteria = []
        for c in report.criteria:
            warning = history.split_warning(c.id, c.judge.prompt_sha if c.judge else None)
            criteria.append(c.model_copy(update={"warnings": [*c.warnings, warning]}) if warning else c)
    return report.model_copy(update={"criteria": criteria})
