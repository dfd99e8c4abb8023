"""The boundary with the disk: read YAML / JSONL / CSV records, validate them into frozen models,
and write files atomically. Every load error names the file and the line or field.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from judgekit.errors import InputError, Problem

RECORD_SUFFIXES = (".jsonl", ".yaml", ".yml", ".csv")


def problems_of(error: ValidationError, source: str, prefix: str = "") -> list[Problem]:
    """Turn a pydantic error into judgekit problems, one per field, located as `prefix.field`."""
    out = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"] if p != "__root__")
        location = ".".join(x for x in (prefix, loc) if x)
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key; remove it or check its spelling"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif item["type"] == "value_error":  # our own validators' messages, without pydantic's prefix
            message = message.removeprefix("Value error, ")
        out.append(Problem(source, location, message))
    return out


def read_text(path: Path, hint: str = "") -> str:
    """A file's UTF-8 text, or an InputError naming the file (and `hint`, how to fix it)."""
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel's CSVs) is not part of the text
    except (OSError, UnicodeDecodeError) as error:
        raise InputError.one(path, "", f"cannot be read ({error}){'; ' + hint if hint else ''}") from None


def read_yaml(path: Path) -> Any:
    import yaml

    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise InputError.one(path, where, f"is not valid YAML: {problem}") from None


def iter_records(path: Path) -> Iterator[tuple[str, Any]]:
    """Yield `(location, record)` pairs from a JSONL, YAML (a list) or CSV file.

    CSV cells stay strings, and an empty cell is None; the caller's model decides what they mean.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        problems = []
        records = []
        # Records end at "\n" only: str.splitlines() would also split inside a string at U+2028 or U+0085.
        lines = read_text(path).split("\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append((f"line {number}", json.loads(line)))
            except json.JSONDecodeError as error:
                problems.append(Problem(str(path), f"line {number}", f"is not valid JSON: {error.msg}"))
        if problems:
            raise InputError(problems)
        yield from records
    elif suffix in (".yaml", ".yml"):
        data = read_yaml(path)
        if isinstance(data, dict) and "examples" in data:
            data = data["examples"]
        if not isinstance(data, list):
            raise InputError.one(path, "", "must hold a list of records (or a mapping with an 'examples' list)")
        for index, record in enumerate(data):
            yield f"[{index}]", record
    elif suffix == ".csv":
        csv.field_size_limit(1 << 30)  # a long reply is one cell, not an error
        try:
            with path.open(newline="", encoding="utf-8-sig") as handle:
                rows = list(csv.DictReader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as error:
            raise InputError.one(path, "", f"cannot be read as CSV ({error})") from None
        for number, row in enumerate(rows, start=2):
            if None in row:
                raise InputError.one(path, f"line {number}", "has more cells than the header has columns")
            yield f"line {number}", {k: (None if v == "" else v) for k, v in row.items()}
    else:
        raise InputError.one(path, "", f"unsupported file type {suffix!r}; use one of {', '.join(RECORD_SUFFIXES)}")


def parse_bool(value: Any) -> Any:
    """Read a CSV boolean cell; leave anything else for the model to reject."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "pass", "passed", "yes", "1"):
            return True
        if lowered in ("false", "fail", "failed", "no", "0"):
            return False
    return value


def write_atomic(path: Path, text: str) -> None:
    """Write a whole file or nothing: a killed process never leaves half a file behind. No known
    secret (an API key in the environment, a password of an endpoint) is ever written."""
    from judgekit.secrets import redact_known

    text = redact_known(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError.one(path, "", f"cannot be written ({error.strerror or error}); choose a writable place") \
            from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as any file written
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise InputError.one(path, "", f"cannot be written ({error.strerror or error}); choose a writable place") \
            from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class locked:
    """An exclusive lock on a file beside `path` (`.NAME.lock`), for writers that must take turns:
    each reads what the last one left. Blocks until the lock is free.

    >>> import tempfile, pathlib
    >>> with locked(pathlib.Path(tempfile.mkdtemp()) / "report.json"):
    ...     pass
    """

    def __init__(self, path: Path) -> None:
        self.lock = path.with_name(f".{path.name}.lock")

    def __enter__(self) -> None:
        import fcntl

        try:
            self.lock.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.lock, "a")
        except OSError as error:
            raise InputError.one(self.lock.parent, "", f"cannot be written ({error.strerror or error}); "
                                 "choose a writable place") from None
        fcntl.flock(self.handle, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
