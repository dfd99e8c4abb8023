"""A report as the gate reads it: each criterion's entry from plain JSON, the fields the gate
decides on checked by hand (no model building: `judgekit gate` runs before every suite and must
start fast), and the verdicts beside it.

>>> e = parse_entry({"id": "c", "fingerprint": "f", "n": 2, "abstained": 0, "metrics": {},
...                  "confusion": {"tp": 1, "fp": 0, "tn": 1, "fn": 0}, "intervals": {}})
>>> e.id, e.confusion
('c', (1, 0, 1, 0))
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from judgekit.errors import InputError, Problem
from judgekit.inputs.files import SourceLines, iter_records, read_text
from judgekit.inputs.pair import PREVIOUS, VERDICTS
from judgekit.inputs.parsing import parse_json


class Untrusted(Exception):
    """The report cannot be taken as evidence; the message says why, in one line."""


class Line(NamedTuple):
    """One verdict of a verdict file, as the gate reads it (a named tuple: a million are made in
    a few of a frozen dataclass's time)."""

    criterion: str | None
    id: str
    trial: int
    passed: bool | None
    at: datetime | None
    confidence: float | None = None  # selective judging: how sure the judge was
    stage: int = 0  # 0: the criterion's judge; 1: the judge it escalates to
    judge: str | None = None  # the mark of the judge that gave it (judgekit.judging.setup)


@dataclass(frozen=True)
class ReportEntry:
    """One criterion of a report: what was calibrated (files, judge), the stored figures, and the
    verdicts when the report holds them in memory (a fresh one)."""

    id: str
    fingerprint: str
    n: int
    abstained: int
    confusion: tuple[int, int, int, int]  # tp, fp, tn, fn
    metrics: dict[str, Any]
    intervals: dict[str, Any]
    inputs: dict[str, str] | None = None
    flip_rate: Any = None
    labelled_pass: Any = None
    labelled_fail: Any = None
    split: str | None = None
    calibrated_at: datetime | None = None
    evidence_at: datetime | None = None
    early_stop_judged: int | None = None
    early_stop_seed: int | None = None
    early_stop_batch: int | None = None
    kind: str | None = None
    model: str | None = None
    declared_model: str | None = None
    family: str | None = None
    source: str = "live"
    api_base: str | None = None
    via: str = "auto"
    structured: bool = True
    trials: int | None = None
    lines: tuple[Line, ...] | None = None
    # the ids of the set counted once as copies of another (kept id -> copies); None: not said
    copies: dict[str, tuple[str, ...]] | None = None
    # the judge's setup as the report holds it (judgekit.judging.setup.JudgeSetup's JSON; None in
    # a report of an older judgekit), and the judgekit that wrote it
    setup: dict[str, Any] | None = None
    judgekit_version: str | None = None


def _time(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None:
        raise Untrusted(f"report.json's {name} is not a time: {value!r}")
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _table(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _count(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Untrusted(f"report.json's {name} is not a whole number: {value!r}")
    return value


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _copies(value: Any) -> dict[str, tuple[str, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
        for k, v in value.items()
    ):
        raise Untrusted(f"report.json's copies is not a table of ids: {value!r}")
    return {k: tuple(v) for k, v in value.items()}


def parse_entry(
    data: Any, lines: tuple[Line, ...] | None = None, judgekit_version: str | None = None
) -> ReportEntry:
    """One criterion of report.json, or Untrusted naming the field that cannot be read."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise Untrusted("report.json holds an entry without an id")
    confusion = data.get("confusion")
    if not isinstance(confusion, dict):
        raise Untrusted("report.json's confusion is not a table")
    tp, fp, tn, fn = (_count(confusion, name) for name in ("tp", "fp", "tn", "fn"))
    judge = _table(data.get("judge"))
    for name in ("model", "declared_model", "api_base", "kind"):
        if judge.get(name) is not None and not isinstance(judge.get(name), str):
            raise Untrusted(f"report.json's judge.{name} is not text: {judge.get(name)!r}")
    parameters = _table(judge.get("parameters"))
    consistency = _table(data.get("consistency"))
    early = data.get("early_stop")
    inputs = data.get("inputs")
    trials = parameters.get("trials")
    return ReportEntry(
        id=data["id"],
        fingerprint=str(data.get("fingerprint")),
        n=_count(data, "n"),
        abstained=_count(data, "abstained"),
        confusion=(tp, fp, tn, fn),
        metrics=_table(data.get("metrics")),
        intervals=_table(data.get("intervals")),
        inputs={k: v for k, v in inputs.items() if isinstance(v, str)}
        if isinstance(inputs, dict)
        else None,
        flip_rate=consistency.get("flip_rate"),
        labelled_pass=data.get("labelled_pass"),
        labelled_fail=data.get("labelled_fail"),
        split=data.get("split") if isinstance(data.get("split"), str) else None,
        calibrated_at=_time(data.get("calibrated_at"), "calibrated_at"),
        evidence_at=_time(data.get("evidence_at"), "evidence_at"),
        early_stop_judged=_count(early, "judged") if isinstance(early, dict) else None,
        early_stop_seed=_whole(early.get("seed")) if isinstance(early, dict) else None,
        early_stop_batch=_whole(early.get("batch")) if isinstance(early, dict) else None,
        kind=judge.get("kind"),
        model=judge.get("model"),
        declared_model=judge.get("declared_model"),
        family=judge.get("family") if isinstance(judge.get("family"), str) else None,
        source=str(judge.get("source", "live")),
        api_base=judge.get("api_base"),
        via=str(judge.get("via", "auto")),
        structured=judge.get("structured", True) is not False,
        trials=trials if isinstance(trials, int) and not isinstance(trials, bool) else None,
        lines=lines,
        copies=_copies(data.get("copies")),
        setup=judge.get("setup") if isinstance(judge.get("setup"), dict) else None,
        judgekit_version=judgekit_version,
    )


@dataclass(frozen=True)
class ReportFile:
    """report.json as the gate reads it: its criteria as plain data, the judgekit that wrote it,
    the verdicts it names by digest, its signature, and all its data (what the signature covers)."""

    criteria: list[Any]
    judgekit_version: str | None
    verdicts_sha256: str | None
    signature: str | None
    data: dict[str, Any]


def read_entries(path: Path) -> list[Any] | None:
    """The criteria entries of report.json as plain data, None when there is no report.

    Each entry is parsed by `parse_entry` when decided; a file that is not a report is an
    InputError.
    """
    found = read_report(path)
    return None if found is None else found.criteria


def read_report(path: Path) -> ReportFile | None:
    """report.json read plainly (`read_entries`, with what the pair and its signature need)."""
    if not path.exists():
        return None
    data = parse_json(
        read_text(path, "run `judgekit calibrate` first, or pass the report's path"), path
    )
    criteria = data.get("criteria") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(criteria, list):
        raise InputError.one(
            path,
            "criteria",
            "is not a judgekit report (no list of criteria); run `judgekit calibrate` to write one",
        )

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) else None

    return ReportFile(
        criteria, text("judgekit_version"), text("verdicts_sha256"), text("signature"), data
    )


def read_pair(report: Path, named: str | None) -> list[Line]:
    """The verdicts report.json was written with: verdicts.jsonl beside it, or, when a writer was
    killed between its two renames (judgekit.inputs.pair), the previous verdicts it left. Untrusted
    when neither is the file the report names by digest."""
    lines, digest = read_lines(report.with_name(VERDICTS))
    if named is None or digest == named:
        return lines
    previous = report.with_name(PREVIOUS)
    if previous.is_file():
        kept, digest = read_lines(previous)
        if digest == named:
            return kept
    raise Untrusted(
        f"{VERDICTS} is not the verdict file report.json was written with (its digest differs: "
        "edited, or copied from another run)"
    )


def read_lines(path: Path) -> tuple[list[Line], str]:
    """The verdicts of a verdict file, read by judgekit's one JSON Lines reader into plain
    records, and the sha256 of the bytes read."""
    if not path.is_file():
        raise Untrusted(
            f"no {path.name} beside the report: the gate decides from per-example verdicts"
        )
    lines: list[Line] = []
    # one object per time written (a file of recorded verdicts has one)
    times: dict[str, datetime | None] = {}
    source = SourceLines(path)
    try:
        for location, record in iter_records(path, source):
            if isinstance(record, Problem):
                raise Untrusted(f"{path.name} {location} {record.message}")
            try:
                lines.append(_line(record, times))
            except ValueError as error:
                raise Untrusted(f"{path.name} {location} is not a verdict ({error})") from None
    except InputError as error:
        raise Untrusted(str(error.problems[0])) from None
    return lines, source.digest


def _line(record: Any, times: dict[str, datetime | None]) -> Line:
    if not isinstance(record, dict):
        raise ValueError("not an object")
    rid, trial, passed, criterion = (
        record.get("id"),
        record.get("trial", 0),
        record.get("passed"),
        record.get("criterion"),
    )
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise ValueError("id must be text")
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise ValueError("trial must be a whole number")
    if "passed" not in record or not (passed is None or isinstance(passed, bool)):
        raise ValueError("passed must be true, false or null")
    if criterion is not None and not isinstance(criterion, str):
        raise ValueError("criterion must be text")
    written = record.get("at")
    try:
        at = (
            times[written]
            if isinstance(written, str) and written in times
            else _time(written, "at")
        )
    except Untrusted:
        raise ValueError("at must be an ISO 8601 time") from None
    if isinstance(written, str):
        times[written] = at
    confidence, stage = record.get("confidence"), record.get("stage", 0)
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 <= confidence <= 1
    ):
        raise ValueError("confidence must be a number from 0 to 1")
    if isinstance(stage, bool) or not isinstance(stage, int) or stage < 0:
        raise ValueError("stage must be a whole number")
    judge = record.get("judge")
    if judge is not None and not isinstance(judge, str):
        raise ValueError("judge must be text")
    return Line(
        criterion if criterion is None else sys.intern(criterion),
        str(rid),
        trial,
        passed,
        at,
        None if confidence is None else float(confidence),
        stage,
        judge if judge is None else sys.intern(judge),
    )


def entries_of(report: Any) -> list[tuple[Any, tuple[Line, ...] | None]]:
    """A report object's criteria (judgekit.report.Report, in memory) as plain data, each with the
    verdicts it holds: what `parse_entry` reads."""
    out = []
    for c in report.criteria:
        lines = (
            tuple(
                Line(
                    criterion,
                    rid,
                    trial,
                    passed,
                    None if at is None else (at if at.tzinfo else at.replace(tzinfo=UTC)),
                    confidence,
                    stage,
                    judge,
                )
                for (criterion, rid, trial, passed, at, confidence, stage, judge) in (
                    c.verdicts.plain()
                )
            )
            or None
        )
        out.append((c.model_dump(mode="json"), lines))
    return out
