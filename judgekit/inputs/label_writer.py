"""Labels written back into a calibration set (JSONL or CSV), in place and under a lock, while
other programs may append to the same file: `write_label` (into `passed`, or an annotator's into
`labels.<name>`), and the reading of records and their spans it needs (judgekit.inputs.merge too).

A label changes the file in place, so a write cut off part way (the process killed, the power cut)
would leave old and new bytes mixed. Before it changes a byte, it saves the bytes it will overwrite
in a journal beside the file (`.NAME.journal`, judgekit.inputs.journal); the next use of the file
(`recover`, which `write_label` and the page call first) puts them back if the write did not finish.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.inputs.files import csv_line, parse_bool, read_bytes
from judgekit.inputs.journal import JournalEntry, RolledBack, change_in_place
from judgekit.inputs.parsing import parse_json


def _text(path: Path, data: bytes | None = None) -> str:
    """The file's text exactly as stored (line endings kept; a byte-order mark dropped)."""
    try:
        return (read_bytes(path) if data is None else data).decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError.one(path, "", f"cannot be read ({error})") from None


def csv_rows(path: Path, text: str) -> tuple[list[str], list[tuple[int, int, list[str]]]]:
    """A CSV's header and each row with the character span it holds, so one row can be replaced."""
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
        raise InputError.one(
            path, f"line {reader.line_num}", f"cannot be read as CSV ({error})"
        ) from None
    if len(set(header)) != len(header):
        raise InputError.one(
            path, "header", "has the same column twice; rename one so no cell is lost"
        )
    if "id" not in header or "output" not in header:
        raise InputError.one(path, "header", "needs columns id and output")
    return header, rows


def _physical_lines(text: str) -> list[str]:
    """Lines ending at \n (a \r\n stays whole; U+2028 and the like do not end a line)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def read_records(path: Path, text: str | None = None, pairs: bool = False) -> list[dict[str, Any]]:
    """The file's records in order (from `text` when the caller has read it); ids unique as text.
    With `pairs`, a pairwise set's (id, output_a and output_b)."""
    text = _text(path) if text is None else text
    if pairs:
        return _pair_records(path, text)
    records: list[dict[str, Any]] = []
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            record = parse_json(line, path, f"line {number}")
            if isinstance(record, dict) and {"output_a", "output_b"} <= record.keys():
                raise InputError.one(
                    path,
                    f"line {number}",
                    "is a pair (output_a, output_b) of a pairwise criterion, which this page "
                    "does not label; `judgekit label FILE.jsonl` labels a pairwise set's pairs",
                )
            if not isinstance(record, dict) or "id" not in record or "output" not in record:
                raise InputError.one(path, f"line {number}", "must be an object with id and output")
            records.append(record)
    elif path.suffix.lower() == ".csv":
        header, rows = csv_rows(path, text)
        records = [dict(zip(header, row, strict=True)) for _, _, row in rows]
    else:
        raise InputError.one(
            path, "", "labels are written back to .jsonl or .csv files; convert this one first"
        )
    seen: set[str] = set()
    for record in records:
        if str(record["id"]) in seen:
            raise InputError.one(
                path,
                f"id {record['id']}",
                "appears twice; give every example its own id, so a "
                "label cannot land on the wrong one",
            )
        seen.add(str(record["id"]))
    return records


def _pair_records(path: Path, text: str) -> list[dict[str, Any]]:
    """A pairwise set's records (JSON Lines: a pair's label is written back to .jsonl only)."""
    if path.suffix.lower() != ".jsonl":
        raise InputError.one(path, "", "pairs' labels are written back to .jsonl files")
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = parse_json(line, path, f"line {number}")
        if not isinstance(record, dict) or not {"id", "output_a", "output_b"} <= record.keys():
            raise InputError.one(
                path, f"line {number}", "must be an object with id, output_a and output_b"
            )
        records.append(record)
    ids = [str(r["id"]) for r in records]
    twice = next((i for i in ids if ids.count(i) > 1), None)
    if twice is not None:
        raise InputError.one(path, f"id {twice}", "appears twice; give every pair its own id")
    return records


def pair_label_of(record: dict[str, Any], annotator: str | None = None) -> str | None:
    """A pair's label (a, b or tie), or with `annotator` that annotator's; None when none yet.
    A pair several annotators labelled counts as labelled (not this page's to overwrite)."""
    if record.get("label") in ("a", "b", "tie"):
        return str(record["label"])
    labels = record.get("labels")
    if annotator is not None:
        mine = labels.get(annotator) if isinstance(labels, dict) else None
        return str(mine) if mine in ("a", "b", "tie") else None
    return "labelled" if labels else None


def write_pair_label(
    path: Path,
    example_id: str,
    label: str,
    *,
    annotator: str | None = None,
    pwrite: Callable[[int, bytes, int], int] = os.pwrite,
) -> RolledBack | None:
    """Set one pair's `label` (a, b or tie; with `annotator`, that annotator's in `labels`),
    in place and journaled as `write_label` does, every other byte and record kept."""
    if label not in ("a", "b", "tie"):
        raise InputError.one(path, f"id {example_id}", f"label {label!r}: give a, b or tie")
    if annotator is not None:
        check_annotator(annotator)
    return change_in_place(
        path,
        lambda data: _pair_change(path, data, example_id, label, annotator),
        lambda start, old, new: JournalEntry(example_id, None, start, old, new, annotator),
        pwrite,
    )


def _pair_change(
    path: Path, data: bytes, example_id: str, label: str, annotator: str | None
) -> tuple[int, int, bytes]:
    text = _text(path, data)
    _pair_records(path, text)  # the file as the page read it: pairs, ids unique
    position = 0
    for line in text.split("\n"):
        if line.strip():
            record = json.loads(line)
            if str(record["id"]) == example_id:
                if annotator is None and record.get("labels"):
                    raise InputError.one(
                        path,
                        f"id {example_id}",
                        "is labelled by several annotators; give your name (--annotator NAME)",
                    )
                change: dict[str, Any] = (
                    {"label": label}
                    if annotator is None
                    else {"labels": {**(record.get("labels") or {}), annotator: label}}
                )
                if annotator is None and record.get("made_by") not in (None, "human"):
                    change["made_by"] = "human"
                stop = position + len(line.rstrip("\r"))
                new = json.dumps({**record, **change}, ensure_ascii=True)
                return (
                    *byte_span(data, text, position, stop),
                    new.ljust(len(text[position:stop].encode())).encode(),
                )
        position += len(line) + 1
    raise InputError.one(path, f"id {example_id}", "no such pair; was the file changed meanwhile?")


def annotator_labels(record: dict[str, Any]) -> dict[str, bool]:
    """A record's annotator labels: its `labels` mapping or a CSV's filled `labels.<name>` cells."""
    given = record.get("labels")
    found: dict[str, Any] = given if isinstance(given, dict) else {}
    found = {
        **found,
        **{
            k.removeprefix("labels."): parse_bool(v)
            for k, v in record.items()
            if k.startswith("labels.") and v not in (None, "")
        },
    }
    return {name: value for name, value in found.items() if isinstance(value, bool)}


def is_annotated(record: dict[str, Any]) -> bool:
    """Labelled by several annotators (`labels`, or CSV `labels.<name>` cells that are filled)."""
    return bool(record.get("labels")) or any(
        k.startswith("labels.") and record[k] not in (None, "") for k in record
    )


def label_of(record: dict[str, Any], annotator: str | None = None) -> bool | None:
    """The record's label as the set loader reads it, or with `annotator` that annotator's; None
    when it has none yet. Annotators' labels count as labelled; so, for an annotator, does
    `passed`."""
    value = parse_bool(record.get("passed"))
    if isinstance(value, bool):
        return value
    if annotator is not None:
        return annotator_labels(record).get(annotator)
    # labelled by annotators: not this page's to overwrite
    return True if is_annotated(record) else None


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")


def check_annotator(name: str) -> str:
    """An annotator's name as a label is written under it (`labels.<name>`), or an InputError."""
    if not _NAME.fullmatch(name):
        raise InputError.one(
            "--annotator",
            "",
            f"{name!r} is not an annotator name; use letters, digits and _ . @ - "
            "(up to 64, starting with a letter or digit), e.g. --annotator ana",
        )
    return name


def write_label(
    path: Path,
    example_id: str,
    passed: bool,
    *,
    annotator: str | None = None,
    pwrite: Callable[[int, bytes, int], int] = os.pwrite,
) -> RolledBack | None:
    """Set one record's `passed` (with `annotator`, that annotator's label in `labels`, or a CSV's
    `labels.<name>` column), leaving every other byte of the file as it was and keeping every record
    others append meanwhile (a CSV without the column gets it, in every row); the label of an
    earlier write cut off part way, if one was found and undone first (see `recover`).

    The file is changed in place and journaled, as judgekit.inputs.journal.change_locked says; a
    file that keeps changing for about two seconds is refused with an error saying so.
    """
    if annotator is not None:
        check_annotator(annotator)
    return change_in_place(
        path,
        lambda data: _change(path, data, example_id, passed, annotator),
        lambda start, old, new: JournalEntry(example_id, passed, start, old, new, annotator),
        pwrite,
    )


def _by_a_person(header: list[str], row: list[str]) -> list[str]:
    """A CSV row whose `made_by` cell says a person made its label (judgekit.inputs.sets)."""
    if "made_by" not in header or row[header.index("made_by")] in ("", "human"):
        return row
    out = list(row)
    out[header.index("made_by")] = "human"
    return out


def record_spans(path: Path, data: bytes) -> tuple[str, list[tuple[str, int, int, dict[str, Any]]]]:
    """The file's text, and each record's id, its character span (a JSON line without its line end,
    a CSV row with it) and the record, in order."""
    text = _text(path, data)
    # a file whose ids collide, or that cannot be read, is refused as the page refuses it
    read_records(path, text)
    if path.suffix.lower() == ".jsonl":
        out, position = [], 0
        for line in text.split("\n"):
            if line.strip():
                record = json.loads(line)
                out.append((str(record["id"]), position, position + len(line.rstrip("\r")), record))
            position += len(line) + 1
        return text, out
    header, rows = csv_rows(path, text)
    records = [(start, stop, dict(zip(header, row, strict=True))) for start, stop, row in rows]
    return text, [(str(record.get("id")), start, stop, record) for start, stop, record in records]


def byte_span(data: bytes, text: str, start: int, stop: int) -> tuple[int, int]:
    """The byte span of `text[start:stop]` in `data` (after a byte-order mark)."""
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    return bom + len(text[:start].encode()), bom + len(text[:stop].encode())


def _change(
    path: Path, data: bytes, example_id: str, passed: bool, annotator: str | None
) -> tuple[int, int, bytes]:
    """Where the record is in `data` (a byte span) and what replaces it, never shorter than it was:
    a shorter JSON line is padded with spaces, a shorter CSV row quoted."""
    text, spans = record_spans(path, data)
    found = next(((start, stop, r) for i, start, stop, r in spans if i == example_id), None)
    if found is None:
        raise InputError.one(
            path, f"id {example_id}", "no such record; was the file changed meanwhile?"
        )
    start, stop, record = found
    if annotator is None and is_annotated(record):
        raise InputError.one(
            path,
            f"id {example_id}",
            "is labelled by several annotators; give your name "
            "(--annotator NAME) to add or change your own label, not their majority",
        )
    if annotator is not None and isinstance(parse_bool(record.get("passed")), bool):
        raise InputError.one(
            path,
            f"id {example_id}",
            "has a label in 'passed' from no named annotator, which an "
            "annotator's label could contradict; name whose it is (move it into labels) or "
            "label without --annotator",
        )
    if (
        annotator is not None
        and record.get("labels") is not None
        and not isinstance(record["labels"], dict)
    ):
        raise InputError.one(
            path,
            f"id {example_id}",
            "has 'labels' that is not a mapping of annotator to true / false; fix it by hand first",
        )

    def replaced(new: str) -> tuple[int, int, bytes]:
        return (*byte_span(data, text, start, stop), new.encode())

    if path.suffix.lower() == ".jsonl":
        line = text[start:stop]
        change: dict[str, Any] = (
            {"passed": passed}
            if annotator is None
            else {"labels": {**(record.get("labels") or {}), annotator: passed}}
        )
        if annotator is None and record.get("made_by") not in (None, "human"):
            # A person's label now, whoever made the one it replaces (no made_by is a person's
            # already: a label fits its record in place, as the set's padding allows). An
            # annotator's label joins the others': their majority keeps its provenance.
            change["made_by"] = "human"
        return replaced(
            json.dumps({**record, **change}, ensure_ascii=True).ljust(len(line.encode()))
        )
    header, rows = csv_rows(path, text)
    column = "passed" if annotator is None else f"labels.{annotator}"
    ending = "\r\n" if "\r\n" in text[: text.find("\n") + 1] else "\n"
    if column not in header:  # a new column: every row changes
        out = io.StringIO()
        out.write(csv_line([*header, column], ending))
        for _, _, row in rows:
            mine = dict(zip(header, row, strict=True))["id"] == example_id
            value = ("true" if passed else "false") if mine else ""
            made = _by_a_person(header, row) if mine and annotator is None else row
            out.write(csv_line([*made, value], ending))
        return (*byte_span(data, text, 0, len(text)), out.getvalue().encode())
    row = list(next(r for b, _, r in rows if b == start)) + [""] * len(header)
    row = row[: len(header)]
    row = _by_a_person(header, row) if annotator is None else row
    row[header.index(column)] = "true" if passed else "false"
    width = len(text[start:stop].encode())
    for quote_all in (False, True):  # quotes change no value
        line = csv_line(row, ending, quote_all)
        if len(line.encode()) >= width:
            break
    # Still shorter (it was quoted throughout): blank lines make up the rest; CSV readers skip them.
    return replaced(line + "\n" * (width - len(line.encode())))
