"""The boundary with the disk: read YAML / JSON / JSONL / CSV records (models validate them in
judgekit.inputs.validation's terms), and write files atomically, or under a lock. Every load error
names the file and the line or field.

Each format has one reader here, and every file judgekit reads goes through it; JSON and YAML are
parsed by judgekit.inputs.parsing, which refuses keys written twice, lone surrogates and nesting
too deep, and a CSV column named twice is refused here.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from judgekit.errors import InputError, Problem
from judgekit.fingerprint import digest
from judgekit.inputs.parsing import parse_json, parse_yaml
from judgekit.secrets import redact_known, redact_known_lines

RECORD_SUFFIXES = (".jsonl", ".yaml", ".yml", ".csv")


@dataclass(frozen=True)
class Source:
    """A file's text as read, and the digest of its bytes: what a report records so that the gate
    can tell, without parsing, whether the file is still the one calibrated."""

    text: str
    digest: str


# The largest file judgekit reads whole (a criterion, a YAML, JSON or CSV set, a report, a file to
# import); a JSON Lines file is read line by line and may be larger.
WHOLE_MAX = 256_000_000  # bytes
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


def _unreadable(path: Path | str, error: Exception, hint: str = "", where: str = "") -> InputError:
    return InputError.one(path, where, f"cannot be read ({error}){'; ' + hint if hint else ''}")


def _not_regular(path: Path | str, mode: int, hint: str = "") -> InputError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return InputError.one(
        path,
        "",
        f"is {kind}, not a regular file; judgekit reads files only, so give the file itself"
        f"{'; ' + hint if hint else ''}",
    )


def check_regular(path: Path | str, hint: str = "") -> None:
    """Refuse, before anything opens it, a path that is not a regular file once links are followed
    (a FIFO would hang its reader, `/dev/zero` never ends), for readers judgekit does not open
    itself (pandas, DuckDB, pyarrow)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise _unreadable(path, error, hint) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode, hint)


def open_regular(path: Path | str, hint: str = "", whole: bool = True) -> BinaryIO:
    """`path` opened for reading in binary, refused unless it is a regular file (checked on the
    opened file, without blocking: a FIFO is never waited on) and, when it is to be read `whole`,
    at most WHOLE_MAX bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise _unreadable(path, error, hint) from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise _not_regular(path, found.st_mode, hint)
        if whole and found.st_size > WHOLE_MAX:
            raise _too_large(path, found.st_size)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _too_large(path: Path | str, size: int) -> InputError:
    return InputError.one(
        path,
        "",
        f"is {size / 1e6:.0f} MB or more, larger than the {WHOLE_MAX / 1e6:.0f} MB judgekit reads "
        "whole; split it, or write a set as JSON Lines, which is read line by line",
    )


def read_bytes(path: Path | str, hint: str = "") -> bytes:
    """A regular file's bytes (at most WHOLE_MAX: one that grows past it while read is refused
    too), or an InputError naming the file and `hint`, how to fix it."""
    with open_regular(path, hint) as handle:
        try:
            data = handle.read(WHOLE_MAX + 1)
        except OSError as error:
            raise _unreadable(path, error, hint) from None
    if len(data) > WHOLE_MAX:
        raise _too_large(path, len(data))
    return data


def read_source(path: Path, hint: str = "") -> Source:
    """A file's UTF-8 text (line endings as stored) and its digest, or an InputError naming the file
    (and `hint`, how to fix it)."""
    data = read_bytes(path, hint)
    try:
        # A byte-order mark (Excel's CSVs) is not part of the text.
        return Source(data.decode("utf-8-sig"), digest(data))
    except UnicodeDecodeError as error:
        raise _unreadable(path, error, hint) from None


class SourceLines:
    """A JSON Lines file read one line at a time (lines end at "\n" only, as `iter_records` splits
    them; a byte-order mark is not part of the text), and, once every line is read, the digest of
    its bytes: a file of a million records is never held whole. A byte that is not UTF-8 is an
    InputError naming the file and the line."""

    def __init__(self, path: Path, hint: str = ""):
        self.path, self.hint = path, hint
        self._digest: str | None = None

    @property
    def digest(self) -> str:
        if self._digest is None:
            raise RuntimeError(f"{self.path}: its digest is known once every line is read")
        return self._digest

    def __iter__(self) -> Iterator[str]:
        hashed = hashlib.sha256()
        number = 0
        try:
            with open_regular(self.path, self.hint, whole=False) as handle:
                # a binary file's lines end at b"\n" only
                for number, raw in enumerate(handle, start=1):
                    hashed.update(raw)
                    line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                    yield line[:-1] if line.endswith("\n") else line
        except (OSError, UnicodeDecodeError) as error:
            where = f"line {number}" if isinstance(error, UnicodeDecodeError) else ""
            raise _unreadable(self.path, error, self.hint, where) from None
        self._digest = hashed.hexdigest()


def open_source(path: Path) -> Source | SourceLines:
    """A record file as its readers take it (`iter_records(path, source)`, then `source.digest`):
    JSON Lines line by line, the other formats whole."""
    return SourceLines(path) if path.suffix.lower() == ".jsonl" else read_source(path)


def read_text(path: Path, hint: str = "") -> str:
    """A file's UTF-8 text, or an InputError naming the file (and `hint`, how to fix it)."""
    return read_source(path, hint).text


def read_yaml(path: Path, text: str | None = None) -> Any:
    """A YAML file's data (from `text` when the caller has read it), or an InputError naming the
    file and the line."""
    return parse_yaml(read_text(path) if text is None else text, path)


def iter_records(
    path: Path, text: str | Source | SourceLines | None = None
) -> Iterator[tuple[str, Any]]:
    """Yield `(location, record)` pairs from a JSONL, YAML (a list) or CSV file (from `text` when
    the caller has read it, or from its `open_source`; a JSON Lines file is otherwise read line by
    line).

    A record that cannot be read (a JSON Lines line that does not parse, a CSV row with too many
    cells) comes as a `Problem` in place of the record, so the caller lists it beside the other
    records' problems. CSV cells stay strings, and an empty cell is None; the caller's model
    decides what they mean. A file that cannot be read at all is an InputError.
    """
    suffix = path.suffix.lower()
    if isinstance(text, Source):
        text = text.text
    if suffix == ".jsonl":
        yield from _jsonl_records(path, text)
        return
    if isinstance(text, SourceLines):
        raise TypeError(f"{path}: a file read line by line must be JSON Lines")
    if suffix in (".yaml", ".yml"):
        yield from _yaml_records(path, text)
    elif suffix == ".csv":
        yield from _csv_records(path, text)
    else:
        raise InputError.one(
            path, "", f"unsupported file type {suffix!r}; use one of {', '.join(RECORD_SUFFIXES)}"
        )


def _jsonl_records(path: Path, text: str | SourceLines | None) -> Iterator[tuple[str, Any]]:
    # Records end at "\n" only: str.splitlines() would also split inside a string at U+2028 or
    # U+0085.
    lines = _lines(text) if isinstance(text, str) else SourceLines(path) if text is None else text
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", parse_json(line, path, f"line {number}")
        except InputError as error:
            yield f"line {number}", error.problems[0]


def _yaml_records(path: Path, text: str | None) -> Iterator[tuple[str, Any]]:
    data = read_yaml(path, text)
    if isinstance(data, dict) and "examples" in data:
        others = sorted(map(str, set(data) - {"examples"}))
        if others:  # a misspelt setting would be dropped unread
            raise InputError.one(
                path,
                others[0],
                f"unknown key {others[0]!r} beside 'examples'; a set file holds its examples "
                "alone (an example's own fields go inside each record)",
            )
        data = data["examples"]
    if not isinstance(data, list):
        raise InputError.one(
            path, "", "must hold a list of records (or a mapping with an 'examples' list)"
        )
    for index, record in enumerate(data):
        yield f"[{index}]", record


def _csv_records(path: Path, text: str | None) -> Iterator[tuple[str, Any]]:
    for number, row in enumerate(read_csv(path, text)[1], start=2):
        where = f"line {number}"
        if None in row:
            yield where, Problem(str(path), where, "has more cells than the header has columns")
            continue
        yield where, {k: (None if v == "" else v) for k, v in row.items()}


def _lines(text: str) -> Iterator[str]:
    """`text.split("\n")`, one line at a time: a file of a million lines is never a list of them."""
    start = 0
    while (end := text.find("\n", start)) != -1:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def read_csv(path: Path, text: str | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """A CSV file's columns and its rows as `{column: cell}` (cells as text; the cells of a row
    longer than the header under the key None; from `text` when the caller has read it). A column
    named twice is an InputError."""
    csv.field_size_limit(1 << 30)  # a long reply is one cell, not an error
    try:
        reader = csv.DictReader(io.StringIO(read_text(path) if text is None else text, newline=""))
        columns = list(reader.fieldnames or [])
        rows = list(reader)
    except csv.Error as error:
        raise InputError.one(path, "", f"cannot be read as CSV ({error})") from None
    distinct_columns(path, columns)
    return columns, rows


def csv_header(path: Path) -> list[str]:
    """A CSV file's header names, as written (pandas would rename a second `passed` to
    `passed.1`); opened as `open_regular` opens files."""
    csv.field_size_limit(1 << 30)
    with io.TextIOWrapper(
        open_regular(path, whole=False), encoding="utf-8-sig", newline=""
    ) as handle:
        try:
            return next(csv.reader(handle), [])
        except csv.Error as error:
            raise InputError.one(path, "line 1", f"cannot be read as CSV ({error})") from None


def distinct_columns(path: Path, columns: list[str], where: str = "line 1") -> None:
    """Refuse a table (a CSV header, a Parquet schema) that names a column twice: one reader would
    keep the first, another the last."""
    seen: set[str] = set()
    for column in columns:
        if column in seen:
            raise InputError.one(
                path,
                where,
                f"has the column {column!r} twice; rename or remove one (a reader "
                "would silently keep the last)",
            )
        seen.add(column)


def parse_bool(value: Any) -> Any:
    """Read a CSV boolean cell; leave anything else for the model to reject."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "pass", "passed", "yes", "1"):
            return True
        if lowered in ("false", "fail", "failed", "no", "0"):
            return False
    return value


def write_atomic(path: Path, text: str | Iterable[str], verbatim: bool = False) -> None:
    """Write a whole file or nothing: a killed process never leaves half a file behind. No known
    secret (an API key in the environment, a password of an endpoint) is ever written, except with
    `verbatim`: a file of the user's own, written back as they had it (a criterion file adopted).
    `text` may come as whole lines, each ending in a line break (a million verdicts are then written
    block by block, never held as one string)."""
    commit(stage(path, text, verbatim)[0], path)


def stage(path: Path, text: str | Iterable[str], verbatim: bool = False) -> tuple[Path, str]:
    """`write_atomic`'s first half: the file written beside `path` under a temporary name and
    synced, not yet in place. Returns that name and the sha256 of the bytes written; `commit`
    puts it in place (writers of several files that must change together stage them all first)."""
    if isinstance(text, str):
        blocks: Iterable[str] = (text if verbatim else redact_known(text),)
    else:
        blocks = text if verbatim else redact_known_lines(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError.one(
            path, "", f"cannot be written ({error.strerror or error}); choose a writable place"
        ) from None
    hashed = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as handle:
            for block in blocks:
                data = block.encode("utf-8")
                hashed.update(data)
                handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        # mkstemp makes 0600; a report is as readable as any file written
        os.chmod(tmp, 0o666 & ~umask)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise InputError.one(
            path, "", f"cannot be written ({error.strerror or error}); choose a writable place"
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp), hashed.hexdigest()


def commit(staged: Path, path: Path) -> None:
    """Put a staged file in place, in one rename."""
    try:
        os.replace(staged, path)
    except OSError as error:
        staged.unlink(missing_ok=True)
        raise InputError.one(
            path, "", f"cannot be written ({error.strerror or error}); choose a writable place"
        ) from None


def sweep(path: Path) -> None:
    """Remove what writers of `path` killed before they finished left beside it (their staged
    files). Call it holding the writers' lock (`locked(path)`)."""
    for left in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            left.unlink()


class locked:
    """An exclusive lock on a file beside `path` (`.NAME.lock`), for writers that must take turns:
    each reads what the last one left. Blocks until the lock is free; the lock file is removed
    when the last holder is done.

    Removing it is safe because every holder follows one rule: it removes the file only while it
    holds the lock, and after taking the lock it checks that the file it locked is still the one
    on disk under that name, taking it again if not. A waiter whose file was removed meanwhile
    (it locked a file no longer in the folder) thus never runs beside the holder of the new one.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with locked(folder / "report.json"):
    ...     pass
    >>> list(folder.iterdir())
    []
    """

    def __init__(self, path: Path) -> None:
        self.lock = path.with_name(f".{path.name}.lock")

    def __enter__(self) -> None:
        import fcntl

        while True:
            try:
                self.lock.parent.mkdir(parents=True, exist_ok=True)
                self.handle = open(self.lock, "a")
            except OSError as error:
                raise InputError.one(
                    self.lock.parent,
                    "",
                    f"cannot be written ({error.strerror or error}); choose a writable place",
                ) from None
            fcntl.flock(self.handle, fcntl.LOCK_EX)
            try:
                if os.path.samestat(os.stat(self.lock), os.fstat(self.handle.fileno())):
                    return
            except FileNotFoundError:
                pass  # its holder removed it while this one waited: lock the file there now
            self.handle.close()

    def __exit__(self, *exc: object) -> None:
        import fcntl

        # Removed while held: a waiter on it finds it gone and takes the one there next. A folder
        # that lets one create files but not remove them keeps it; it works the same.
        with contextlib.suppress(OSError):
            self.lock.unlink()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def csv_line(row: Iterable[Any], ending: str = "\n", quote_all: bool = False) -> str:
    """One CSV row as text, ending in `ending`. A row holding a bare carriage return has every cell
    quoted: the csv module quotes only what the line ending holds, and a reader splits an unquoted
    row at a bare CR."""
    cells = list(row)
    out = io.StringIO()
    if quote_all or any("\r" in str(c) for c in cells):
        csv.writer(out, lineterminator=ending, quoting=csv.QUOTE_ALL).writerow(cells)
    else:
        csv.writer(out, lineterminator=ending).writerow(cells)
    return out.getvalue()
