"""Calibration sets: labelled known-good and known-bad examples of one criterion.

`calibration_sets/<criterion-id>.jsonl` (or `.yaml` / `.csv`), one example per record:

    {"id": "ex-1", "input": "I lost my card", "output": "I've blocked it.", "passed": true}
    {"id": "ex-2", "output": "...", "labels": {"ana": false, "ben": false, "eve": true}}

With `labels` (several annotators), `passed` is their majority; a tie is an error.

>>> Example(id="a", output="hi", labels={"ana": True, "ben": True, "eve": False}).passed
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    ValidationError,
    model_serializer,
    model_validator,
)

from judgekit.errors import InputError, Problem
from judgekit.fingerprint import canonical_hash_of_list
from judgekit.inputs.catalog import find_set
from judgekit.inputs.context_files import ContextFiles, ContextProblem, combined
from judgekit.inputs.criteria import ClaimsCriterion, Criterion
from judgekit.inputs.files import Source, SourceLines, iter_records, open_source
from judgekit.inputs.heldout import check_leakage
from judgekit.inputs.identity import distinct
from judgekit.inputs.label_reader import (
    MADE_BY,
    MAX_ROUNDS,
    SelectionTuple,
    draw_rank,
    from_csv_cells,
    majority,
)
from judgekit.inputs.validation import ExampleId, Frozen, problems_of, shared_names


class LabelledClaim(Frozen):
    """A claim of the reply as a person extracted it, and whether the source supports it."""

    claim: str = Field(min_length=1)
    supported: StrictBool


class Selection(Frozen):
    """How an example was drawn from a pool of unlabelled replies (`judgekit label --next`): the
    pool, its stratum there (the judge's verdict, and whether it was sure), and the size of every
    stratum of the pool; the estimates weight it by them (judgekit.stats.design)."""

    pool: str = Field(min_length=1)
    stratum: str = Field(min_length=1)
    sizes: dict[str, Annotated[StrictInt, Field(ge=0)]] = Field(min_length=1)
    position: Annotated[StrictInt, Field(ge=0)] = Field(
        description="Its place in the stratum's fixed random "
        "order: the labelled replies of a stratum must be its "
        "first ones, or the estimate is biased."
    )
    round: Annotated[StrictInt, Field(ge=1)] | None = Field(
        default=None,
        description="The `label --next` that drew it, counted per pool from 1 (none: the "
        "first); the pool's TPR and TNR are estimated round by round.",
    )
    plan: list[Annotated[StrictInt, Field(ge=1)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ROUNDS,
        description="The sizes of the pool's rounds of `label --next`, fixed at its first draw "
        "(`--rounds`): each round's estimate is weighed by its planned size.",
    )
    rate: Literal["tpr", "tnr"] | None = Field(
        default=None,
        description="The rate its round was allocated to shrink: with the plan, what the round's "
        "sizes are derived again from (judgekit.stats.allocation.round_allocation).",
    )

    @model_validator(mode="after")
    def _known_stratum(self) -> Selection:
        if self.sizes.get(self.stratum, 0) < 1:
            raise ValueError(
                f"stratum {self.stratum!r} has no size of at least 1 in sizes {self.sizes}"
            )
        return self

    def as_tuple(self, rank: str | None = None) -> SelectionTuple:
        """As the gate's reader reads it (`rank`: the record's key in the pool's order)."""
        return (
            self.pool,
            self.stratum,
            tuple(sorted(self.sizes.items())),
            self.position,
            self.round,
            None if self.plan is None else tuple(self.plan),
            self.rate,
            rank,
        )

    @model_serializer(mode="wrap")
    def _without_an_absent_plan(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A record drawn before plans were recorded dumps as it did (its set's fingerprint, and
        so its reports, unchanged)."""
        out: dict[str, Any] = handler(self)
        for key in ("plan", "rate"):
            if out.get(key) is None:
                out.pop(key, None)
        return out


class Example(Frozen):
    """One labelled example: what the user said, the reply, any source material, the human label."""

    id: ExampleId
    input: str | None = None
    output: str
    context: str | None = None
    context_file: str | None = Field(
        None,
        min_length=1,
        exclude=True,  # its text is the example's context: what the fingerprint holds
        description="A file of source material shared by several examples, relative to the "
        "set's folder (judgekit.inputs.context_files), instead of the context's text.",
    )
    passed: StrictBool | None = Field(
        None, description="The human label: does the reply meet the criterion?"
    )
    labels: dict[str, StrictBool] | None = Field(
        None, description="Several annotators' labels; passed is their majority."
    )
    tags: list[str] = Field(default_factory=list)
    split: Literal["dev", "test"] | None = None
    claims: list[LabelledClaim] | None = Field(
        None,
        description="Claim-level labels (claims criteria): the "
        "reply's claims and whether each is supported.",
    )
    selection: Selection | None = Field(
        None,
        description="How the example was drawn from a pool "
        "(`judgekit label --next`); the estimates weight it accordingly.",
    )
    made_by: str | None = Field(
        None,
        pattern=MADE_BY,
        description="How the label was made: human (a person; assumed when not said), "
        "adjudicated (annotators' disagreement settled), feedback (end users' thumbs), or "
        "model:<name> (an LLM). The gate counts human and adjudicated labels unless its policy "
        "says otherwise (label_sources).",
    )
    annotator: str | None = Field(
        None, min_length=1, max_length=64, description="Who made the label (a name or an id)."
    )

    @model_validator(mode="after")
    def _one_label(self) -> Example:
        if self.context_file is not None and self.context is not None:
            raise ValueError(
                "gives both context and context_file; give the source material once: its text, "
                "or the file that holds it"
            )
        if self.labels is not None:
            if not self.labels:
                raise ValueError("labels is empty; give at least one annotator's label")
            decided = majority(self.labels)
            if decided is None:
                yes = sum(self.labels.values())
                raise ValueError(
                    f"the annotators are tied ({yes} pass, {len(self.labels) - yes} fail); "
                    "add another "
                    "annotator's label or remove the example"
                )
            if self.passed is not None and self.passed != decided:
                raise ValueError(
                    f"passed is {self.passed} but the annotators' majority is {decided}"
                )
            object.__setattr__(self, "passed", decided)
        elif self.passed is None:
            raise ValueError("has no label; add 'passed': true or false (or 'labels')")
        return self

    @property
    def label(self) -> bool:
        return bool(self.passed)  # never None after validation

    def fields(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output, "context": self.context}

    def drawn(self) -> SelectionTuple | None:
        """How it was drawn from a pool, with its key in the pool's order (`draw_rank`: of its
        own text, as label --next drew it; a context moved into a file is not the one drawn)."""
        if self.selection is None:
            return None
        inline = self.context if self.context_file is None else None
        key = draw_rank(self.selection.pool, self.id, self.input, self.output, inline)
        return self.selection.as_tuple(key)


@dataclass(frozen=True)
class CalibrationSet:
    """One criterion's labelled examples, and the digest of the file they were read from. Loaded
    for a criterion (`load_sets`), the examples are the distinct ones (judgekit.inputs.identity)
    and `copies` names the ids left out as copies of one kept: kept id -> copies."""

    criterion_id: str
    path: Path
    examples: tuple[Example, ...]
    digest: str | None = None
    copies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def fingerprint(self) -> str:
        return canonical_hash_of_list(e.model_dump(mode="json") for e in self.examples)

    def select(self, split: str | None) -> CalibrationSet:
        if split is None:
            return self
        return CalibrationSet(
            self.criterion_id,
            self.path,
            tuple(e for e in self.examples if e.split == split),
            self.digest,
            self.copies,
        )

    def canary(self, size: int) -> CalibrationSet:
        """A frozen subset of `size` examples, half labelled pass and half fail where the set
        allows: chosen by a hash of each example's id, so the same examples come back every day, and
        adding examples to the set changes the subset only where a new id sorts first."""

        def rank(example: Example) -> str:
            return hashlib.sha256(f"{self.criterion_id}\0{example.id}".encode()).hexdigest()

        good = sorted((e for e in self.examples if e.label), key=rank)
        bad = sorted((e for e in self.examples if not e.label), key=rank)
        take_good = min(len(good), max(size - len(bad), (size + 1) // 2))
        chosen = {e.id for e in good[:take_good] + bad[: size - take_good]}
        return CalibrationSet(
            self.criterion_id,
            self.path,
            tuple(e for e in self.examples if e.id in chosen),
            self.digest,
            self.copies,
        )


def load_set(path: Path, criterion_id: str) -> CalibrationSet:
    """Load and check one calibration set; every bad record is reported, not only the first."""
    loaded, problems = read_set(path, criterion_id)
    if problems:
        raise InputError(problems)
    return loaded


def set_records(
    path: Path, text: str | Source | SourceLines
) -> Iterator[tuple[str, dict[str, Any] | Problem]]:
    """Each record of a set file (its text) as the loader reads it — a CSV's cells as values — and
    where it is (`line 3 (id a)`); in its place, a Problem for one that cannot be read or whose id
    came before (ids are checked before the rest, so a duplicate is reported beside the record's
    other problems)."""
    seen: dict[str, str] = {}
    is_csv = path.suffix.lower() == ".csv"
    for location, record in iter_records(path, text):
        if isinstance(record, Problem):
            yield location, record
            continue
        if not isinstance(record, dict):
            yield (
                location,
                Problem(str(path), location, "must be a mapping with id, output and passed"),
            )
            continue
        if is_csv:
            record = from_csv_cells(record)
        rid = record.get("id")
        where = f"{location} (id {rid})" if rid is not None else location
        key = str(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
        if key is not None and key in seen:
            yield (
                where,
                Problem(
                    str(path),
                    where,
                    f"duplicate id {key!r} (first at {seen[key]}); give every example its own id",
                ),
            )
            continue
        if key is not None:
            seen[key] = location
        yield where, record


def read_set(path: Path, criterion_id: str) -> tuple[CalibrationSet, list[Problem]]:
    """A calibration set's good examples and the problems of the others, so that checks across
    the set (few-shot leakage) run in the same pass."""
    examples: list[Example] = []
    problems: list[Problem] = []
    names: dict[frozenset[str], set[str]] = {}
    source = open_source(path)
    files = ContextFiles(path.parent)
    for where, record in set_records(path, source):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        try:
            example = shared_names(Example.model_validate(record), names)
        except ValidationError as error:
            problems.extend(problems_of(error, str(path), where))
            continue
        if example.context_file is not None:
            try:
                text = files.text(example.context_file)
            except ContextProblem as error:
                problems.append(Problem(str(path), where, str(error)))
                continue
            # the file's text is the example's context, as if written in the record
            object.__setattr__(example, "context", text)
        examples.append(example)
    if not examples and not problems:
        problems.append(
            Problem(
                str(path), "", "holds no examples; add labelled known-good and known-bad examples"
            )
        )
    digest = combined(source.digest, files.digests)
    return CalibrationSet(criterion_id, path, tuple(examples), digest), problems


def check_context(criterion: Criterion, calibration_set: CalibrationSet) -> None:
    """A claims criterion checks claims against each example's source: an example without one is an
    error, and so is one whose labelled claims contradict its label."""
    if not isinstance(criterion, ClaimsCriterion):
        return
    problems = [
        Problem(
            str(calibration_set.path),
            f"id {e.id}",
            f"has no context; criterion {criterion.id!r} "
            "checks the reply's claims against the example's source material: add 'context' "
            "(or name the source every example shares: the criterion's context_file)",
        )
        for e in calibration_set.examples
        if not (criterion.context_for(e.context) or "").strip()
    ]
    problems += [
        Problem(
            str(calibration_set.path),
            f"id {e.id}",
            f"passed is {e.passed} but its labelled claims say "
            f"{not e.passed} (pass iff every claim is supported); fix the label or the claims",
        )
        for e in calibration_set.examples
        if e.claims and all(c.supported for c in e.claims) != e.passed
    ]
    if problems:
        raise InputError(problems)


def checked(criterion: Criterion, loaded: CalibrationSet) -> CalibrationSet:
    """The set as its criterion calibrates on it: its distinct examples (copies named, opposite
    labels on one identity refused), none shown to the judge as a few-shot example, and a source
    for each where the criterion checks against one."""
    found = distinct(criterion, loaded.examples, str(loaded.path))
    problems = list(found.problems)
    try:
        check_leakage(criterion, loaded.examples, loaded.path)
    except InputError as error:
        problems.extend(error.problems)
    try:
        check_context(criterion, loaded)
    except InputError as error:
        problems.extend(error.problems)
    if problems:
        raise InputError(problems)
    if not found.copies:
        return loaded
    kept = set(found.kept)
    return replace(
        loaded, examples=tuple(e for e in loaded.examples if e.id in kept), copies=found.copies
    )


def load_sets(
    directory: Path, criteria: list[Criterion], unloaded: Sequence[str] = ()
) -> dict[str, CalibrationSet]:
    """Load the set of each criterion, collecting the problems of all of them: every record's, and
    the checks of the set against its criterion. The sets of `unloaded` criteria (ids of criterion
    files that did not load) are checked record by record too."""
    sets: dict[str, CalibrationSet] = {}
    problems: list[Problem] = []
    for criterion_id in [*(c.id for c in criteria), *unloaded]:
        try:
            loaded, found = read_set(find_set(directory, criterion_id), criterion_id)
        except InputError as error:  # no set, several, or a file that cannot be read at all
            problems.extend(error.problems)
            continue
        problems.extend(found)
        criterion = next((c for c in criteria if c.id == criterion_id), None)
        if criterion is None:
            continue
        try:
            sets[criterion_id] = checked(criterion, loaded)
        except InputError as error:
            problems.extend(error.problems)
    if problems:
        raise InputError(problems)
    return sets
