"""The held-out discipline, one for every feature: which examples a judge was shown with their
answer (few-shot examples), which are evidence about it, and what the test split's budget is
told a look used.

A judge shown an example with its label proves nothing on it: a set example whose identity
(judgekit.inputs.identity) equals a few-shot example's is refused as calibration evidence, and
left out of every held-out comparison. The test split's budget names its examples by identity
too, so rewording a field the judge never reads does not make an example fresh.

>>> from judgekit.inputs.criteria import LLMCriterion, FewShot
>>> c = LLMCriterion(id="c", question="Is it polite?", inputs=["output"],
...                  examples=[FewShot(input="hi", output="Thanks!", passed=True)])
>>> from judgekit.inputs.sets import Example
>>> leaked(c, [Example(id="a", input="something else", output="Thanks!", passed=True)])
['a']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from judgekit.errors import InputError, Problem
from judgekit.fingerprint import canonical_hash
from judgekit.inputs.criteria import Criterion, LLMCriterion
from judgekit.inputs.identity import (
    ExampleLike,
    any_identity,
    identifier,
    shot_identifier,
)

if TYPE_CHECKING:  # the sets' module checks leakage with this one
    from judgekit.inputs.sets import CalibrationSet

E = TypeVar("E", bound=ExampleLike)

__all__ = [
    "TestSplit",
    "check_leakage",
    "held_out",
    "leaked",
    "shot_identities",
    "in_test_split",
    "named_by_identity",
    "unrecorded_looks",
]


def shot_identities(criterion: Criterion) -> set[str]:
    """What the criterion's few-shot examples show the judge (judgekit.inputs.identity.
    shot_identifier; none for code and claims)."""
    if not isinstance(criterion, LLMCriterion):
        return set()
    identify = shot_identifier(criterion)
    return {identify(shot.model_dump()) for shot in criterion.examples}


def leaked(criterion: Criterion, examples: Iterable[ExampleLike]) -> list[str]:
    """The ids of the examples the criterion's judge is shown with their answer: whose text in
    the fields a shot shows is a shot's (a prompt slot outside `inputs`, which shots do not show,
    does not make an example held out)."""
    shots = shot_identities(criterion)
    if not shots or not isinstance(criterion, LLMCriterion):
        return []
    identify = shot_identifier(criterion)
    return [e.id for e in examples if identify(e.fields()) in shots]


def held_out(criterion: Criterion, examples: Sequence[E]) -> list[E]:
    """The examples that are evidence about the criterion's judge: those it is not shown as a
    few-shot example."""
    out = set(leaked(criterion, examples))
    return [e for e in examples if e.id not in out]


def check_leakage(criterion: Criterion, examples: Iterable[ExampleLike], path: Path | str) -> None:
    """Few-shot examples must not also be graded: a judge shown the answer proves nothing."""
    found = leaked(criterion, examples)
    if found:
        raise InputError(
            [
                Problem(
                    str(path),
                    f"id {rid}",
                    f"is also a few-shot example of criterion {criterion.id!r} (its judge is "
                    "shown the same text in the fields it reads, with the answer); remove it "
                    "from the set or from the criterion's examples",
                )
                for rid in found
            ]
        )


@dataclass(frozen=True)
class TestSplit:
    """The test examples a look may use, named by identity; `aliases` maps the names looks may
    have recorded them under (before identities: a digest of every field; or under a criterion
    reading other fields) to today's identities, so those looks still count."""

    __test__ = False  # not a pytest class

    ids: tuple[str, ...]
    aliases: dict[str, str] = field(default_factory=dict)


def in_test_split(examples: Iterable[E]) -> list[E]:
    """The examples of the test split."""
    return [e for e in examples if e.split == "test"]


def unrecorded_looks(sets: Mapping[str, CalibrationSet], fix: str) -> list[Problem]:
    """A run that records nothing may not measure a judge on test-split examples: it would show
    the split's figures with no look counted, so an edited judge could be tuned on them for free.
    One problem per criterion whose set holds test examples; `fix` says how to record the run
    where it was asked for (a flag, an option)."""
    return [
        Problem(
            str(s.path),
            "split",
            f"{len(tests)} test-split examples: measuring criterion {cid!r}'s judge on them "
            f"without a history is a look at the test split that nothing records; {fix}",
        )
        for cid, s in sorted(sets.items())
        if (tests := in_test_split(s.examples))
    ]


def named_by_identity(criterion: Criterion, examples: Iterable[ExampleLike]) -> TestSplit:
    """The test split's examples as the budget names them."""
    ids: list[str] = []
    aliases: dict[str, str] = {}
    identify = identifier(criterion)
    for e in examples:
        now = identify(e.fields())
        ids.append(now)
        # the names a look may have used: before identities (every field's digest), and under a
        # criterion that read other fields
        for then in (canonical_hash(e.fields())[:16], *any_identity(e.fields())):
            aliases[then] = now
    return TestSplit(tuple(dict.fromkeys(ids)), aliases)
