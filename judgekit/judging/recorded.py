"""Recorded verdicts: verdicts read from a file — another tool's (`judgekit import`, `calibrate
--verdicts`) or a report's own verdicts.jsonl — one record per example and trial:

    {"id": "ex-1", "passed": true, "criterion": "card-block-confirmed", "reason": "..."}
    {"id": "ex-2", "passed": null}            <- an abstention

>>> RecordedVerdict(id=7, passed=True).line()
'{"id":"7","passed":true}\\n'
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from judgekit.errors import InputError, Problem
from judgekit.inputs.files import Source, SourceLines, iter_records, parse_bool
from judgekit.inputs.validation import ExampleId, Frozen, problems_of, shared_names
from judgekit.judging.verdicts import ClaimCheck, Verdict, aggregate


class RecordedClaim(Frozen):
    """One claim of a reply and its verification, as a claims check recorded it."""

    claim: str
    supported: StrictBool | None = Field(description="null: the verification could not be read.")
    evidence: str | None = None


class RecordedVerdict(Frozen):
    """One verdict in a verdict file: what `--verdicts` reads and a report's verdicts.jsonl holds.

    For a claims criterion a record may give `claims` (each with `supported`) instead of `passed`;
    the strict rule then decides: pass iff there is a claim and every claim is supported.
    """

    criterion: str | None = None
    id: ExampleId
    trial: StrictInt = Field(0, ge=0)
    passed: StrictBool | None = None
    reason: str | None = None
    raw: str | None = Field(None, description="The judge's unreadable answer, kept as given.")
    claims: list[RecordedClaim] | None = None
    at: datetime | None = Field(
        None,
        description="When the judge gave this verdict (the answer's time, for a "
        "cached one the time it was first obtained); the gate's max_age counts from it.",
    )
    judge: str | None = Field(
        None,
        description="The fingerprint of the judgekit judge that gave it (its first "
        "16 hex digits); absent for verdicts another tool recorded.",
    )
    confidence: StrictFloat | None = Field(
        None,
        ge=0,
        le=1,
        description="How sure the judge was (selective judging): "
        "the probability of its answer, or another tool's score from 0 to 1.",
    )
    stage: StrictInt = Field(
        0,
        ge=0,
        le=9,
        description="0: the criterion's judge; 1, 2, ...: the judges it escalates "
        "to (selective judging), each on the examples below the previous one's threshold.",
    )
    probe: str | None = Field(
        None,
        description="The robustness probe whose rewrite of example `id` this verdict is on "
        "(judgekit.judging.probes); null: the example itself.",
    )

    @classmethod
    def trusted(cls, **values: Any) -> RecordedVerdict:
        """A verdict judgekit itself made, already checked, given every field: what
        `model_construct(**values)` builds, as fast as making a dict, and sharing one set of the
        field names (a report of a million verdicts would otherwise hold a million such sets)."""
        if len(values) != len(cls.model_fields):
            raise TypeError(
                "give every field of RecordedVerdict: "
                f"{sorted(set(cls.model_fields) - set(values))}"
            )
        verdict = cls.__new__(cls)
        object.__setattr__(verdict, "__dict__", {name: values[name] for name in cls.model_fields})
        object.__setattr__(verdict, "__pydantic_fields_set__", _EVERY_FIELD)
        object.__setattr__(verdict, "__pydantic_extra__", None)
        object.__setattr__(verdict, "__pydantic_private__", None)
        return verdict

    def line(self) -> str:
        """One JSONL line; `passed` is always written (null is an abstention), defaults are not."""
        data = self.model_dump(mode="json", exclude_defaults=True)
        given = {"passed": self.passed} if "passed" in self.model_fields_set else {}
        return json.dumps({**data, **given}, ensure_ascii=False, separators=(",", ":")) + "\n"

    @field_validator("at", mode="before")
    @classmethod
    def _iso_time(cls, value: Any) -> Any:
        """A time as ISO 8601 text (one without an offset is UTC), read as the gate reads it
        (judgekit.report.reading); a number is not a time here."""
        if value is None or isinstance(value, datetime):
            return value
        if not isinstance(value, str):
            raise ValueError("must be an ISO 8601 time, e.g. 2026-12-03T10:00:00Z")
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("must be an ISO 8601 time, e.g. 2026-12-03T10:00:00Z") from None
        return when if when.tzinfo else when.replace(tzinfo=UTC)

    @model_validator(mode="after")
    def _has_a_verdict(self) -> RecordedVerdict:
        if "passed" not in self.model_fields_set and self.claims is None:
            raise ValueError(
                "has no verdict; add 'passed': true, false or null (an abstention), or 'claims'"
            )
        return self


# The fields set of every `RecordedVerdict.trusted` (pydantic copies it before any change).
_EVERY_FIELD = set(RecordedVerdict.model_fields)


def _word(passed: bool | None) -> str:
    return "null" if passed is None else str(passed).lower()


def load_recorded(path: Path) -> list[RecordedVerdict]:
    """The records of a verdict file (JSONL or CSV); each gives `passed` (null / empty: abstain)."""
    return [record for _, record in _read(path, None)]


def load_by_candidate(path: Path) -> dict[str, list[RecordedVerdict]]:
    """A verdict file of several judges (`judgekit compare --verdicts`), split by its `candidate`
    column, in the order they first appear; one without the column is one candidate, named by the
    file."""
    read = _read(path, "candidate")
    missing = sum(1 for name, _ in read if name is None)
    if 0 < missing < len(read):
        raise InputError.one(
            path,
            "candidate",
            f"{missing} of {len(read)} records name no candidate; give every "
            "record its candidate (or none, for a file of one)",
        )
    out: dict[str, list[RecordedVerdict]] = {}
    for name, record in read:
        out.setdefault(name if name is not None else path.stem, []).append(record)
    return out


def _read(path: Path, column: str | None) -> list[tuple[str | None, RecordedVerdict]]:
    return list(iter_recorded(path, column))


def iter_recorded(
    path: Path, column: str | None = None, source: Source | SourceLines | None = None
) -> Iterator[tuple[str | None, RecordedVerdict]]:
    """Each record of a verdict file, checked, as it is read (from `source`, its `open_source`,
    whose digest then covers the very bytes read), with its `column` (a candidate's name) taken
    out; the problems of every record come after the last, as one InputError."""
    if not path.is_file():
        raise InputError.one(
            path, "", "no such verdict file; pass --verdicts with a JSONL or CSV file"
        )
    problems: list[Problem] = []
    names: dict[frozenset[str], set[str]] = {}
    is_csv = path.suffix.lower() == ".csv"
    read = 0
    for location, record in _yes_no(iter_records(path, source)):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        if not isinstance(record, dict):
            problems.append(Problem(str(path), location, "must be a mapping with id and passed"))
            continue
        if is_csv:
            record = _csv_record(record)
        name = None
        if column is not None and column in record:
            record = dict(record)
            name = record.pop(column)
            if not isinstance(name, str) or name.strip() == "":
                problems.append(
                    Problem(
                        str(path),
                        location,
                        f"{column} must be a name (text, not empty): "
                        "give every record its candidate",
                    )
                )
                continue
        try:
            checked = shared_names(RecordedVerdict.model_validate(record), names)
        except ValidationError as error:
            problems.extend(problems_of(error, str(path), location))
            continue
        read += 1
        if not problems:  # after a problem, the rest are only checked
            yield name, checked
    if problems:
        raise InputError(problems)
    if not read:
        raise InputError.one(path, "", "holds no verdicts")


def is_pair_record(record: object) -> TypeGuard[dict[str, Any]]:
    """Whether a verdict file's record is a pairwise verdict (`a_first` and `b_first`: read by
    judgekit.judging.pairwise and the fake judge's scripts), not a yes/no one."""
    return isinstance(record, dict) and {"a_first", "b_first"} <= record.keys()


def _yes_no(records: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The records of a verdict file but its pairwise verdicts."""
    return (r for r in records if not is_pair_record(r[1]))


def _csv_record(row: dict[str, Any]) -> dict[str, Any]:
    """A CSV row as a record: its empty cells left out, but for `passed` (read as a boolean, and
    empty: null, an abstention); `trial`, `stage` and `confidence` read as the numbers a JSON
    record gives (text that is not one is left for the model to name)."""
    record = {k: v for k, v in row.items() if v is not None or k == "passed"}
    if "passed" in record:
        record["passed"] = parse_bool(record["passed"])
    for name, kind in (("trial", int), ("stage", int), ("confidence", float)):
        value = record.get(name)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):  # not a number: the model names it
                record[name] = kind(value.strip())
    return record


def _verdict(
    record: RecordedVerdict, no_claims: str, default_at: float | None, example_id: str
) -> Verdict:
    passed, reason, checks = record.passed, record.reason, None
    if record.claims is not None:
        checks = tuple(ClaimCheck(c.claim, c.supported, c.evidence) for c in record.claims)
        if "passed" not in record.model_fields_set:
            passed, rule = aggregate(checks, no_claims)
            reason = reason or rule
    at = record.at.timestamp() if record.at is not None else default_at
    return Verdict(
        example_id,
        passed,
        reason,
        trial=record.trial,
        abstention="recorded" if passed is None else None,
        raw=record.raw,
        claims=checks,
        obtained_at=at,
        confidence=record.confidence,
    )


def recorded_verdict(
    record: RecordedVerdict, no_claims: str, default_at: float | None, example_id: str | None = None
) -> tuple[Verdict, str | None]:
    """The engine's verdict a record gives (for `example_id`, the record's id as the set holds it:
    one string, not two equal ones), and what is wrong with it, if anything: a `passed` its claims
    contradict by the strict rule (with the criterion's `no_claims`)."""
    verdict = _verdict(
        record, no_claims, default_at, record.id if example_id is None else example_id
    )
    if record.claims is not None and "passed" in record.model_fields_set:
        by_rule, why = aggregate(verdict.claims or (), no_claims)
        if by_rule != record.passed:
            said = "undecided" if by_rule is None else str(by_rule).lower()
            return (
                verdict,
                f"passed is {_word(record.passed)} but its claims say {said} "
                f"by the strict rule ({why}; no_claims: {no_claims})",
            )
    return verdict, None
