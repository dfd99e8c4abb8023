"""The labels of a calibration set, read plainly: what the gate checks a report's verdicts against,
without building a model (the gate must start fast). It trusts the file as far as the file's digest
equals the one calibrated, which judgekit.inputs.sets validated; the rules that turn a record into
a label (a CSV's cells, several annotators' majority) are said here once and used by both.

>>> majority({"ana": True, "ben": True, "eve": False}), majority({"ana": True, "ben": False})
(True, None)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from judgekit.errors import InputError, Problem
from judgekit.fingerprint import canonical_hash
from judgekit.inputs.context_files import ContextFiles, ContextProblem, combined
from judgekit.inputs.files import iter_records, open_source, parse_bool
from judgekit.inputs.text import normal_text

if TYPE_CHECKING:
    from judgekit.inputs.sets import CalibrationSet


# How a label was made (judgekit.inputs.sets.Example.made_by).
MADE_BY = r"^(human|adjudicated|feedback|model:\S.*)$"
MAX_ROUNDS = 20  # the rounds a pool's plan of `label --next` may hold
# a selection record: pool, stratum, sizes, position, round, plan, rate, and the record's key in
# the pool's fixed random order (`draw_rank`) (judgekit.stats.drawn.Drawn)
SelectionTuple = tuple[
    str,
    str,
    tuple[tuple[str, int], ...],
    int,
    int | None,
    tuple[int, ...] | None,
    str | None,
    str | None,
]


def draw_rank(pool: str, rid: str, input_: Any, output: Any, context: Any) -> str:
    """A reply's key in its pool's fixed random order (`judgekit label --next` draws each stratum
    in it: judgekit.judging.selection): a digest of the pool, the reply's id and its content, so
    that the places a set's records claim are checked against the records themselves."""
    content = canonical_hash(
        {"input": input_ or None, "output": output, "context": context or None}
    )
    return hashlib.sha256(f"{pool}\0{rid}\0{content[:16]}".encode()).hexdigest()


_MADE_BY = re.compile(MADE_BY)


def source_of(made_by: str | None) -> str:
    """The kind of a label's maker, as the gate's policy names it (label_sources): human,
    adjudicated, feedback or model."""
    return "model" if made_by and made_by.startswith("model:") else made_by or "human"


def majority(labels: Mapping[str, bool]) -> bool | None:
    """Several annotators' label: their majority; None when they are tied."""
    yes = sum(1 for value in labels.values() if value)
    no = len(labels) - yes
    return None if yes == no else yes > no


def from_csv_cells(record: dict[str, Any]) -> dict[str, Any]:
    """CSV cells are text: read booleans, `labels.<annotator>` columns and `;`-separated tags."""
    out: dict[str, Any] = {}
    labels: dict[str, Any] = {}
    for key, value in record.items():
        if value is None and key != "passed":  # an annotator who left a cell empty did not label it
            continue
        if key.startswith("labels."):
            labels[key.removeprefix("labels.")] = parse_bool(value)
        elif key == "passed":
            out[key] = parse_bool(value)
        elif key == "tags":
            out[key] = [t.strip() for t in value.split(";") if t.strip()]
        elif key == "selection":  # how it was drawn (`judgekit label --next`): one cell of JSON
            try:
                out[key] = json.loads(value)
            except ValueError:
                out[key] = value  # the model says what is wrong with it
        else:
            out[key] = value
    if labels:
        out["labels"] = labels
    return out


class Labelled(NamedTuple):
    """One example as the gate needs it: its id, the human label, its split (a named tuple, cheap
    to make by the million)."""

    id: str
    label: bool
    split: str | None
    # how it was drawn from a pool (`judgekit label --next`): pool, stratum, every stratum's
    # size, position
    selection: SelectionTuple | None = None
    made_by: str | None = None  # how the label was made (None: not said, taken as human)


@dataclass(frozen=True)
class LabelledSet:
    """A calibration set's labels and the digest of the file they were read from."""

    criterion_id: str
    path: Path
    digest: str
    examples: tuple[Labelled, ...]
    # Whether two records show the same reply (normalised: judgekit.inputs.text), which every
    # criterion a model judges reads: then the set may hold copies, and the gate checks them.
    repeats: bool = False
    # The ids of drawn examples that show the judge what another of the set's examples shows
    # (judgekit.inputs.identity.Distinct.repeated): the gate counts each reply once.
    repeated: frozenset[str] = frozenset()

    def select(self, split: str | None) -> LabelledSet:
        if split is None:
            return self
        return replace(self, examples=tuple(e for e in self.examples if e.split == split))

    def distinct(self) -> tuple[int, int]:
        """Known-good and known-bad replies, each counted once (what min_examples counts)."""
        once = [e.label for e in self.examples if e.id not in self.repeated]
        return sum(once), len(once) - sum(once)


def read_labels(path: Path, criterion_id: str) -> LabelledSet:
    """The labels of a set file; a record that has none is an InputError naming it."""
    source = open_source(path)
    is_csv = path.suffix.lower() == ".csv"
    examples, problems = [], []
    replies: set[int] = set()  # hashes: a million replies are not held twice
    repeats = False
    files = ContextFiles(path.parent)
    for location, record in iter_records(path, source):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        record = from_csv_cells(record) if is_csv and isinstance(record, dict) else record
        label = _label(record)
        if label is None:
            problems.append(
                Problem(
                    str(path),
                    location,
                    "has no readable id and label; `judgekit validate` says why",
                )
            )
            continue
        examples.append(label)
        reply = hash(normal_text(str(record.get("output") or "")))
        repeats = repeats or reply in replies
        replies.add(reply)
        named = record.get("context_file") if isinstance(record, dict) else None
        if isinstance(named, str):
            try:  # its bytes are part of the set's digest (judgekit.inputs.context_files)
                files.digest(named)
            except ContextProblem as error:
                problems.append(Problem(str(path), location, str(error)))
    if problems:
        raise InputError(problems)
    digest = combined(source.digest, files.digests)
    return LabelledSet(criterion_id, path, digest, tuple(examples), repeats)


def labels_of(read: CalibrationSet) -> LabelledSet:
    """The labels of a set the pipeline has read and checked: what `read_labels` gives for its
    file, without reading it again."""
    if read.digest is None:
        raise ValueError(f"{read.path}: a set built in memory has no file digest to decide on")
    return LabelledSet(
        read.criterion_id,
        read.path,
        read.digest,
        tuple(
            Labelled(
                e.id,
                e.label,
                e.split,
                e.drawn(),
                e.made_by,
            )
            for e in read.examples
        ),
        bool(read.copies)
        # by hash: equal texts hash alike, and a million texts are not held twice
        or len({hash(normal_text(e.output)) for e in read.examples}) < len(read.examples),
    )


def _label(record: Any) -> Labelled | None:
    if not isinstance(record, dict):
        return None
    rid, passed, labels, split = (
        record.get("id"),
        record.get("passed"),
        record.get("labels"),
        record.get("split"),
    )
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        return None
    if isinstance(labels, dict) and labels and all(isinstance(v, bool) for v in labels.values()):
        passed = majority(labels)
    if not isinstance(passed, bool):
        return None
    drawn = record.get("selection")
    selection = _selection(drawn)
    if drawn is not None and selection is None:
        return None
    if selection is not None:  # its key in the pool's order, from the record as the set loader's
        inline = record.get("context") if record.get("context_file") is None else None
        key = draw_rank(selection[0], str(rid), record.get("input"), record.get("output"), inline)
        selection = (*selection[:7], key)
    made_by = record.get("made_by")
    if made_by is not None and not (isinstance(made_by, str) and _MADE_BY.match(made_by)):
        return None
    return Labelled(str(rid), passed, split if isinstance(split, str) else None, selection, made_by)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _selection(drawn: Any) -> SelectionTuple | None:
    """A selection record read as the set loader's model reads it (strict whole numbers)."""
    keys = {"pool", "stratum", "sizes", "position"}
    if not isinstance(drawn, dict) or not keys <= set(drawn) <= keys | {"round", "plan", "rate"}:
        return None
    rate = drawn.get("rate")
    if rate not in (None, "tpr", "tnr"):
        return None
    plan = drawn.get("plan")
    if plan is not None and not (
        isinstance(plan, list)
        and 1 <= len(plan) <= MAX_ROUNDS
        and all(_count(n) and n >= 1 for n in plan)
    ):
        return None
    pool, stratum, sizes, position, round_ = (
        drawn["pool"],
        drawn["stratum"],
        drawn["sizes"],
        drawn["position"],
        drawn.get("round"),
    )
    if round_ is not None and not (_count(round_) and round_ >= 1):
        return None
    if not (
        isinstance(pool, str)
        and pool
        and isinstance(stratum, str)
        and stratum
        and isinstance(sizes, dict)
        and sizes
        and all(_count(n) for n in sizes.values())
        and sizes.get(stratum, 0) >= 1
        and _count(position)
    ):
        return None
    return (
        pool,
        stratum,
        tuple(sorted((str(k), n) for k, n in sizes.items())),
        position,
        round_,
        None if plan is None else tuple(plan),
        rate,
        None,
    )
