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
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.stats.sequential import RULES, Rule

READ_FROM_FILE = "judgekit.report.read"  # the models' context: read from report.json
MAX_STAGE = 9  # the judges a verdict can come from: the criterion's (0) and those it escalates to


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
    probe: str | None = None  # the robustness probe whose rewrite of `id` it judged


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
    early_stop_rule: Rule = "exact"
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


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What each field the gate reads may hold, as the report's models (judgekit.report.model) say:
# the two readers accept the same values and read them alike (tests/test_one_reader.py).
_KINDS: dict[str, tuple[str, Any]] = {
    "text": ("text", lambda v: isinstance(v, str)),
    "whole": ("a whole number", _is_whole),
    "number": ("a number", _is_number),
    "flag": ("true or false", lambda v: isinstance(v, bool)),
    "table": ("a table", lambda v: isinstance(v, dict)),
    "list": ("a list", lambda v: isinstance(v, list)),
}


def _field(table: dict[str, Any], name: str, kind: str, where: str, default: Any = ...) -> Any:
    """`table[name]`, when it is of `kind` (or null, when `default` is None); `default` when the
    field is missing and has one; Untrusted naming the field otherwise."""
    said, ok = _KINDS[kind]
    if name not in table:
        if default is ...:
            raise Untrusted(f"report.json's {where}{name} is missing")
        return default
    value = table[name]
    if value is None and default is None:
        return None
    if not ok(value):
        raise Untrusted(f"report.json's {where}{name} is not {said}: {value!r}")
    return value


def _numbers(table: dict[str, Any], name: str) -> dict[str, Any]:
    """A table of figures: each a number or null (metrics), or a pair of them (intervals)."""
    values: dict[str, Any] = _field(table, name, "table", "")
    pair = name == "intervals"
    for key, value in values.items():
        items = value if pair and isinstance(value, list) and len(value) == 2 else [value]
        if (pair and items is not value) or not all(v is None or _is_number(v) for v in items):
            said = "a pair of numbers or nulls" if pair else "a number or null"
            raise Untrusted(f"report.json's {name}.{key} is not {said}: {value!r}")
    return values


def _texts(value: Any, where: str) -> None:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Untrusted(f"report.json's {where} is not a table of text: {value!r}")


def _copies(value: Any) -> dict[str, tuple[str, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
        for k, v in value.items()
    ):
        raise Untrusted(f"report.json's copies is not a table of ids: {value!r}")
    return {k: tuple(v) for k, v in value.items()}


def _consistency(value: Any) -> Any:
    """The flip rate of a consistency part (None when there is none), the part checked whole."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Untrusted(f"report.json's consistency is not a table: {value!r}")
    where = "consistency."
    _field(value, "trials", "whole", where)
    _field(value, "fleiss_kappa", "number", where, None)
    unstable = _field(value, "unstable", "list", where, [])
    if not all(isinstance(i, str) for i in unstable):
        raise Untrusted(f"report.json's consistency.unstable is not a list of ids: {unstable!r}")
    stability = _field(value, "stability", "table", where, {})
    if not all(_is_number(v) for v in stability.values()):
        raise Untrusted("report.json's consistency.stability is not a table of numbers")
    return _field(value, "flip_rate", "number", where, None)


def _early_stop(value: Any) -> tuple[int | None, int | None, int | None, Rule]:
    """Where a stopped run stopped (judged, seed, batch) and by which rule; Nones when it did not
    stop early. A report written before the sequential rule names none: it stopped by the exact
    one (and the gate derives the stop again under the rule named, either way)."""
    if value is None:
        return None, None, None, "exact"
    if not isinstance(value, dict):
        raise Untrusted(f"report.json's early_stop is not a table: {value!r}")
    where = "early_stop."
    if "decision" not in value:
        raise Untrusted("report.json's early_stop.decision is missing")
    _field(value, "decision", "text", where, None)
    for name in ("total", "looks", "calls_saved"):
        _field(value, name, "whole", where)
    rule = _field(value, "rule", "text", where, "exact")
    if rule not in RULES:
        raise Untrusted(f"report.json's early_stop.rule is {rule!r}, not one of {', '.join(RULES)}")
    return (
        _field(value, "judged", "whole", where),
        _field(value, "seed", "whole", where, None),
        _field(value, "batch", "whole", where, None),
        rule,
    )


def _judge(value: Any) -> dict[str, Any]:
    """A judge part, checked whole: its fields of the right kinds, its source one judgekit
    writes, its setup one a setup can be (judgekit.judging.setup)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Untrusted(f"report.json's judge is not a table: {value!r}")
    where = "judge."
    _field(value, "kind", "text", where)
    for name in ("model", "declared_model", "api_base", "family", "prompt_sha"):
        _field(value, name, "text", where, None)
    _field(value, "parameters", "table", where, {})
    _field(value, "via", "text", where, "auto")
    _field(value, "structured", "flag", where, True)
    try:
        Source.parse(_field(value, "source", "text", where, "live"))
        setup = _field(value, "setup", "table", where, None)
        if setup is not None:
            JudgeSetup.from_json(setup)
    except ValueError as error:
        raise Untrusted(f"report.json's judge cannot be read: {error}") from None
    return value


def check_report(data: Any) -> list[Any]:
    """The criteria of a report's data, its own fields checked as the report's model checks them
    (`parse_entry` checks each criterion's); Untrusted naming the first that is not."""
    if not isinstance(data, dict) or not isinstance(data.get("criteria"), list):
        raise Untrusted("it is not a judgekit report (no list of criteria)")
    _field(data, "judgekit_version", "text", "")
    for name in ("verdicts_sha256", "signature"):
        _field(data, name, "text", "", None)
    return list(data["criteria"])


def parse_entry(
    data: Any, lines: tuple[Line, ...] | None = None, judgekit_version: str | None = None
) -> ReportEntry:
    """One criterion of report.json, every field the gate reads checked as the report's model
    checks it; Untrusted naming the first field that cannot be read."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise Untrusted("report.json holds an entry without an id")
    confusion = _field(data, "confusion", "table", "")
    tp, fp, tn, fn = (
        _field(confusion, name, "whole", "confusion.") for name in ("tp", "fp", "tn", "fn")
    )
    judge = _judge(data.get("judge"))
    parameters = judge.get("parameters") or {}
    inputs = _field(data, "inputs", "table", "", None)
    if inputs is not None:
        _texts(inputs, "inputs")
    judged, seed, batch, rule = _early_stop(data.get("early_stop"))
    trials = parameters.get("trials")
    return ReportEntry(
        id=data["id"],
        fingerprint=_field(data, "fingerprint", "text", ""),
        n=_field(data, "n", "whole", ""),
        abstained=_field(data, "abstained", "whole", ""),
        confusion=(tp, fp, tn, fn),
        metrics=_numbers(data, "metrics"),
        intervals=_numbers(data, "intervals"),
        inputs=inputs,
        flip_rate=_consistency(data.get("consistency")),
        labelled_pass=_field(data, "labelled_pass", "whole", "", 0),
        labelled_fail=_field(data, "labelled_fail", "whole", "", 0),
        split=_field(data, "split", "text", "", None),
        calibrated_at=_time(data.get("calibrated_at"), "calibrated_at"),
        evidence_at=_time(data.get("evidence_at"), "evidence_at"),
        early_stop_judged=judged,
        early_stop_seed=seed,
        early_stop_batch=batch,
        early_stop_rule=rule,
        kind=judge.get("kind"),
        model=judge.get("model"),
        declared_model=judge.get("declared_model"),
        family=judge.get("family"),
        source=judge.get("source", "live"),
        api_base=judge.get("api_base"),
        via=judge.get("via", "auto"),
        structured=judge.get("structured", True),
        trials=trials if _is_whole(trials) else None,
        lines=lines,
        copies=_copies(data.get("copies")),
        setup=judge.get("setup"),
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
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
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
    if isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage <= MAX_STAGE:
        raise ValueError(f"stage must be a whole number from 0 to {MAX_STAGE}")
    judge = record.get("judge")
    if judge is not None and not isinstance(judge, str):
        raise ValueError("judge must be text")
    probe = record.get("probe")
    if probe is not None and not isinstance(probe, str):
        raise ValueError("probe must be text")
    return Line(
        criterion if criterion is None else sys.intern(criterion),
        str(rid),
        trial,
        passed,
        at,
        None if confidence is None else float(confidence),
        stage,
        judge if judge is None else sys.intern(judge),
        probe if probe is None else sys.intern(probe),
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
                    probe,
                )
                for (criterion, rid, trial, passed, at, confidence, stage, judge, probe) in (
                    c.verdicts.plain()
                )
            )
            or None
        )
        out.append((c.model_dump(mode="json"), lines))
    return out
