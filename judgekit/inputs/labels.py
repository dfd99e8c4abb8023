"""Labels written back into a calibration set (JSONL or CSV), in place and under a lock, while
other programs may append to the same file: `write_label`, and the reading of records it needs.

A label changes the file in place, so a write cut off part way (the process killed, the power cut)
would leave old and new bytes mixed. Before it changes a byte, it saves the bytes it will overwrite
in a journal beside the file (`.NAME.journal`); the next use of the file (`recover`, which
`write_label` and the page call first) puts them back if the write did not finish.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from judgekit.errors import InputError
from judgekit.inputs.files import locked, parse_bool
from judgekit.inputs.parsing import parse_json
from judgekit.inputs.journal import Entry, RolledBack, read_at, recover_locked, write_journaled


def _text(path: Path, data: bytes | None = None) -> str:
    """The file's text exactly as stored (line endings kept; a byte-order mark dropped)."""
    try:
        return (path.read_bytes() if data is None else data).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError.one(path, "", f"cannot be read ({error})") from None


def _csv_rows(path: Path, text: str) -> tuple[list[str], list[tuple[int, int, list[str]]]]:
    """A CSV's header and each row with the character span it occupies, so one row can be replaced."""
    csv.field_size_limit(1 << 30)  # a long reply is one cell, not an error
    header: list[str] = []
    rows = []
    position = 0
    lines = _physical_lines(text)
    reader = csv.reader(lines)
    consumed = 0
    try:
        for row in reader:
            start = position
            while consumed < reader.line_num:
                position += len(lines[consumed])
                consumed += 1
            if not header:
                header = row
                continue
            if row:  # a blank line holds no record (CSV readers skip it)
                rows.append((start, position, row))
    except csv.Error as error:
        raise InputError.one(path, f"line {reader.line_num}", f"cannot be read as CSV ({error})") from None
    if len(set(header)) != len(header):
        raise InputError.one(path, "header", "has the same column twice; rename one so no cell is lost")
    if "id" not in header or "output" not in header:
        raise InputError.one(path, "header", "needs columns id and output")
    return header, rows


def _physical_lines(text: str) -> list[str]:
    """Lines ending at \n (a \r\n stays whole; U+2028 and the like do not end a line)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def read_records(path: Path, text: str | None = None) -> list[dict[str, Any]]:
    """The file's records in order (from `text` when the caller has read it); ids unique as text."""
    text = _text(path) if text is None else text
    records: list[dict[str, Any]] = []
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            record = parse_json(line, path, f"line {number}")
            if not isinstance(record, dict) or "id" not in record or "output" not in record:
                raise InputError.one(path, f"line {number}", "must be an object with id and output")
            records.append(record)
    elif path.suffix.lower() == ".csv":
        header, rows = _csv_rows(path, text)
        records = [dict(zip(header, row)) for _, _, row in rows]
    else:
        raise InputError.one(path, "", "labels are written back to .jsonl or .csv files; convert this one first")
    seen: set[str] = set()
    for record in records:
        if str(record["id"]) in seen:
            raise InputError.one(path, f"id {record['id']}", "appears twice; give every example its own id, so a "
                                                             "label cannot land on the wrong one")
        seen.add(str(record["id"]))
    return records


def is_annotated(record: dict[str, Any]) -> bool:
    """Labelled by several annotators (`labels`, or CSV `labels.<name>` cells that are filled)."""
    return bool(record.get("labels")) or any(k.startswith("labels.") and record[k] not in (None, "") for k in record)


def label_of(record: dict[str, Any]) -> bool | None:
    """The record's label as the set loader reads it; annotators' labels count as labelled."""
    if is_annotated(record):
        return True  # labelled by annotators: not this page's to overwrite
    value = parse_bool(record.get("passed"))
    return value if isinstance(value, bool) else None


# How long a file must hold still between two reads. A program that pauses longer than this in the
# middle of rewriting a file cannot be told from one that has finished.
_PAUSE = 0.05
_ATTEMPTS = 20  # reads, about two seconds, before a file that keeps changing is refused


def write_label(path: Path, example_id: str, passed: bool, *,
                pwrite: Callable[[int, bytes, int], int] = os.pwrite) -> RolledBack | None:
    """Set one record's `passed`, leaving every other byte of the file as it was and keeping every
    record others append meanwhile (a CSV without a `passed` column gets one, in every row); the
    label of an earlier write cut off part way, if one was found and undone first (see `recover`).

    The file is changed in place, never replaced, so a program holding it open to append (a
    logger's descriptor, `>>`) goes on writing into the file the labels are in. A file that changes
    other than at its end while the label is written is read again; after about two seconds of that,
    the label is refused with an error saying so. `pwrite` writes bytes at an offset as os.pwrite
    does (tests pass one that stops part way).
    """
    with locked(path):
        try:
            rolled_back = recover_locked(path)
            for _ in range(_ATTEMPTS):
                with open(path, "r+b", buffering=0) as file:
                    fd = file.fileno()
                    stamp, data = os.fstat(fd).st_mtime_ns, read_at(fd)
                    try:
                        start, stop, new = _change(path, data, example_id, passed)
                    except InputError:
                        time.sleep(_PAUSE)
                        if os.fstat(fd).st_mtime_ns == stamp and read_at(fd) == data:
                            raise  # the file holds still: it is wrong, not half-written
                        continue
                    tail = _splice(fd, data, start, stop, new)
                    if tail is None:
                        continue
                    write_journaled(path, fd, Entry(example_id, passed, start, tail[0], tail[1]), pwrite)
                    # Written, unless another program moved a new file into its place meanwhile.
                    if os.path.samestat(os.stat(path), os.fstat(fd)):
                        return rolled_back
        except OSError as error:
            raise InputError.one(path, "", f"cannot be written ({error.strerror or error})") from None
    raise InputError.one(path, "", "kept changing while the label was written (another program is writing "
                                   "it); the label was not written: try again")


def _change(path: Path, data: bytes, example_id: str, passed: bool) -> tuple[int, int, bytes]:
    """Where the record is in `data` (a byte span) and what replaces it, never shorter than it was:
    a shorter JSON line is padded with spaces, a shorter CSV row quoted."""
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    text = _text(path, data)
    record = next((r for r in read_records(path, text) if str(r["id"]) == example_id), None)
    if record is None:
        raise InputError.one(path, f"id {example_id}", "no such record; was the file changed meanwhile?")
    if is_annotated(record):
        raise InputError.one(path, f"id {example_id}", "is labelled by several annotators; edit its labels, "
                                                      "not its majority")

    def span(start: int, stop: int, new: str) -> tuple[int, int, bytes]:
        start, stop = bom + len(text[:start].encode()), bom + len(text[:stop].encode())
        return start, stop, new.encode()

    if path.suffix.lower() == ".jsonl":
        position = 0
        for line in text.split("\n"):
            if line.strip() and str(json.loads(line).get("id")) == example_id:
                end = "\r" if line.endswith("\r") else ""
                new = json.dumps({**json.loads(line), "passed": passed}, ensure_ascii=True)
                return span(position, position + len(line), new.ljust(len(line.encode()) - len(end)) + end)
            position += len(line) + 1
    header, rows = _csv_rows(path, text)
    ending = "\r\n" if "\r\n" in text[: text.find("\n") + 1] else "\n"
    if "passed" not in header:  # a new column: every row changes
        out = io.StringIO()
        writer = csv.writer(out, lineterminator=ending)
        writer.writerow([*header, "passed"])
        for _, _, row in rows:
            value = ("true" if passed else "false") if dict(zip(header, row))["id"] == example_id else ""
            writer.writerow([*row, value])
        return span(0, len(text), out.getvalue())
    start, stop, row = next(r for r in rows if dict(zip(header, r[2]))["id"] == example_id)
    row = list(row) + [""] * (len(header) - len(row))
    row[header.index("passed")] = "true" if passed else "false"
    width = len(text[start:stop].encode())
    for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_ALL):  # quotes change no value
        out = io.StringIO()
        csv.writer(out, lineterminator=ending, quoting=quoting).writerow(row)
        if len(out.getvalue().encode()) >= width:
            break
    # Still shorter (it was quoted throughout): blank lines make up the rest, which CSV readers skip.
    return span(start, stop, out.getvalue() + "\n" * (width - len(out.getvalue().encode())))


def _splice(fd: int, data: bytes, start: int, stop: int, new: bytes) -> tuple[bytes, bytes] | None:
    """Make room for `new` in place of data[start:stop] in the open file, carrying along whatever was
    appended after `data`: the bytes from `start` on as they are and as they are to be written; None,
    with no byte of the file changed but blank lines, if it changed otherwise.

    The file first grows by the bytes the record gains: newlines written as an appender writes
    (O_APPEND), so they land after every record appended so far, and every later one after them.
    Everything before them is then rewritten in one call, over bytes no appender writes again.
    """
    grow = len(new) - (stop - start)
    end = _append(fd, b"\n" * grow) if grow else len(data)
    time.sleep(_PAUSE)  # a program rewriting the file shows itself here: a truncation, or its next piece
    now, mark = read_at(fd, end), end - grow
    if mark < len(data) or now[: len(data)] != data or now[mark:] != b"\n" * grow:
        return None
    tail = new + data[stop:] + now[len(data):mark] if grow else new
    return now[start:start + len(tail)], tail


def _append(fd: int, data: bytes) -> int:
    """Write `data` at the file's end, after every byte appended so far; the end after it."""
    import fcntl

    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_APPEND)  # only for this write: pwrite must not append
    try:
        if os.write(fd, data) != len(data):
            raise OSError(f"only part of {len(data)} bytes could be written")
        return os.lseek(fd, 0, os.SEEK_CUR)
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)
