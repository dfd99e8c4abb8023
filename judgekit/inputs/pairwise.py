"""Pairwise criteria: which of two replies better meets one stated question (`kind: pairwise`),
their labelled pairs, and what one pair is.

A pairwise criterion lives in `criteria/<id>.yaml` beside the yes/no ones:

    id: follows-instruction
    kind: pairwise
    question: Which reply follows the user's instruction more exactly?
    inputs: [input]
    inconsistent: abstain

Its set holds pairs: `output_a`, `output_b` and a label `a`, `b` or `tie` (or `labels`, several
annotators' labels, whose plurality is the label; a tie between annotators is an error). A pair
and its swap (the replies the other way round, the label mirrored) are one example: its identity
is the unordered pair (`pair_identity`), so a swapped copy is counted once, and a swapped copy
with a label that is not the mirror is a problem naming both ids. Replies are told apart with
their case (judgekit.inputs.text.cased_text): which of two replies capitalises as asked is a
pairwise question.

>>> c = PairwiseCriterion(id="p", kind="pairwise", question="Which reply is more polite?")
>>> x = PairExample(id="1", output_a="Thanks!", output_b="No.", label="a")
>>> y = PairExample(id="2", output_a="No.", output_b="Thanks!", label="b")
>>> pair_identity(c, x) == pair_identity(c, y), y.swapped().label
(True, 'a')
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import Field, StrictStr, ValidationError, field_validator, model_validator

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import criterion_paths, declared_kind, find_set
from judgekit.inputs.criteria import CriterionBase, JudgeSettings, load_file
from judgekit.inputs.files import iter_records, read_source
from judgekit.inputs.label_reader import MADE_BY
from judgekit.inputs.text import cased_text
from judgekit.inputs.validation import ExampleId, Frozen, problems_of

PairLabel = Literal["a", "b", "tie"]
PairField = Literal["input", "context"]  # what a pairwise judge is shown beside the two replies
PairProbeName = Literal["same_reply", "addressed", "answer_format", "authority", "delimiter"]
_SHOWN: tuple[PairField, ...] = ("input",)  # unless the criterion says
MIRROR: dict[str, PairLabel] = {"a": "b", "b": "a", "tie": "tie"}


class PairwiseCriterion(CriterionBase):
    """Which of two replies better meets `question`, asked of an LLM judge in both orders (reply
    `a` shown first, then reply `b` shown first): the verdict is the reply both orders prefer, and
    a pair whose two orders disagree is inconsistent, never a win."""

    kind: Literal["pairwise"]
    inputs: list[PairField] = Field(
        default_factory=lambda: list(_SHOWN),
        description="What the judge is shown beside the two replies: input, context.",
    )
    inconsistent: Literal["abstain", "tie"] = Field(
        "abstain",
        description="What a pair whose two orders disagree counts as: an abstention (left out of "
        "the accuracy, counted against max_abstain_rate) or a tie verdict. Never a win.",
    )
    judge: JudgeSettings = JudgeSettings()
    probes: list[PairProbeName] = Field(
        default_factory=list,
        description="Robustness probes `calibrate` runs on this judge (judgekit.judging.pairwise."
        "PAIR_PROBES): same_reply, addressed, answer_format, authority, delimiter. Under a policy "
        "that sets max_probe_flip every one is run.",
    )

    @field_validator("judge")
    @classmethod
    def _pairwise_settings(cls, value: JudgeSettings) -> JudgeSettings:
        unsupported = {
            "prompt": "judgekit's pairwise prompt fences both replies; remove judge.prompt",
            "escalate_to": "selective judging is for yes/no criteria; remove judge.escalate_to",
        }
        for name, why in unsupported.items():
            if getattr(value, name) is not None:
                raise ValueError(why)
        if value.trials != 1:
            raise ValueError(
                "a pairwise judge is asked once in each order (its two orders are its check of "
                "itself); remove judge.trials"
            )
        return value

    @property
    def shown(self) -> tuple[str, ...]:
        """The fields the judge reads, in the prompt's order."""
        return tuple(f for f in ("input", "context") if f in self.inputs)


class PairExample(Frozen):
    """One labelled pair: what the user said, the two replies, any source material, the label."""

    id: ExampleId
    input: str | None = None
    context: str | None = None
    output_a: StrictStr = Field(description="The first reply of the pair (may be empty).")
    output_b: StrictStr = Field(description="The second reply of the pair (may be empty).")
    label: PairLabel | None = Field(
        None, description="The better reply, a or b, or tie when neither is."
    )
    labels: dict[str, PairLabel] | None = Field(
        None, description="Several annotators' labels; label is their plurality."
    )
    tags: list[str] = Field(default_factory=list)
    split: Literal["dev", "test"] | None = None
    made_by: str | None = Field(None, pattern=MADE_BY)
    annotator: str | None = Field(None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _one_label(self) -> PairExample:
        if self.labels is not None:
            if not self.labels:
                raise ValueError("labels is empty; give at least one annotator's label")
            decided = plurality(self.labels)
            if decided is None:
                counts = Counter(self.labels.values())
                raise ValueError(
                    f"the annotators are tied ({dict(sorted(counts.items()))}); add another "
                    "annotator's label or remove the pair"
                )
            if self.label is not None and self.label != decided:
                raise ValueError(
                    f"label is {self.label} but the annotators' plurality is {decided}"
                )
            object.__setattr__(self, "label", decided)
        elif self.label is None:
            raise ValueError("has no label; add 'label': a, b or tie (or 'labels')")
        if self.label != "tie" and cased_text(self.output_a) == cased_text(self.output_b):
            raise ValueError(
                f"is labelled {self.label}, but its two replies show a judge the same text "
                "(spacing aside): label it tie, or correct a reply"
            )
        return self

    @property
    def gold(self) -> PairLabel:
        return cast(PairLabel, self.label)  # never None after validation

    def swapped(self) -> PairExample:
        """The same pair the other way round, its labels mirrored."""
        return self.model_copy(
            update={
                "output_a": self.output_b,
                "output_b": self.output_a,
                "label": MIRROR[self.gold],
                "labels": None
                if self.labels is None
                else {k: MIRROR[v] for k, v in self.labels.items()},
            }
        )


def plurality(labels: Mapping[str, str]) -> PairLabel | None:
    """The label most annotators gave; None when two labels share the most votes.

    >>> plurality({"x": "a", "y": "a", "z": "tie"}), plurality({"x": "a", "y": "b"})
    ('a', None)
    """
    ranked = Counter(labels.values()).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    top = ranked[0][0]
    return top if top in ("a", "b", "tie") else None  # type: ignore[return-value]  # checked


def pair_identity(criterion: PairwiseCriterion, example: PairExample) -> str:
    """The digest of what the judge is shown, as a model reads it (judgekit.inputs.text, case
    kept), with the two replies unordered: a pair and its swap are one example."""
    shown = {name: cased_text(getattr(example, name) or "") for name in criterion.shown}
    replies = sorted(cased_text(r) for r in (example.output_a, example.output_b))
    data = json.dumps({"shown": shown, "replies": replies}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _oriented(criterion: PairwiseCriterion, example: PairExample) -> PairLabel:
    """The label with the replies in a fixed order (by their normal text): equal for a pair and
    its mirrored swap."""
    first, second = cased_text(example.output_a), cased_text(example.output_b)
    return example.gold if first <= second else MIRROR[example.gold]


@dataclass(frozen=True)
class PairSet:
    """One pairwise criterion's labelled pairs (the distinct ones), the digest of their file's
    bytes, and the ids left out as copies of one kept (kept id -> copies)."""

    criterion_id: str
    path: Path
    examples: tuple[PairExample, ...]
    digest: str | None = None
    copies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # each copy's two replies as it shows them (a swapped copy's are the kept pair's, swapped)
    copy_texts: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def select(self, split: str | None) -> PairSet:
        if split is None:
            return self
        return replace(self, examples=tuple(e for e in self.examples if e.split == split))


def parse_pairwise(data: Any, source: str) -> PairwiseCriterion:
    """Validate one pairwise criterion document, listing every problem at once."""
    try:
        return PairwiseCriterion.model_validate(data)
    except ValidationError as error:
        raise InputError(problems_of(error, source)) from None


def load_pairwise(path: Path) -> PairwiseCriterion:
    """One pairwise criterion file, read as a yes/no one is (judgekit.inputs.criteria.load_file)."""
    return load_file(path, parse_pairwise)


def pairwise_paths(directory: Path) -> list[Path]:
    """The pairwise criterion files of a folder (none when the folder holds no criteria)."""
    try:
        paths = criterion_paths(directory)
    except InputError:
        return []
    return [p for p in paths if declared_kind(p) == "pairwise"]


def load_pairwise_criteria(directory: Path, chosen: Iterable[str] = ()) -> list[PairwiseCriterion]:
    """The pairwise criteria of a folder (those of `chosen` ids, when given); every file's
    problems listed together."""
    wanted = set(chosen)
    found: list[PairwiseCriterion] = []
    problems: list[Problem] = []
    for path in pairwise_paths(directory):
        if wanted and path.stem not in wanted:
            continue
        try:
            found.append(load_pairwise(path))
        except InputError as error:
            problems += error.problems
    if problems:
        raise InputError(problems)
    return found


def _record(record: dict[str, Any]) -> dict[str, Any]:
    """A CSV row's cells as a pair's fields: `labels.<annotator>` columns, `;`-separated tags;
    an empty cell is no value."""
    out: dict[str, Any] = {}
    labels: dict[str, Any] = {}
    for key, value in record.items():
        if value is None or value == "":
            continue
        if key.startswith("labels."):
            labels[key.removeprefix("labels.")] = value
        elif key == "tags" and isinstance(value, str):
            out[key] = [t.strip() for t in value.split(";") if t.strip()]
        else:
            out[key] = value
    return {**out, "labels": labels} if labels else out


def read_pair_set(path: Path, criterion: PairwiseCriterion) -> PairSet:
    """A pairwise criterion's set, validated and made distinct: every bad record, every duplicate
    id and every pair whose swapped copy is labelled otherwise is listed together."""
    source = read_source(path)
    problems: list[Problem] = []
    examples: list[PairExample] = []
    ids: set[str] = set()
    for location, record in iter_records(path, source.text):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        if not isinstance(record, dict):
            problems.append(
                Problem(str(path), location, "must be a mapping with id, output_a, output_b, label")
            )
            continue
        if path.suffix.lower() == ".csv":
            record = _record(record)
        try:
            example = PairExample.model_validate(record)
        except ValidationError as error:
            problems += problems_of(error, str(path), prefix=location)
            continue
        if example.id in ids:
            problems.append(
                Problem(
                    str(path), location, f"duplicate id {example.id!r}; give every pair its own"
                )
            )
            continue
        ids.add(example.id)
        examples.append(example)
    kept, copies, clashes = _distinct(criterion, examples, str(path))
    problems += clashes
    if not kept and not problems:
        problems.append(Problem(str(path), "", "holds no labelled pair"))
    if problems:
        raise InputError(problems)
    copied = {c for cs in copies.values() for c in cs}
    texts = {e.id: (e.output_a, e.output_b) for e in examples if e.id in copied}
    return PairSet(criterion.id, path, tuple(kept), source.digest, copies, texts)


def _distinct(
    criterion: PairwiseCriterion, examples: Iterable[PairExample], where: str
) -> tuple[list[PairExample], dict[str, tuple[str, ...]], list[Problem]]:
    first: dict[str, PairExample] = {}
    copies: dict[str, list[str]] = {}
    problems = []
    for example in examples:
        key = pair_identity(criterion, example)
        kept = first.get(key)
        if kept is None:
            first[key] = example
            continue
        if _oriented(criterion, kept) != _oriented(criterion, example):
            problems.append(
                Problem(
                    where,
                    f"id {example.id}",
                    f"shows the judge the same two replies as id {kept.id} but is labelled "
                    f"{example.gold} where that one, its replies in the same order, would be "
                    f"{_oriented_as(kept, example)}; correct one of the two",
                )
            )
            continue
        copies.setdefault(kept.id, []).append(example.id)
    return list(first.values()), {k: tuple(v) for k, v in copies.items()}, problems


def _oriented_as(kept: PairExample, other: PairExample) -> str:
    same_order = cased_text(kept.output_a) == cased_text(other.output_a)
    return kept.gold if same_order else MIRROR[kept.gold]


def load_pair_sets(
    sets_dir: Path, criteria: Iterable[PairwiseCriterion], split: str | None = None
) -> dict[str, PairSet]:
    """Each pairwise criterion's set (narrowed to `split` when given) to measure a judge on;
    problems listed together. Test-split pairs are refused: no look at them would be counted."""
    out: dict[str, PairSet] = {}
    problems: list[Problem] = []
    for criterion in criteria:
        try:
            out[criterion.id] = read_pair_set(find_set(sets_dir, criterion.id), criterion).select(
                split
            )
        except InputError as error:
            problems += error.problems
            continue
        if not out[criterion.id].examples:
            problems.append(
                Problem(str(out[criterion.id].path), "split", f"no pair has split {split!r}")
            )
        elif any(e.split == "test" for e in out[criterion.id].examples):
            # no history counts a look at a pairwise test split yet: refused, not measured unseen
            problems.append(
                Problem(
                    str(out[criterion.id].path),
                    "split",
                    "holds test-split pairs, and judgekit keeps no test-split budget for pairwise "
                    "criteria yet; use --split dev, or remove split: test from the pairs",
                )
            )
    if problems:
        raise InputError(problems)
    return out
