"""Moving a history between databases: `judgekit history export` writes every run (with its
verdicts), every look at a test split and every label changed in review as JSON Lines;
`judgekit history import` adds them to another history, SQLite or PostgreSQL.

Each row keeps the random uid it was given when first recorded, so an import adds what the history
lacks and skips what it already holds: importing twice, or a history merged back, duplicates
nothing. The looks travel with the runs, so moving a history never refills a test split's alpha
budget. The file is checked whole, by judgekit's one JSON parser, before anything is written, and
written in one transaction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judgekit.errors import InputError, Problem
from judgekit.gate.evidence import CLOCK_SKEW
from judgekit.inputs.files import read_text, write_atomic
from judgekit.inputs.parsing import parse_json
from judgekit.secrets import redact
from judgekit.watch.history import PURPOSES, History
from judgekit.watch.store import SQLITE

# who looked at a test split (judgekit.watch.alpha_budget)
LOOK_PURPOSES = (
    "calibrate",
    "improve",
    "compare",
)

FORMAT = 1
_TEXT: tuple[type, ...] = (str,)
_INT: tuple[type, ...] = (int,)
_REAL: tuple[type, ...] = (int, float)
# A column's types (the last names it in messages) and whether it may be empty (null).
Column = tuple[tuple[type, ...], bool]
# Each table's columns as the file carries them (never the database's own ids), with their types and
# whether they may be empty: the file names only these, so nothing else can reach the SQL.
RUN: dict[str, Column] = {
    "uid": (_TEXT, False),
    "criterion": (_TEXT, False),
    "created_at": (_TEXT, False),
    "purpose": (_TEXT, False),
    "fingerprint": (_TEXT, False),
    "model": (_TEXT, True),
    "prompt_sha": (_TEXT, True),
    "parameters": (_TEXT, False),
    "set_fingerprint": (_TEXT, False),
    "split": (_TEXT, True),
    "source": (_TEXT, False),
    "n": (_INT, False),
    "abstained": (_INT, False),
    "metrics": (_TEXT, False),
    "judgekit_version": (_TEXT, False),
    "api_base": (_TEXT, True),
    "via": (_TEXT, True),
    "structured": (_INT, True),
    "verdicts_sha": (_TEXT, True),
    "threshold": (_REAL, True),
    "kind": (_TEXT, True),
    "mac": (_TEXT, True),  # its signature under the evidence key, which a move keeps
}
LOOK: dict[str, Column] = {
    "uid": (_TEXT, False),
    "criterion": (_TEXT, False),
    "at": (_TEXT, False),
    "purpose": (_TEXT, False),
    "generation": (_TEXT, False),
    "examples": (_TEXT, False),
    "alpha": (_REAL, False),
    "p_value": (_REAL, True),
    "accepted": (_INT, True),
    "candidate": (_TEXT, True),
}
CHANGE: dict[str, Column] = {
    "uid": (_TEXT, False),
    "criterion": (_TEXT, False),
    "example_id": (_TEXT, False),
    "old": (_INT, True),
    "new": (_INT, False),
    "annotator": (_TEXT, True),
    "at": (_TEXT, False),
    "made_by": (_TEXT, True),
}
# Columns added after export files were first written: an older file's row without one has none.
_ADDED = {"label_change": ("made_by",), "run": ("kind", "mac")}
KINDS: dict[str, tuple[str, dict[str, Column]]] = {
    "run": ("runs", RUN),
    "look": ("test_looks", LOOK),
    "label_change": ("label_changes", CHANGE),
}


def export_history(history: History, out: Path) -> dict[str, int]:
    """Write the whole history to `out` (JSON Lines, replaced whole or not at all); how many of
    each."""
    if history.db.dialect is SQLITE and out.resolve() in _files_of(Path(history.path)):
        raise InputError.one(out, "", "is the history itself; export to another file")
    counts = {kind: 0 for kind in KINDS}
    lines = [json.dumps({"judgekit_history": FORMAT})]
    try:
        for kind, line in _lines(history):
            lines.append(line)
            counts[kind] += 1
    except history.db.errors as error:  # the database went away, or refused a read
        raise history.db.refusal(error) from None
    write_atomic(out, "\n".join(lines) + "\n")
    return counts


def _files_of(database: Path) -> set[Path]:
    return {Path(f"{database.resolve()}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")}


def _lines(history: History) -> Iterator[tuple[str, str]]:
    db = history.db
    for kind, (table, columns) in KINDS.items():
        names = list(columns)
        for row in db.execute(f"SELECT id, {', '.join(names)} FROM {table} ORDER BY id").fetchall():
            record: dict[str, Any] = {kind: dict(zip(names, row[1:], strict=True))}
            if kind == "run":
                record["verdicts"] = [
                    list(v)
                    for v in db.execute(
                        "SELECT example_id, label, passed, confidence FROM verdicts "
                        "WHERE run_id = ? ORDER BY example_id",
                        (row[0],),
                    )
                ]
                pairs = [
                    list(v)
                    for v in db.execute(
                        "SELECT example_id, label, a_first, b_first FROM pair_verdicts "
                        "WHERE run_id = ? ORDER BY example_id",
                        (row[0],),
                    )
                ]
                if pairs:
                    record["pair_verdicts"] = pairs
            yield kind, json.dumps(record, sort_keys=True)


def import_history(history: History, source: Path) -> dict[str, tuple[int, int]]:
    """Add the file's runs, looks and label changes the history lacks; (added, already there) of
    each."""
    records = read_export(source)
    try:
        return _add(history, records)
    # another import adding the same rows at once, the database refusing
    except history.db.errors as error:
        said = redact(" ".join(str(error).split()))
        raise InputError.one(
            source,
            "",
            f"not imported into {history.path}: {said}; nothing of it was written, "
            "run the import again (what is there by then is skipped)",
        ) from None


def _add(history: History, records: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    db = history.db
    done = {kind: [0, 0] for kind in KINDS}
    with db.transaction():
        for criterion in sorted({r["look"]["criterion"] for r in records if "look" in r}):
            # as take_look does: no look is taken while these are added
            db.lock(f"looks:{criterion}")
        for kind, (table, columns) in KINDS.items():
            have = {row[0] for row in db.execute(f"SELECT uid FROM {table}")}
            names = list(columns)
            for record in (r for r in records if kind in r):
                row = record[kind]
                if row["uid"] in have:
                    done[kind][1] += 1
                    continue
                have.add(row["uid"])
                sql = (
                    f"INSERT INTO {table} ({', '.join(names)}) "
                    f"VALUES ({', '.join('?' * len(names))})"
                )
                values = [row[name] for name in names]
                if kind != "run":
                    db.execute(sql, values)
                else:
                    run_id = db.insert(sql, values)
                    db.executemany(
                        "INSERT INTO verdicts (run_id, example_id, label, passed, confidence) "
                        "VALUES (?,?,?,?,?)",
                        [(run_id, *v) for v in record["verdicts"]],
                    )
                    db.executemany(
                        "INSERT INTO pair_verdicts (run_id, example_id, label, a_first, b_first) "
                        "VALUES (?,?,?,?,?)",
                        [(run_id, *v) for v in record.get("pair_verdicts", [])],
                    )
                done[kind][0] += 1
    return {kind: (added, skipped) for kind, (added, skipped) in done.items()}


def read_export(source: Path) -> list[dict[str, Any]]:
    """Every record of an export file, checked whole: each problem named by its line."""
    # records end at "\n" only, as iter_records reads JSON Lines
    lines = read_text(source).split("\n")
    problems: list[Problem] = []
    try:
        header = parse_json(lines[0], source, "line 1")
    except InputError:
        header = None
    if not isinstance(header, dict) or header.get("judgekit_history") != FORMAT:
        raise InputError.one(
            source,
            "line 1",
            "is not a judgekit history export (write one with `judgekit history export FILE`)",
        )
    records = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = f"line {number}"
        # judgekit's one JSON parser: a key given twice or a lone surrogate is refused, never
        # guessed
        try:
            record = parse_json(line, source, where)
        except InputError as error:
            problems.extend(error.problems)
            continue
        found = _problem(record)
        if found:
            problems.append(Problem(str(source), where, found))
        else:
            records.append(record)
    if problems:
        raise InputError(problems)
    return records


def _with_added(kind: str, row: Any) -> Any:
    """An older file's row, with none in the columns added since it was written."""
    if isinstance(row, dict):
        for name in _ADDED.get(kind, ()):
            row.setdefault(name, None)
    return row


def _problem(record: Any) -> str | None:
    kinds = [k for k in KINDS if isinstance(record, dict) and k in record]
    if len(kinds) != 1 or set(record) - {kinds[0], "verdicts", "pair_verdicts"}:
        return f"must hold one of {', '.join(KINDS)} (and a run its verdicts)"
    kind = kinds[0]
    row, columns = _with_added(kind, record[kind]), KINDS[kind][1]
    if not isinstance(row, dict) or set(row) != set(columns):
        missing = sorted(set(columns) - set(row)) if isinstance(row, dict) else list(columns)
        extra = sorted(set(row) - set(columns)) if isinstance(row, dict) else []
        return f"{kind}: missing {', '.join(missing) or '-'}; unknown {', '.join(extra) or '-'}"
    for name, (types, empty) in columns.items():
        value = row[name]
        if value is None and empty:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, types)
            or value == ""
            or (isinstance(value, str) and "\x00" in value)
        ):
            return f"{kind}.{name}: {_short(value)} is not a {types[-1].__name__}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{kind}.{name}: {value!r} is not a finite number"
        meaning = _MEANINGS.get(name)
        if meaning is not None and not meaning[0](value, row, kind):
            return f"{kind}.{name}: {_short(value)} is not {meaning[1]}"
    if kind == "run":
        verdicts = record.get("verdicts")
        if not isinstance(verdicts, list) or not all(_verdict(v) for v in verdicts):
            return (
                "run: verdicts must be a list of "
                "[example_id, label 0/1, passed 0/1/null, confidence 0-1 or null]"
            )
        if len({v[0] for v in verdicts}) != len(verdicts):
            return "run: an example's verdict is given twice"
        return _pair_problem(record)
    return None


def _pair_problem(record: dict[str, Any]) -> str | None:
    """A pairwise run's pairs: [example_id, label, winner with a first, winner with b first],
    each label a, b or tie and each winner one of them or null; none for a yes/no run."""
    pairs = record.get("pair_verdicts")
    pairwise = record["run"].get("kind") == "pairwise"
    if pairs is None:
        return "run: a pairwise run must hold its pair_verdicts" if pairwise else None
    winners = ("a", "b", "tie", None)
    if (
        not pairwise
        or not isinstance(pairs, list)
        or not all(
            isinstance(v, list)
            and len(v) == 4
            and isinstance(v[0], str)
            and v[0]
            and v[1] in winners[:3]
            and v[2] in winners
            and v[3] in winners
            for v in pairs
        )
    ):
        return (
            "run: pair_verdicts must be a pairwise run's list of [example_id, label a/b/tie, "
            "winner a first, winner b first (a/b/tie or null)]"
        )
    if len({v[0] for v in pairs}) != len(pairs):
        return "run: a pair's verdict is given twice"
    counted = json.loads(record["run"]["parameters"])
    orders = counted.get("orders")
    if (
        counted.get("inconsistent") not in ("abstain", "tie")
        or orders not in (1, 2)
        or isinstance(orders, bool)
    ):
        return (
            "run: a pairwise run's parameters must say how it counted its pairs (inconsistent "
            "abstain or tie, orders 1 or 2)"
        )
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _instant(value: Any, *_: Any) -> bool:
    """An ISO 8601 time with its offset, no further ahead of this machine's clock than the clock
    skew allows: a run dated in the future would otherwise be "latest" wherever time decides."""
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return False
    return when.tzinfo is not None and when <= datetime.now(UTC) + CLOCK_SKEW


def _json(kind: type) -> Callable[..., bool]:
    def check(value: Any, *_: Any) -> bool:
        try:
            return isinstance(json.loads(value), kind)
        except ValueError:
            return False

    return check


def _examples(value: Any, *_: Any) -> bool:
    return (
        _json(list)(value)
        and all(isinstance(e, str) and e for e in json.loads(value))
        and value != "[]"
    )


def _count(value: int, *_: Any) -> bool:
    return 0 <= value < 2**31


def _share(value: Any, *_: Any) -> bool:
    return math.isfinite(value) and 0 <= value <= 1


_MEANINGS: dict[str, tuple[Callable[..., bool], str]] = {
    "created_at": (_instant, "an ISO 8601 time with its offset, not in the future"),
    "at": (_instant, "an ISO 8601 time with its offset, not in the future"),
    "parameters": (_json(dict), "a JSON object"),
    "metrics": (
        lambda v, *_: (
            _json(dict)(v)
            and all(v is None or (type(v) in (int, float)) for v in json.loads(v).values())
        ),
        "a JSON object of numbers",
    ),
    "examples": (_examples, "a JSON list of example ids"),
    "purpose": (
        lambda v, row, kind: v in (PURPOSES if kind == "run" else LOOK_PURPOSES),
        "a known purpose",
    ),
    "split": (lambda v, *_: v in ("dev", "test"), "dev or test"),
    "n": (_count, "a count"),
    "abstained": (
        lambda v, row, kind: _count(v) and isinstance(row.get("n"), int) and v <= row["n"],
        "a count of at most n",
    ),
    "alpha": (_share, "a share from 0 to 1"),
    "p_value": (_share, "a share from 0 to 1"),
    "threshold": (lambda v, *_: math.isfinite(v), "a finite number"),
    "structured": (lambda v, *_: v in (0, 1), "0 or 1"),
    "accepted": (lambda v, *_: v in (0, 1), "0 or 1"),
    "old": (lambda v, *_: v in (0, 1), "0 or 1"),
    "new": (lambda v, *_: v in (0, 1), "0 or 1"),
}


def _verdict(v: Any) -> bool:
    return (
        isinstance(v, list)
        and len(v) == 4
        and isinstance(v[0], str)
        and v[0] != ""
        and "\x00" not in v[0]
        and type(v[1]) is int
        and v[1] in (0, 1)
        and (v[2] is None or (type(v[2]) is int and v[2] in (0, 1)))
        and (v[3] is None or (type(v[3]) in (int, float) and _share(v[3])))
    )
