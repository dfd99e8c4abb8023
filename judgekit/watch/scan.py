"""Judged samples counted by DuckDB (embedded): a file, a glob (`'samples/*.parquet'`) or a folder
of Parquet, CSV and JSON Lines, folded per criterion and window by the one query of `counts_sql`, so
memory is bounded by the number of windows, never by the number of rows.

Fail-closed: DuckDB counts a file only when every row is in a form the pandas reader
(judgekit.watch.samples) reads the same way; a row in any other form fails the query (`error()`),
and so does a file DuckDB cannot read, and that file is read by the pandas reader instead, which
names the bad row and how to fix it (or counts a form only it reads, as before).

>>> sample_files("judgekit/watch/scan.py")
[PosixPath('judgekit/watch/scan.py')]
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.inputs.files import check_regular
from judgekit.inputs.policy import parse_duration
from judgekit.watch.counts import counts_sql, window_seconds
from judgekit.watch.samples import COLUMNS, ORIGIN, Counts, read_counts

SUFFIXES = (".parquet", ".csv", ".jsonl", ".json", ".ndjson")
_YEAR_10000 = 253_402_300_800
# The instants pandas keeps in nanoseconds (to 2262-04-11): a native timestamp beyond is the pandas
# reader's to judge.
_NATIVE_LIMIT = 9_223_372_036
# ISO 8601 as `pd.to_datetime(format="ISO8601")` reads it and DuckDB's cast to TIMESTAMPTZ reads it
# alike (DuckDB also takes 24:00 and offsets like +99:00, which pandas refuses: they are left out
# here).
_ISO = (
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,9})?)?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?"
)
# A CSV column pandas reads as numbers (epoch seconds), in a form DuckDB reads as the same number.
_NUMBER = r"[0-9]{1,12}(\.[0-9]{1,3})?"
# as parse_bool
_TRUE, _FALSE = (
    ("true", "pass", "passed", "yes", "1"),
    ("false", "fail", "failed", "no", "0"),
)
_NATIVE = (
    "TIMESTAMP",
    "TIMESTAMP_S",
    "TIMESTAMP_MS",
    "TIMESTAMP_NS",
    "TIMESTAMP WITH TIME ZONE",
    "DATE",
)
_NUMERIC = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "FLOAT",
    "DOUBLE",
)


def sample_files(source: Path | str) -> list[Path]:
    """The files a monitor input names: a file, the files a glob matches, or a folder's sample
    files."""
    path, text = Path(source), str(source)
    # its sample files, in subfolders too (Hive-style partitions), hidden ones left out
    if path.is_dir():
        found = _unique(
            p
            for p in path.rglob("*")
            if p.is_file()
            and p.suffix.lower() in SUFFIXES
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not found:
            raise InputError.one(
                path,
                "",
                "the folder holds no .parquet, .csv or .jsonl file of judged samples; "
                "give the folder that holds them, a file, or a glob like 'samples/*.parquet'",
            )
        return found
    if not path.exists() and any(ch in text for ch in "*?["):
        found = _unique(p for p in _globbed(text) if p.is_file())
        if not found:
            raise InputError.one(
                text,
                "",
                "the glob matches no file; check the folder and the pattern, and quote "
                "it ('samples/*.parquet') so that the shell passes it as it is",
            )
        return found
    if path.exists():  # a missing file is named by its reader
        check_regular(path)  # a FIFO would hang every reader below, /dev/zero never end
    return [path]


def _unique(paths: Iterable[Path]) -> list[Path]:
    """The files in order, each once however many names (symbolic or hard links) it has."""
    seen: dict[tuple[int, int], Path] = {}
    for p in sorted(paths):
        try:
            found = p.stat()
        except OSError:  # a dangling link
            continue
        seen.setdefault((found.st_dev, found.st_ino), p)
    return list(seen.values())


def _globbed(pattern: str) -> Iterator[Path]:
    """The paths a glob matches; `**` walks the folders below without following links to folders
    (glob.glob follows them, and two crossing links never end), leaving hidden ones out as glob
    does."""
    if "**" not in pattern:
        yield from (Path(p) for p in glob.glob(pattern))
        return
    head, slash, _ = pattern.partition("**")[0].rpartition("/")
    base = head if slash else "."
    for root, folders, files in os.walk(base or "/", followlinks=False):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for name in files:
            path = os.path.join(root, name)
            shown = path[2:] if base == "." and path.startswith("./") else path
            if not name.startswith(".") and (
                fnmatch.fnmatchcase(shown, pattern)
                or fnmatch.fnmatchcase(shown, pattern.replace("**/", ""))
            ):
                yield Path(shown)


def count_samples(source: Path | str, window: str) -> Counts:
    """Counts per criterion and window of every file `source` names (see `sample_files`), added
    up."""
    files, seconds = sample_files(source), parse_duration(window).total_seconds()
    # the query's grid is whole seconds; the pandas reader takes any window
    if seconds != int(seconds):
        parts = [read_counts(path, window) for path in files]
    else:
        with connect() as con:
            parts = [
                duckdb_counts(con, path, window) or read_counts(path, window) for path in files
            ]
    total = Counts(seconds)
    for part in parts:
        for key, cell in part.cells.items():
            mine = total.cells.setdefault(key, [0, 0, 0])
            for i, n in enumerate(cell):
                mine[i] += n
        total.rows += part.rows
    return total


def connect() -> Any:
    """An in-memory DuckDB connection whose times without an offset are UTC, as the pandas reader
    reads them."""
    import duckdb

    con = duckdb.connect(config={"preserve_insertion_order": False})
    con.execute("SET TimeZone = 'UTC'")
    # it would be written into a long count's output, --json too
    con.execute("SET enable_progress_bar = false")
    return con


def duckdb_counts(con: Any, path: Path, window: str) -> Counts | None:
    """The file's counts, by DuckDB; None when it leaves the file to the pandas reader
    (`read_counts`), which names the file, the bad row and the fix, or counts a form only it
    reads."""
    import duckdb

    w = window_seconds(window)
    try:
        select = _select(con, path, w)
        if select is None:
            return None
        con.execute(f"CREATE OR REPLACE TEMP VIEW judged AS {select}")
        rows = con.execute(counts_sql("judged", window, "duckdb")).fetchall()
    # a row in a form DuckDB is not trusted with (its error()), or a file it cannot read
    except duckdb.Error:
        return None
    # A criterion id is text with more than white space (Python's, which DuckDB's trim does not
    # know).
    if not rows or not all(isinstance(r[0], str) and r[0].strip() for r in rows):
        return None
    counts = Counts(float(w))
    for criterion, start, verdicts, passes, abstentions in rows:
        counts.cells[(criterion, int(start))] = [
            int(passes),
            int(verdicts - passes - abstentions),
            int(abstentions),
        ]
        counts.rows += int(verdicts)
    return counts


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _select(con: Any, path: Path, w: int) -> str | None:
    """The file's judged samples as (timestamp TIMESTAMPTZ of whole seconds, criterion, passed
    BOOLEAN), every row checked; None when the file's columns are of a kind only the pandas reader
    reads."""
    suffix, source = path.suffix.lower(), _literal(str(path))
    if suffix == ".parquet":
        table = f"read_parquet({source})"
        kinds = {
            name: kind
            for name, kind, *_ in con.execute(f"DESCRIBE SELECT * FROM {table}").fetchall()
        }
        if kinds.get("criterion") != "VARCHAR" or kinds.get("passed") != "BOOLEAN":
            return None
        # DuckDB renames a second `passed` to `passed_1`: such a file is the pandas reader's, which
        # refuses it (a nested field of that name sends the file there too)
        schema = con.execute(f"SELECT name FROM parquet_schema({source})").fetchall()
        if any([n for (n,) in schema].count(c) > 1 for c in COLUMNS):
            return None
        kind = kinds.get("timestamp")
        mode = (
            "text"
            if kind == "VARCHAR"
            else "native"
            if kind in _NATIVE
            else "number"
            if kind in _NUMERIC
            else None
        )
        if mode is None:
            return None
        stamp = _timestamp('"timestamp"', mode, w)
        return f"SELECT {stamp} AS timestamp, criterion, passed FROM {table}"
    if suffix == ".csv":
        names = _csv_header(path)
        if names is None:
            return None
        listed = ", ".join(f"{_literal(n)}: 'VARCHAR'" for n in names)
        # Nothing sniffed: no comment character (DuckDB's sniffer would pick '#' and drop such
        # rows), every column text, as named by the header pandas reads.
        table = (
            f"read_csv({source}, auto_detect = false, header = true, delim = ',', "
            f"quote = '\"', escape = '\"', "
            f"comment = '', skip = 0, strict_mode = true, null_padding = false, "
            f"columns = {{{listed}}})"
        )
        first = con.execute(f'SELECT "timestamp" FROM {table} LIMIT 1').fetchone()
        mode = (
            "csv-number"
            if first and first[0] is not None and re.fullmatch(_NUMBER, first[0])
            else "text"
        )
        verdict = (
            f"CASE WHEN passed IS NULL OR passed = '' THEN NULL "
            f"WHEN strlen(passed) = length(passed) AND lower(passed) IN {_TRUE} THEN true "
            f"WHEN strlen(passed) = length(passed) AND lower(passed) IN {_FALSE} THEN false "
            f"ELSE error('passed: not a verdict') END"
        )
        stamp = _timestamp('"timestamp"', mode, w)
        return f"SELECT {stamp} AS timestamp, criterion, {verdict} AS passed FROM {table}"
    if suffix in (".jsonl", ".json", ".ndjson"):
        if _odd_line_breaks(path):
            return None
        table = f"read_json_objects({source}, format = 'newline_delimited')"
        first = con.execute(
            f"SELECT json_type(json -> 'timestamp') FROM {table} LIMIT 1"
        ).fetchone()
        mode = (
            "json-text"
            if first and first[0] == "VARCHAR"
            else "json-number"
            if first and first[0] in ("UBIGINT", "BIGINT", "DOUBLE")
            else None
        )
        if mode is None:
            return None
        # One object per line, each of the three keys once (Python's json keeps the last of a
        # repeated key), no trailing comma (DuckDB's parser allows it, Python's does not), a
        # criterion of text, a verdict that is true, false or null (a missing key is not an
        # abstention).
        keys = ", ".join(f"'{c}'" for c in COLUMNS)
        row = (
            f"json_type(json) = 'OBJECT' "
            f"AND len(list_filter(json_keys(json), lambda k: k IN ({keys}))) = 3 "
            f"AND NOT regexp_matches(json, ',[ \\t\\r\\n]*[\\]}}]') "
            f"AND json_type(json -> 'criterion') = 'VARCHAR' "
            # a character Python's str.splitlines ends a line at, inside the object: the pandas
            # reader's to judge
            f"AND NOT regexp_matches(json, "
            f"'[\\r\\x0b\\x0c\\x1c-\\x1e\\x{{85}}\\x{{2028}}\\x{{2029}}]')"
        )
        verdict = (
            "CASE json_type(json -> 'passed') "
            "WHEN 'BOOLEAN' THEN CAST(json ->> 'passed' AS BOOLEAN) "
            "WHEN 'NULL' THEN NULL ELSE error('passed: not a verdict') END"
        )
        return (
            f"SELECT CASE WHEN {row} THEN {_timestamp('timestamp', mode, w)} "
            f"ELSE error('not a judged sample') "
            f"END AS timestamp, json ->> 'criterion' AS criterion, {verdict} AS passed FROM {table}"
        )
    return None


def _timestamp(column: str, mode: str, w: int) -> str:
    """A TIMESTAMPTZ of the whole seconds the pandas reader reads from `column`, or an error()."""
    if mode == "json-text":
        mode, column = (
            "text",
            "CASE WHEN json_type(json -> 'timestamp') = 'VARCHAR' THEN json ->> 'timestamp' END",
        )
    elif mode == "json-number":
        mode, column = (
            "number",
            (
                "CASE WHEN json_type(json -> 'timestamp') IN ('UBIGINT', 'BIGINT', 'DOUBLE') "
                "THEN CAST(json ->> 'timestamp' AS DOUBLE) END"
            ),
        )
    elif mode == "csv-number":
        mode, column = (
            "number",
            f"CASE WHEN regexp_full_match({column}, '{_NUMBER}') THEN CAST({column} AS DOUBLE) END",
        )
    if mode == "number":
        # Epoch seconds, fraction and all, as pandas takes them; the window of the whole second must
        # be the window pandas computes from the fraction (floating point could tell them apart at a
        # window's edge).
        v = f"CAST({column} AS DOUBLE)"
        same = f"floor(({v} - {ORIGIN}) / {w}) = floor((floor({v}) - {ORIGIN}) / {w})"
        return (
            f"CASE WHEN {v} >= 0 AND {v} < {_YEAR_10000} AND {same} "
            f"THEN to_timestamp(CAST(floor({v}) AS BIGINT)) "
            f"ELSE error('timestamp: not epoch seconds from 1970 to 9999') END"
        )
    if mode == "text":
        us, limit = (
            f"epoch_us(CAST(CASE WHEN regexp_full_match({column}, '{_ISO}') "
            f"THEN {column} END AS TIMESTAMPTZ))",
            _YEAR_10000,
        )
    else:
        us, limit = f"epoch_us(CAST({column} AS TIMESTAMPTZ))", _NATIVE_LIMIT
    return (
        f"CASE WHEN {us} >= 0 AND {us} < {limit * 1_000_000} THEN to_timestamp({us} // 1000000) "
        f"ELSE error('timestamp: not readable') END"
    )


# Characters Python's str.splitlines ends a line at, or DuckDB takes for white space around an
# object, where Python's json does not (VT, FF, FS-RS, NEL, LS, PS, and a CR not before LF): a file
# with any is the pandas reader's. Each is looked for as bytes (memchr's speed: a regular expression
# was 9x slower).
_ODD = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
_BLOCK = 1 << 24


def _odd_line_breaks(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            tail = b""
            while block := handle.read(_BLOCK):
                seen = tail + block
                if any(odd in seen for odd in _ODD) or seen.count(b"\r") != seen.count(
                    b"\r\n"
                ) + seen.endswith(b"\r"):
                    return True
                tail = block[-2:]
    except OSError:
        return True
    return False


def _csv_header(path: Path) -> list[str] | None:
    """The CSV's column names as pandas reads them (DuckDB trims them: ' passed' would pass for
    'passed'), when the header is one plain line of distinct names holding the three judgekit
    reads."""
    import csv

    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            line = handle.readline()
    except (OSError, UnicodeDecodeError):
        return None
    if '"' in line:
        return None
    names = next(csv.reader([line.rstrip("\r\n")]), [])
    return names if len(set(names)) == len(names) and set(COLUMNS) <= set(names) else None
