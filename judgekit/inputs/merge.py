"""Labelled examples moved from a file of new ones into a criterion's calibration set: `merge`.

Every record is checked first, as the set loader checks it, and every problem is listed at once
(a record without a label, an id the set already holds with other content, an id twice, a field
the set would refuse); on any problem nothing changes. Then, under the locks of both files, the
records are added at the end of the set in its own format (JSONL lines, or CSV rows: a column the
set lacks is added to every row), and blanked out of the new file. Both writes go in place and
through the journal (judgekit.inputs.journal), as labels do: a program appending to either file
keeps its records, and a write cut off part way is rolled back on the next use of the file. A
record the set already holds, identical, is not added again but only blanked: so a merge cut off
between its two writes is finished by running it again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import find_set
from judgekit.inputs.criteria import Criterion
from judgekit.inputs.files import RECORD_SUFFIXES, csv_line, iter_records, locked, read_source
from judgekit.inputs.identity import distinct
from judgekit.inputs.journal import JournalEntry, RolledBack, change_locked, recover_locked
from judgekit.inputs.label_writer import byte_span, csv_rows, record_spans
from judgekit.inputs.sets import (
    CalibrationSet,
    Example,
    checked,
    read_set,
    set_records,
)
from judgekit.inputs.validation import problems_of

_FORMATS = (".jsonl", ".csv")


@dataclass(frozen=True)
class Merged:
    """What a merge did: ids added to the set, ids the set held already (identical: only removed
    from the new file), unlabelled ids left in the new file, and writes cut off earlier, undone."""

    into: Path
    moved: tuple[str, ...]
    already: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    rolled_back: list[RolledBack] = field(default_factory=list)


def set_for(sets_dir: Path, criterion_id: str, new: Path) -> Path:
    """The criterion's calibration set (judgekit.inputs.catalog.find_set), or where a merge makes
    one when it has none: `<sets_dir>/<id>` with the new file's suffix."""
    if not any((sets_dir / f"{criterion_id}{suffix}").is_file() for suffix in RECORD_SUFFIXES):
        if not sets_dir.is_dir():
            raise InputError.one(
                sets_dir, "", "is not a folder of calibration sets; pass --sets DIR"
            )
        return sets_dir / f"{criterion_id}{new.suffix.lower()}"
    return find_set(sets_dir, criterion_id)


def merge(
    new: Path,
    set_path: Path,
    criterion: Criterion,
    *,
    labelled_only: bool = False,
    pwrite: Callable[[int, bytes, int], int] = os.pwrite,
) -> Merged:
    """Move the labelled records of `new` into `set_path` (the criterion's set; made, in the new
    file's format, when there is none); with `labelled_only`, unlabelled records stay in `new`
    instead of being a problem. `pwrite` writes bytes at an offset (tests pass one that stops)."""
    for path in (new, set_path):
        if path.suffix.lower() not in _FORMATS:
            raise InputError.one(
                path, "", "a merge reads and writes .jsonl or .csv files; convert this one first"
            )
    if new.resolve() == set_path.resolve():
        raise InputError.one(
            new, "", "is the criterion's calibration set itself; give the file of new examples"
        )
    with ExitStack() as stack:
        # one order: no two merges deadlock
        for path in sorted({new, set_path}, key=lambda p: str(p.resolve())):
            stack.enter_context(locked(path))
        undone = [
            r
            for r in (recover_locked(new), recover_locked(set_path) if set_path.exists() else None)
            if r
        ]
        plan = _check(new, set_path, criterion, labelled_only)
        ids = tuple(plan.moved) + tuple(plan.already)
        if plan.records:
            if not set_path.exists():
                _create(set_path, plan.records)
            change_locked(
                set_path,
                lambda data: _append(set_path, data, plan.records),
                lambda start, old, out: JournalEntry(
                    "", None, start, old, out, moved=tuple(plan.moved), merged="in"
                ),
                pwrite,
            )
        change_locked(
            new,
            lambda data: _blank(new, data, set(ids)),
            lambda start, old, out: JournalEntry(
                "", None, start, old, out, moved=ids, merged="out"
            ),
            pwrite,
        )
    return Merged(set_path, tuple(plan.moved), tuple(plan.already), tuple(plan.left), undone)


@dataclass
class _Plan:
    records: list[dict[str, Any]] = field(default_factory=list)  # to add, as JSON records
    moved: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def _check(new: Path, set_path: Path, criterion: Criterion, labelled_only: bool) -> _Plan:
    """What the merge will do, or an InputError listing every problem of the new file and set."""
    held, problems = _held(set_path, criterion)
    plan, examples = _Plan(), []
    for where, record in set_records(new, read_source(new).text):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        record = {k: v for k, v in record.items() if v is not None}
        if record.get("passed") is None and not record.get("labels"):
            if labelled_only:
                plan.left.append(str(record.get("id")))
                continue
            problems.append(
                Problem(
                    str(new),
                    where,
                    f"has no label; label it first (`judgekit label {new}`), or "
                    "pass --labelled-only to move only the labelled records and leave this one",
                )
            )
            continue
        example, found = _admit(new, where, record, set_path, held, plan)
        problems += found
        if example is not None:
            examples.append(example)
            plan.records.append(record)
            plan.moved.append(example.id)
    problems += _set_problems(criterion, new, examples, held)
    if not problems and not plan.moved and not plan.already:
        problems.append(
            Problem(
                str(new),
                "",
                f"holds no labelled record to merge; label some first (`judgekit label {new}`)",
            )
        )
    if problems:
        raise InputError(problems)
    return plan


def _held(set_path: Path, criterion: Criterion) -> tuple[dict[str, Example], list[Problem]]:
    """The examples the set holds already, by id, and the problems that keep it from loading."""
    if not set_path.exists() or not any(
        True for _ in iter_records(set_path, read_source(set_path).text)
    ):
        return {}, []
    loaded, found = read_set(set_path, criterion.id)
    problems = [
        Problem(
            p.source,
            p.location,
            f"{p.message} (the set must load before examples are merged into it)",
        )
        for p in found
    ]
    return {e.id: e for e in loaded.examples}, problems


def _admit(
    new: Path,
    where: str,
    record: dict[str, Any],
    set_path: Path,
    held: dict[str, Example],
    plan: _Plan,
) -> tuple[Example | None, list[Problem]]:
    """A labelled record as the example to add, or None with its problems; one the set already
    holds, identical, goes to `plan.already` instead."""
    try:
        example = Example.model_validate(record)
    except ValidationError as error:
        return None, problems_of(error, str(new), where)
    if example.id in held:
        if held[example.id] == example:
            plan.already.append(example.id)  # moved by a merge cut off before it blanked it here
            return None, []
        return None, [
            Problem(
                str(new),
                where,
                f"the id {example.id!r} is already in {set_path} with other "
                "content; give this example another id, or remove one of the two",
            )
        ]
    if set_path.suffix.lower() == ".csv" and record.get("claims"):
        return None, [
            Problem(
                str(new),
                where,
                "has labelled claims, which a CSV set cannot hold; merge it "
                "into a JSONL set, or remove its claims",
            )
        ]
    return example, []


def _set_problems(
    criterion: Criterion, new: Path, examples: list[Example], held: dict[str, Example]
) -> list[Problem]:
    """What the set-wide checks find in the examples to add: few-shot leakage, a missing source,
    and a label opposite to the one the set (or the new file) gives the same example."""
    problems: list[Problem] = []
    try:
        checked(criterion, CalibrationSet(criterion.id, new, tuple(examples)))
    except InputError as error:
        problems += error.problems
    ours = {e.id for e in examples}
    found = distinct(criterion, [*held.values(), *examples], str(new))
    problems += [
        p
        for (later, kept), p in zip(found.conflicts, found.problems, strict=True)
        if later in ours and kept in held
    ]
    return problems


def _cells(record: dict[str, Any]) -> dict[str, str]:
    """A record as CSV row cells, as the set loader reads them (judgekit.inputs.label_reader)."""
    out = {}
    for key, value in record.items():
        if key == "labels":
            out.update({f"labels.{name}": "true" if v else "false" for name, v in value.items()})
        elif key == "tags":
            out[key] = ";".join(value)
        elif key == "selection":  # one cell of JSON
            out[key] = json.dumps(value, sort_keys=True, separators=(",", ":"))
        else:
            out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _create(path: Path, records: list[dict[str, Any]]) -> None:
    """A new set for the criterion: empty, or a CSV header naming every column the records fill."""
    header = ["id", "output"]
    for record in records:
        header += [c for c in _cells(record) if c not in header]
    text = ""
    if path.suffix.lower() == ".csv":
        text = csv_line(header)
    try:
        with open(path, "x", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as error:
        raise InputError.one(
            path, "", f"cannot be written ({error.strerror or error}); choose a writable place"
        ) from None


def _append(path: Path, data: bytes, records: list[dict[str, Any]]) -> tuple[int, int, bytes]:
    """The records added at the end of the set (`data`): JSON lines, or CSV rows (with a column the
    set lacks added to every row, which rewrites the file's bytes in place)."""
    text = data.decode("utf-8-sig")
    ending = "\r\n" if "\r\n" in text[: text.find("\n") + 1] else "\n"
    lead = ending if text and not text.endswith("\n") else ""
    if path.suffix.lower() == ".jsonl":
        added = "".join(json.dumps(r, ensure_ascii=True) + ending for r in records)
        return len(data), len(data), (lead + added).encode()
    header, rows = csv_rows(path, text)
    cells = [_cells(r) for r in records]
    columns = header + [c for row in cells for c in row if c not in header]
    columns = list(dict.fromkeys(columns))
    if columns == header:
        added = "".join(csv_line([row.get(c, "") for c in header], ending) for row in cells)
        return len(data), len(data), (lead + added).encode()
    # a new column: every row changes, as a label's new column does
    lines = [csv_line(columns, ending)]
    lines += [csv_line([*row, *[""] * (len(columns) - len(row))], ending) for _, _, row in rows]
    lines += [csv_line([row.get(c, "") for c in columns], ending) for row in cells]
    return (*byte_span(data, text, 0, len(text)), "".join(lines).encode())


def _blank(
    path: Path, data: bytes, ids: set[str], changed: str = "merge"
) -> tuple[int, int, bytes]:
    """The records of `ids` blanked out of `data` (each byte of them a newline, which every reader
    skips), as one span of the same length."""
    text, spans = record_spans(path, data)
    found = [byte_span(data, text, start, stop) for rid, start, stop, _ in spans if rid in ids]
    if len(found) != len(ids):
        raise InputError.one(
            path,
            "",
            "changed while the merge was written: its records are in the set, and the "
            "merge could not remove them here; run it again"
            if changed == "merge"
            else f"no longer holds all of {', '.join(sorted(ids))}: changed meanwhile; nothing "
            "was taken out, run it again",
        )
    first, last = found[0][0], found[-1][1]
    out = bytearray(data[first:last])
    for start, stop in found:
        out[start - first : stop - first] = b"\n" * (stop - start)
    return first, last, bytes(out)


def remove_examples(
    set_path: Path, ids: set[str], pwrite: Callable[[int, bytes, int], int] = os.pwrite
) -> None:
    """Take the records of `ids` out of a set (JSONL or CSV), in place and through the journal as a
    merge's writes go: `improve --write` moves the set examples it makes few-shot examples into the
    criterion file, so that the set does not grade the judge on what it is shown."""
    if not ids:
        return
    if set_path.suffix.lower() not in _FORMATS:
        raise InputError.one(
            set_path,
            "",
            f"holds {len(ids)} examples that are now few-shot examples of the criterion "
            f"({', '.join(sorted(ids))}); judgekit takes records out of .jsonl and .csv sets "
            "only: remove these by hand before calibrating",
        )
    with locked(set_path):
        recover_locked(set_path)
        change_locked(
            set_path,
            lambda data: _blank(set_path, data, ids, "remove"),
            lambda start, old, out: JournalEntry(
                "", None, start, old, out, moved=tuple(sorted(ids)), merged="out"
            ),
            pwrite,
        )
