"""Counts computed anywhere: the one SQL query that folds judged samples into counts per criterion
and window, for a warehouse to run where the samples are, and the file of such counts that
`judgekit monitor --counts` reads. The statistics stay judgekit's; only the counting moves.

    judgekit monitor --print-sql analytics.judged --dialect bigquery > counts.sql
    # its result, exported (criterion, window_start, verdicts, passes, abstentions):
    judgekit monitor --counts counts.csv

The table holds judged samples as `judgekit monitor` reads them: `timestamp` (a TIMESTAMP),
`criterion` (text) and `passed` (a BOOLEAN; NULL is an abstention). A window starts at
`window_start` seconds since the epoch, on the same grid as the file reader's (weeks from a Monday,
1970-01-05), so counts from SQL and from files are the same counts.

>>> print(counts_sql("judged", "1d", "duckdb").splitlines()[1].strip())
345600 + CAST(FLOOR((epoch(timestamp) - 345600) / 86400) AS BIGINT) * 86400 AS window_start,
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, SupportsFloat, SupportsInt

from judgekit.errors import InputError, Problem
from judgekit.inputs.files import check_regular, csv_header, distinct_columns, read_text
from judgekit.inputs.parsing import parse_json
from judgekit.inputs.policy import parse_duration
from judgekit.watch.samples import ORIGIN, Counts

if TYPE_CHECKING:
    import pandas as pd

# Seconds since the epoch of the `timestamp` column, in each dialect.
EPOCH = {
    "duckdb": "epoch(timestamp)",
    "postgres": "EXTRACT(EPOCH FROM timestamp)",
    "bigquery": "UNIX_SECONDS(timestamp)",
    "snowflake": "DATE_PART(EPOCH_SECOND, timestamp)",
    "spark": "unix_timestamp(timestamp)",
}
COLUMNS = ("criterion", "window_start", "verdicts", "passes", "abstentions")
_TABLE = re.compile(r"[A-Za-z_][\w$-]*(\.[A-Za-z_][\w$-]*){0,2}|`[^`;]+`|\"[^\";]+\"")


def window_seconds(window: str) -> int:
    seconds = parse_duration(window).total_seconds()
    if seconds != int(seconds) or seconds < 1:
        raise InputError.one(
            "--window", window, "counts need a window of whole seconds (like 1h, 1d, 1w)"
        )
    return int(seconds)


def counts_sql(table: str, window: str, dialect: str = "duckdb") -> str:
    """The query that counts `table`'s judged samples per criterion and window, in `dialect`."""
    if dialect not in EPOCH:
        raise InputError.one(
            "--dialect", dialect, f"unknown SQL dialect; one of {', '.join(EPOCH)}"
        )
    if not _TABLE.fullmatch(table):
        raise InputError.one(
            "--print-sql",
            table,
            "is not a table name (name, schema.name or project.schema.name; "
            "quote it with backticks or double quotes if it needs other characters)",
        )
    w = window_seconds(window)
    return (
        f"SELECT criterion,\n"
        f"       {ORIGIN} + CAST(FLOOR(({EPOCH[dialect]} - {ORIGIN}) / {w}) AS BIGINT) * {w} "
        f"AS window_start,\n"
        f"       COUNT(*) AS verdicts,\n"
        f"       SUM(CASE WHEN passed THEN 1 ELSE 0 END) AS passes,\n"
        f"       SUM(CASE WHEN passed IS NULL THEN 1 ELSE 0 END) AS abstentions\n"
        f"FROM {table}\n"
        f"GROUP BY 1, 2\n"
        f"ORDER BY 1, 2"
    )


def _frame(path: Path) -> pd.DataFrame:
    import pandas as pd

    suffix = path.suffix.lower()
    try:
        # a column or key written twice is refused, as by every reader (pandas would pick one)
        if suffix == ".csv":
            distinct_columns(path, csv_header(path))
            return pd.read_csv(path, dtype={"criterion": str}, keep_default_na=False)
        if suffix in (".jsonl", ".ndjson"):
            lines = read_text(path).splitlines()
            records = [
                parse_json(line, path, f"line {number}")
                for number, line in enumerate(lines, start=1)
                if line.strip()
            ]
            if not all(isinstance(r, dict) for r in records):
                raise InputError.one(path, "", "every line must be a JSON object")
            return pd.DataFrame.from_records(records)
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            distinct_columns(path, pq.ParquetFile(path).schema_arrow.names, "schema")
            return pd.read_parquet(path)
    except ImportError:
        raise InputError.one(
            path, "", "reading Parquet needs pyarrow: pip install 'judgekit-calibrate[parquet]'"
        ) from None
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as error:
        raise InputError.one(path, "", f"cannot be read: {error}") from None
    raise InputError.one(path, "", "unknown format for counts; use .csv, .jsonl or .parquet")


def read_count_file(path: Path | str, window: str) -> Counts:
    """Counts per criterion and window computed elsewhere (the query of `counts_sql`, or any that
    gives its columns); rows of one criterion and window are added up (counts made in parts)."""
    path = Path(path)
    if not path.exists():
        raise InputError.one(path, "", "no such file of counts")
    check_regular(path)
    frame, w = _frame(path), window_seconds(window)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InputError.one(
            path, ", ".join(missing), "missing column; counts need " + ", ".join(COLUMNS)
        )
    counts, problems = Counts(float(w)), []
    for row, record in enumerate(frame[list(COLUMNS)].itertuples(index=False), start=1):
        where = f"row {row}"
        criterion, numbers = record[0], record[1:]
        if not isinstance(criterion, str) or not criterion.strip():
            problems.append(
                Problem(str(path), f"{where}: criterion", f"{criterion!r} is not a criterion id")
            )
            continue
        if not all(_whole(n) for n in numbers):
            problems.append(
                Problem(
                    str(path),
                    where,
                    "window_start, verdicts, passes and abstentions must be whole "
                    f"numbers of at least 0, not {list(numbers)!r}",
                )
            )
            continue
        start, verdicts, passes, abstentions = (int(n) for n in numbers)
        if passes + abstentions > verdicts:
            problems.append(
                Problem(
                    str(path),
                    where,
                    f"passes {passes} and abstentions {abstentions} are more than "
                    f"the {verdicts} verdicts",
                )
            )
        elif (start - ORIGIN) % w:
            problems.append(
                Problem(
                    str(path),
                    f"{where}: window_start",
                    f"{start} does not start a {window} window "
                    f"(windows start at {ORIGIN} + k x {w}); count with the same --window",
                )
            )
        else:
            cell = counts.cells.setdefault((criterion, start), [0, 0, 0])
            for i, n in enumerate((passes, verdicts - passes - abstentions, abstentions)):
                cell[i] += n
            counts.rows += verdicts
        if len(problems) >= 20:
            break
    if problems:
        raise InputError(problems)
    if counts.rows == 0:
        raise InputError.one(path, "", "holds no counted verdicts")
    return counts


def _whole(value: object) -> bool:
    """A count: a whole number of at least 0 (a boolean or text is not one)."""
    if isinstance(value, (bool, str)):
        return False
    # What float() and int() both take (anything else they refuse with a TypeError).
    if not isinstance(value, (bytes, bytearray)) and not (
        isinstance(value, SupportsFloat) and isinstance(value, SupportsInt)
    ):
        return False
    try:
        return float(value) == int(value) and int(value) >= 0
    except (TypeError, ValueError, OverflowError):
        return False
