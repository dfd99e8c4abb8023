"""Judged production samples (JSONL, CSV or Parquet; columns `timestamp`, `criterion`, `passed`,
optional `trace_id`), read in chunks and folded into counts per (criterion, window) at once, so
memory is bounded by the number of windows, never by the number of rows. A verdict is read as a
calibration set's label is: JSON booleans and null, or in CSV the cells `parse_bool` takes.

>>> Counts(86400.0).cells
{}
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgekit.errors import InputError, Problem
from judgekit.inputs.files import csv_header, distinct_columns, parse_bool
from judgekit.inputs.parsing import parse_json
from judgekit.inputs.policy import parse_duration

if TYPE_CHECKING:
    import pandas as pd

CHUNK_ROWS = 1_000_000
LINE_MAX = 16_000_000  # characters in one JSON Lines record of judged samples (DuckDB's 16 MB)
COLUMNS = ("timestamp", "criterion", "passed")
_EXPECTED = {
    "timestamp": "ISO 8601 text, or a column of numbers: epoch seconds, 1970 to 9999",
    "passed": "true, false or null: a JSON boolean, not text or a number",
    "criterion": "a criterion id, as text",
}
_EXPECTED_CSV = {
    **_EXPECTED,
    "passed": "a boolean cell as calibration sets take it (true / false, pass / fail, "
    "yes / no, 1 / 0), or an empty cell for an abstention",
}
_MISSING = (
    "\0missing"  # a JSON line without the key (never a value a file can hold: JSON text has no NUL)
)
# Windows start on a Monday at 00:00 UTC (the epoch was a Thursday): 1970-01-05.
ORIGIN = 4 * 86400


@dataclass
class Counts:
    """Verdicts per (criterion, window start in seconds since the epoch): [passed, failed,
    abstained]."""

    window_s: float
    cells: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    rows: int = 0


def _chunks(path: Path) -> Iterator[tuple[pd.DataFrame, list[int] | None]]:
    """The file in chunks of rows, each with its rows' line numbers when they are not simply
    consecutive (None: row i of the file is on line i + 1, after a CSV's header line)."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError.one(
                path, "", "reading Parquet needs pyarrow: pip install 'judgekit-calibrate[parquet]'"
            ) from None
        try:
            table = pq.ParquetFile(path)
        except Exception as error:  # pyarrow raises its own error types for a damaged file
            raise InputError.one(path, "", f"is not a readable Parquet file: {error}") from None
        distinct_columns(path, table.schema_arrow.names, "schema")
        try:
            for batch in table.iter_batches(batch_size=CHUNK_ROWS):
                yield batch.to_pandas(), None
        except Exception as error:
            raise InputError.one(path, "", f"is not a readable Parquet file: {error}") from None
        return
    try:
        if suffix == ".csv":
            distinct_columns(path, csv_header(path))
            for chunk in pd.read_csv(
                path,
                chunksize=CHUNK_ROWS,
                dtype={"criterion": str, "passed": str, "trace_id": str},
                keep_default_na=False,
            ):
                yield chunk, None
        elif suffix in (".jsonl", ".json", ".ndjson"):
            yield from _jsonl_chunks(path)
        else:
            raise InputError.one(path, "", "unknown format; use .jsonl, .csv or .parquet")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise InputError.one(path, "", f"cannot be read: {error}") from None
    except OSError as error:
        raise InputError.one(path, "", f"cannot be read: {error}") from None


def _jsonl_chunks(path: Path, rows: int = 200_000) -> Iterator[tuple[pd.DataFrame, list[int]]]:
    """JSON Lines in chunks: each chunk parsed in one call (twice as fast as a call per line), as
    every reader parses JSON (`parse_json`: a key written twice, a lone surrogate, nesting too deep
    refused); a chunk that does not parse is parsed again line by line to name the bad line."""
    from itertools import islice

    import pandas as pd

    # as every other reader: a byte-order mark is dropped
    with open(path, encoding="utf-8-sig") as handle:
        first = 1
        # every line read at most LINE_MAX characters at a time: a line of gigabytes is refused,
        # never held whole
        bounded = iter(lambda: handle.readline(LINE_MAX + 1), "")
        while True:
            lines = list(islice(bounded, rows))
            if not lines:
                return
            long = next((i for i, line in enumerate(lines) if len(line) > LINE_MAX), None)
            if long is not None:
                raise InputError.one(
                    path,
                    f"line {first + long}",
                    f"is longer than the {LINE_MAX // 1_000_000} million characters judgekit "
                    "reads in one judged sample; a sample is a verdict, not a reply",
                )
            kept = [line for line in lines if line.strip()]
            try:
                records = parse_json("[" + ",".join(kept) + "]", path)
            except InputError:
                records = None
            if records is None or not all(isinstance(r, dict) for r in records):
                records = []
                for number, line in enumerate(lines, start=first):
                    if not line.strip():
                        continue
                    record = parse_json(line, path, f"line {number}")
                    if not isinstance(record, dict):
                        raise InputError.one(path, f"line {number}", "must be a JSON object")
                    records.append(record)
            if not records:
                first += len(lines)
                continue
            # A missing key is not a null: `_MISSING` marks it, and the reader names the line.
            frame = pd.DataFrame(
                {name: [r.get(name, _MISSING) for r in records] for name in COLUMNS},
                index=pd.RangeIndex(len(records)),
            )
            # Line numbers for messages (pandas would deep-copy them through every operation in
            # attrs).
            yield frame, [first + i for i, line in enumerate(lines) if line.strip()]
            first += len(lines)


def _passed(column: pd.Series, text: bool) -> tuple[pd.Series, pd.Series]:
    """The verdict column as 1.0 / 0.0 / NaN (abstained), and a mask of unreadable values. In a
    CSV, the cells a calibration set takes (`parse_bool`) and the empty cell (an abstention); in
    JSON Lines and Parquet, booleans and null only."""
    import numpy as np
    import pandas as pd

    if pd.api.types.is_bool_dtype(column):  # bool, or pandas' nullable boolean
        values = column.astype(float)
        return values, pd.Series(False, index=column.index)
    if text:

        def cell(value: str) -> float | None:
            read = parse_bool(value)
            return float("nan") if value == "" else float(read) if isinstance(read, bool) else None

        values = column.map({value: cell(value) for value in column.unique()}).astype(float)
        return values, values.isna() & column.ne("")
    if pd.api.types.is_numeric_dtype(column):  # 1 / 0 are not booleans; a null is NaN here
        return pd.Series(float("nan"), index=column.index), column.notna()
    kinds = column.map(type)
    is_bool = kinds.isin((bool, np.bool_))
    values = pd.Series(float("nan"), index=column.index)
    values[is_bool] = column[is_bool].astype(float)
    return values, ~is_bool & ~kinds.eq(type(None))


def _timestamps(column: pd.Series) -> pd.Series:
    """Seconds since the epoch (NaN where unreadable): a column of numbers is epoch seconds, text is
    ISO 8601 (without an offset it is taken as UTC). Times before 1970 or after 9999 are
    unreadable."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        seconds = column.astype(float)
    else:
        # a number among text is not read as epoch seconds: only a numeric column is
        column = column.astype(str)
        try:
            parsed = pd.to_datetime(column, utc=True, format="ISO8601", errors="coerce")
        except (pd.errors.OutOfBoundsDatetime, OverflowError, ValueError, TypeError):
            # value by value, to find the bad ones
            parsed = pd.to_datetime(column.map(_one_timestamp), utc=True)
        # Whole seconds in the parsed unit (pandas keeps years outside 1677-2262 in coarser units).
        values = parsed.dt.as_unit("s").array.asi8.astype(float)
        values[parsed.isna().to_numpy()] = float("nan")
        seconds = pd.Series(values, index=column.index)
    return seconds.where((seconds >= 0) & (seconds < _YEAR_10000))


_YEAR_10000 = 253_402_300_800


def _one_timestamp(value: Any) -> Any:
    import pandas as pd

    try:
        return pd.to_datetime(value, utc=True, format="ISO8601")
    except (pd.errors.OutOfBoundsDatetime, OverflowError, ValueError, TypeError):
        return pd.NaT


def read_counts(path: Path | str, window: str) -> Counts:
    """Fold a file of judged samples into counts per criterion and window, chunk by chunk."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise InputError.one(path, "", "no such file of judged samples")
    counts = Counts(parse_duration(window).total_seconds())
    for frame_of_chunk, lines in _chunks(path):
        chunk = _Chunk(path, frame_of_chunk, lines, counts.rows)
        seconds, passed = _checked(chunk)
        start = (
            np.floor((seconds.to_numpy() - ORIGIN) / counts.window_s) * counts.window_s + ORIGIN
        ).astype("int64")
        kind = np.where(
            np.isnan(passed.to_numpy()), 2, 1 - np.nan_to_num(passed.to_numpy()).astype(int)
        )
        frame = (
            chunk.frame.assign(_start=start, _kind=kind)
            .groupby(["criterion", "_start", "_kind"])
            .size()
        )
        for (name, window_start, k), number in frame.items():
            cell = counts.cells.setdefault((str(name), int(window_start)), [0, 0, 0])
            cell[int(k)] += int(number)
        counts.rows += len(chunk.frame)
    if counts.rows == 0:
        raise InputError.one(path, "", "holds no judged samples")
    return counts


@dataclass(frozen=True)
class _Chunk:
    """A chunk of a file of judged samples, and where its rows are in the file."""

    path: Path
    frame: pd.DataFrame
    lines: list[int] | None  # each row's line number (JSON Lines); None: rows are consecutive
    rows_before: int  # rows of the file in the chunks before this one

    def where(self, index: int) -> str:
        """Where row `index` of the chunk is: JSON Lines by line; CSV by data row (a quoted cell
        may span lines); Parquet by row."""
        unit, first = {".csv": ("data row", 1), ".parquet": ("row", 0)}.get(
            self.path.suffix.lower(), ("line", 1)
        )
        return f"{unit} {self.lines[index] if self.lines else first + self.rows_before + index}"


def _checked(chunk: _Chunk) -> tuple[pd.Series, pd.Series]:
    """The chunk's epoch seconds and verdicts (1.0 / 0.0 / NaN abstained); the file is refused,
    naming its unreadable rows, when any row is unreadable."""
    path, frame = chunk.path, chunk.frame
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InputError.one(
            path,
            ", ".join(missing),
            "missing column; judged samples need timestamp, "
            "criterion, passed (and optionally trace_id)",
        )
    # JSON Lines only
    absent = {c: frame[c].eq(_MISSING) if chunk.lines is not None else None for c in COLUMNS}
    seconds = _timestamps(frame["timestamp"])
    passed, bad_verdict = _passed(frame["passed"], text=path.suffix.lower() == ".csv")
    criterion = frame["criterion"]
    bad_criterion = criterion.isna() | (criterion.astype(str).str.strip() == "")
    # JSON may hold a number, a list, an object: a criterion id is text
    if criterion.dtype == object:
        bad_criterion |= ~criterion.map(type).eq(str)
    # a missing key reads as unreadable, then is named as missing
    for column, mask in absent.items():
        if mask is not None and mask.any():
            {"timestamp": seconds, "passed": bad_verdict, "criterion": bad_criterion}[column][
                mask
            ] = float("nan") if column == "timestamp" else True
    bad = seconds.isna() | bad_verdict | bad_criterion
    if bad.any():
        raise _unreadable(chunk, absent, seconds, bad_verdict, bad)
    return seconds, passed


def _unreadable(
    chunk: _Chunk,
    absent: dict[str, pd.Series | None],
    seconds: pd.Series,
    bad_verdict: pd.Series,
    bad: pd.Series,
) -> InputError:
    """The refusal of a chunk's unreadable rows: the first 20 by row and column, with what each
    column takes, and how many more."""
    import numpy as np

    path = chunk.path
    problems = []
    for index in np.flatnonzero(bad.to_numpy())[:20]:
        what = (
            "timestamp"
            if math.isnan(seconds.iloc[index])
            else "passed"
            if bad_verdict.iloc[index]
            else "criterion"
        )
        mask = absent[what]
        if mask is not None and mask.iloc[index]:
            message = "missing key" + ("; write null for an abstention" if what == "passed" else "")
        else:
            value = chunk.frame[what].iloc[index]
            # numpy scalars shown as numbers
            value = value.item() if hasattr(value, "item") else value
            expected = _EXPECTED_CSV if path.suffix.lower() == ".csv" else _EXPECTED
            message = f"{value!r} is not readable ({expected[what]})"
        problems.append(Problem(str(path), f"{chunk.where(int(index))}: {what}", message))
    if int(bad.sum()) > 20:
        problems.append(Problem(str(path), "", f"and {int(bad.sum()) - 20} more unreadable rows"))
    return InputError(problems)
