"""Recorded verdicts: verdicts read from a file — another tool's (`judgekit import`, `calibrate
--verdicts`) or a report's own verdicts.jsonl — one record per example and trial:

    {"id": "ex-1", "passed": true, "criterion": "card-block-confirmed", "reason": "..."}
    {"id": "ex-2", "passed": null}            <- an abstention

>>> RecordedVerdict(id=7, passed=True).line()
'{"id":"7","passed":true}\\n'
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field, StrictBool, ValidationError, model_validator

from judgekit.errors import InputError, Problem
from judgekit.inputs.files import bulk, iter_records, parse_bool
from judgekit.inputs.sets import CalibrationSet
from judgekit.inputs.validation import ExampleId, Frozen, problems_of, shared_names
from judgekit.inputs.criteria import Criterion
from judgekit.judging.prompts import fingerprint
from judgekit.judging.verdicts import JUDGE_ID, ClaimCheck, Verdict, aggregate


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
    trial: int = Field(0, ge=0)
    passed: StrictBool | None = None
    reason: str | None = None
    raw: str | None = Field(None, description="The judge's unreadable answer, kept as given.")
    claims: list[RecordedClaim] | None = None
    at: datetime | None = Field(None, description="When the judge gave this verdict (the answer's time, for a "
                                "cached one the time it was first obtained); the gate's max_age counts from it.")
    judge: str | None = Field(None, description="The fingerprint of the judgekit judge that gave it (its first "
                              "16 hex digits); absent for verdicts another tool recorded.")
    confidence: float | None = Field(None, ge=0, le=1, description="How sure the judge was (selective judging): "
                                     "the probability of its answer, or another tool's score from 0 to 1.")
    stage: int = Field(0, ge=0, le=9, description="0: the criterion's judge; 1, 2, ...: the judges it escalates "
                       "to (selective judging), each on the examples below the previous one's threshold.")

    @classmethod
    def trusted(cls, **values: Any) -> "RecordedVerdict":
        """A verdict judgekit itself made, already checked, given every field: what
        `model_construct(**values)` builds, as fast as making a dict, and sharing one set of the
        field names (a report of a million verdicts would otherwise hold a million such sets)."""
        if len(values) != len(cls.model_fields):
            raise TypeError(f"give every field of RecordedVerdict: {sorted(set(cls.model_fields) - set(values))}")
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

    @model_validator(mode="after")
    def _has_a_verdict(self) -> "RecordedVerdict":
        if "passed" not in self.model_fields_set and self.claims is None:
            raise ValueError("has no verdict; add 'passed': true, false or null (an abstention), or 'claims'")
        return self


# The fields set of every `RecordedVerdict.trusted` (pydantic copies it before any change).
_EVERY_FIELD = set(RecordedVerdict.model_fields)


def _word(passed: bool | None) -> str:
    return "null" if passed is None else str(passed).lower()


def load_recorded(path: Path) -> list[RecordedVerdict]:
    """Read a verdict file (JSONL or CSV); `passed` must be present: null / empty is an abstention."""
    return [record for _, record in _read(path, None)]


def load_by_candidate(path: Path) -> dict[str, list[RecordedVerdict]]:
    """A verdict file of several judges (`judgekit compare --verdicts`), split by its `candidate`
    column, in the order they first appear; one without the column is one candidate, named by the file."""
    read = _read(path, "candidate")
    missing = sum(1 for name, _ in read if name is None)
    if 0 < missing < len(read):
        raise InputError.one(path, "candidate", f"{missing} of {len(read)} records name no candidate; give every "
                             "record its candidate (or none, for a file of one)")
    out: dict[str, list[RecordedVerdict]] = {}
    for name, record in read:
        out.setdefault(name if name is not None else path.stem, []).append(record)
    return out


@bulk()
def _read(path: Path, column: str | None) -> list[tuple[str | None, RecordedVerdict]]:
    if not path.is_file():
        raise InputError.one(path, "", "no such verdict file; pass --verdicts with a JSONL or CSV file")
    records, problems = [], []
    names: dict[frozenset[str], set[str]] = {}
    is_csv = path.suffix.lower() == ".csv"
    for location, record in iter_records(path):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        if not isinstance(record, dict):
            problems.append(Problem(str(path), location, "must be a mapping with id and passed"))
            continue
        if is_csv:
            record = {k: v for k, v in record.items() if v is not None or k == "passed"}
            if "passed" in record:
                record["passed"] = parse_bool(record["passed"])
        name = None
        if column is not None and column in record:
            record = dict(record)
            name = record.pop(column)
            if not isinstance(name, str) or name.strip() == "":
                problems.append(Problem(str(path), location, f"{column} must be a name (text, not empty): "
                                        "give every record its candidate"))
                continue
        try:
            records.append((name, shared_names(RecordedVerdict.model_validate(record), names)))
        except ValidationError as error:
            problems.extend(problems_of(error, str(path), location))
    if problems:
        raise InputError(problems)
    if not records:
        raise InputError.one(path, "", "holds no verdicts")
    return records


def _verdict(record: RecordedVerdict, no_claims: str, default_at: float | None) -> Verdict:
    passed, reason, checks = record.passed, record.reason, None
    if record.claims is not None:
        checks = tuple(ClaimCheck(c.claim, c.supported, c.evidence) for c in record.claims)
        if "passed" not in record.model_fields_set:
            passed, rule = aggregate(checks, no_claims)
            reason = reason or rule
    at = record.at.timestamp() if record.at is not None else default_at
    return Verdict(record.id, passed, reason, trial=record.trial, abstention="recorded" if passed is None else None,
                   raw=record.raw, claims=checks, obtained_at=at, confidence=record.confidence)


@bulk()
def match_recorded(path: Path, records: list[RecordedVerdict], sets: dict[str, CalibrationSet],
                   no_claims: dict[str, str] | None = None) -> dict[str, list[list[Verdict]]]:
    """Pair recorded verdicts with the examples of each criterion's set, in the set's order.

    Returns, per criterion, one list of trial verdicts per example. Verdicts for unknown ids and
    examples without a verdict are errors that list them all; nothing is dropped silently.
    Records of criteria not being calibrated in this run are left alone. A record with claims and
    no `passed` is decided by the strict rule, with the criterion's `no_claims` (default fail); a
    record that gives both must agree with the rule. A record without `at` counts as obtained
    when the file was last written.
    """
    source = str(path)
    try:
        default_at: float | None = path.stat().st_mtime
    except OSError:
        default_at = None
    named = {r.criterion for r in records}
    if None in named and len(sets) > 1:
        raise InputError.one(path, "criterion", f"verdicts without a 'criterion' column cannot be matched to "
                             f"{len(sets)} criteria; add the column or pass --criterion ID")
    grouped: dict[tuple[str, str], dict[int, Verdict]] = defaultdict(dict)
    problems: list[Problem] = []
    only = next(iter(sets)) if len(sets) == 1 else None
    rules = no_claims or {}
    for r in records:
        criterion_id = r.criterion or only
        if criterion_id not in sets or r.stage:
            continue  # another criterion's, or a judge escalated to (the gate reads those): not this run's
        trials = grouped[(criterion_id, r.id)]
        if r.trial in trials:
            problems.append(Problem(source, f"id {r.id}", f"has two verdicts for criterion {criterion_id!r} "
                                    f"trial {r.trial}; keep one or number the trials"))
            continue
        if r.claims is not None and criterion_id not in rules:
            problems.append(Problem(source, f"id {r.id}", f"gives claims, but criterion {criterion_id!r} is not a "
                                    "claims criterion; give 'passed' instead"))
            continue
        verdict = _verdict(r, rules.get(criterion_id, "fail"), default_at)
        if r.claims is not None and "passed" in r.model_fields_set:
            by_rule, why = aggregate(verdict.claims or (), rules[criterion_id])
            if by_rule != r.passed:
                said = "undecided" if by_rule is None else str(by_rule).lower()
                problems.append(Problem(source, f"id {r.id}", f"passed is {_word(r.passed)} but its claims say "
                                        f"{said} by the strict rule ({why}; no_claims: {rules[criterion_id]}); "
                                        "fix one, or leave out passed"))
                continue
        trials[r.trial] = verdict
    out: dict[str, list[list[Verdict]]] = {}
    for criterion_id, cal in sets.items():
        known = {e.id for e in cal.examples}
        unknown = sorted(eid for (cid, eid) in grouped if cid == criterion_id and eid not in known)
        found, missing = [], []
        for e in cal.examples:
            trials = grouped.get((criterion_id, e.id))
            if trials is None:
                missing.append(e.id)
            else:  # one trial needs no sorting
                found.append(list(trials.values()) if len(trials) == 1 else sorted(trials.values(), key=_trial))
        if unknown:
            problems.append(Problem(source, criterion_id, f"{len(unknown)} verdict(s) for ids not in "
                                    f"{cal.path}: {', '.join(unknown[:20])}{' …' if len(unknown) > 20 else ''}"))
        if missing:
            problems.append(Problem(source, criterion_id, f"{len(missing)} example(s) of {cal.path} have no verdict: "
                                    f"{', '.join(missing[:20])}{' …' if len(missing) > 20 else ''}"))
        out[criterion_id] = found
    if problems:
        raise InputError(problems)
    return out


def _trial(verdict: Verdict) -> int:
    return verdict.trial


def provenance(criterion: Criterion, records: list[RecordedVerdict], model: str | None, path: Path) -> str:
    """`replayed:<file>` when every verdict of the criterion was given by judgekit's own judge with
    this very fingerprint (a report's verdicts.jsonl read back), else `recorded:<file>`: another
    tool's judge, which judgekit may gate but never stands in for."""
    own = fingerprint(criterion, model)[:JUDGE_ID]
    mine = [r for r in records if r.criterion in (criterion.id, None)]
    if mine and all(r.judge == own for r in mine):
        return f"replayed:{path.name}"
    return f"recorded:{path.name}"
