"""Pairwise judges, the statistics: which of two replies better meets a criterion, asked in both
orders, and how often the judge prefers a position rather than a reply. Pure functions, no I/O.

A pair (reply `a`, reply `b`) is judged twice: with `a` shown first, then with `b` shown first.
Each answer names a position, `first` or `second`, or `tie`; None is an answer that could not be
read. The pair's verdict is the reply both orders prefer (or a tie both call a tie); when the two
orders disagree the pair is **inconsistent**, a visible outcome of its own, never a win. Of the
inconsistent pairs whose two answers both name a position, those where the first position won
both times show a preference for the first position, those where the second did for the second;
an unbiased judge's inconsistencies fall either way as a coin does (the exact binomial test
against 1/2). `benchmarks/pairwise.py` measures the tests' error rates by simulation and the
figures of every LLMBar judge set-up.

>>> outcome("first", "second"), outcome("first", "first"), outcome("tie", "tie")
('a', 'inconsistent', 'tie')
>>> f = figures(["a", "b", "a", "b"], ["first", "second", "first", "first"],
...             ["second", "first", "second", "first"])
>>> f.consistent, f.inconsistent, f.first_won, f.right, f.decided
(3, 1, 1, 3, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from judgekit.stats.metrics import NAN, clopper_pearson, wilson

Answer = Literal["first", "second", "tie"]
Outcome = Literal["a", "b", "tie", "inconsistent", "abstained"]
_A_FIRST: dict[str, Outcome] = {"first": "a", "second": "b", "tie": "tie"}  # `a` first: who won
_B_FIRST: dict[str, Outcome] = {"first": "b", "second": "a", "tie": "tie"}  # `b` shown first


_ONE: dict[str, Outcome] = dict(_A_FIRST)  # one order: the answer with `a` first, read alone


def outcome(a_first: Answer | None, b_first: Answer | None) -> Outcome:
    """The pair's outcome from the answer with `a` shown first and the one with `b` shown first:
    the reply both prefer (or `tie`), `inconsistent` when they disagree, `abstained` when either
    could not be read."""
    if a_first is None or b_first is None:
        return "abstained"
    for answer in (a_first, b_first):
        if answer not in _A_FIRST:
            raise ValueError(f"answer {answer!r}: give first, second, tie or None")
    said_first, said_second = _A_FIRST[a_first], _B_FIRST[b_first]
    return said_first if said_first == said_second else "inconsistent"


@dataclass(frozen=True)
class PairwiseFigures:
    """What a pairwise judge showed on labelled pairs.

    `decided`: pairs with a verdict (consistent; inconsistent ones too when they are read as
    ties); `right`: of them, the verdict equal to the label; `accuracy` = right / decided with
    its 95% Wilson interval. `consistency` = consistent / (pairs answered in both orders), with
    its exact 95% interval (`clopper_pearson`: a gate on its lower bound passes an inconsistent
    judge at most 2.5% of the time). Of the `inconsistent` pairs, `first_won` / `second_won`
    count those where one position won both orders (the rest mix a tie with a side);
    `first_share` is first_won / (first_won + second_won) with its exact (Clopper-Pearson) 95%
    interval, and `position_p` the two-sided exact binomial test of a share of 1/2 (1.0 with no
    such pair). `first_decided_interval` / `second_decided_interval`: the exact 95% intervals
    of the share of answered pairs each position won in both orders, what the gate's
    `max_position_bias` bounds (a perfectly consistent judge has none; one that always picks the
    first position has all).
    """

    n: int
    abstained: int
    consistent: int
    inconsistent: int
    decided: int
    right: int
    accuracy: float
    accuracy_interval: tuple[float, float]
    consistency: float
    consistency_interval: tuple[float, float]
    first_won: int
    second_won: int
    first_share: float
    first_share_interval: tuple[float, float]
    position_p: float
    answered: int = 0
    first_decided_interval: tuple[float, float] = (NAN, NAN)
    second_decided_interval: tuple[float, float] = (NAN, NAN)

    @property
    def first_decided(self) -> float:
        """The share of the pairs answered in both orders that the first position won both times:
        pairs a position, not a reply, decided."""
        return self.first_won / self.answered if self.answered else NAN

    @property
    def second_decided(self) -> float:
        return self.second_won / self.answered if self.answered else NAN


def figures(
    labels: Sequence[str],
    a_first: Sequence[Answer | None],
    b_first: Sequence[Answer | None],
    inconsistent_as: Literal["abstention", "tie"] = "abstention",
    one_order: bool = False,
) -> PairwiseFigures:
    """The figures of a pairwise judge on labelled pairs: `labels` are `a`, `b` or `tie`; the
    answers are per pair, in the two orders. An inconsistent pair is left out of the accuracy
    (`abstention`) or counted as a tie verdict (`tie`), as the policy says; it is never a win.

    `one_order`: the judge was asked with `a` first only (`b_first` all None), as another tool
    may have recorded it: its verdict is that answer's, and nothing measures its consistency or
    position preference (their figures are undefined: NaN, no pair answered in both orders).
    """
    from scipy.stats import binomtest

    if not len(labels) == len(a_first) == len(b_first):
        raise ValueError(
            f"{len(labels)} labels, {len(a_first)} and {len(b_first)} answers: give one of each "
            "per pair"
        )
    if inconsistent_as not in ("abstention", "tie"):
        raise ValueError(f"inconsistent_as={inconsistent_as!r}: use abstention or tie")
    for label in labels:
        if label not in ("a", "b", "tie"):
            raise ValueError(f"label {label!r}: give a, b or tie")
    if one_order and any(y is not None for y in b_first):
        raise ValueError("one_order: give no answer with b shown first")
    outcomes = (
        [_ONE.get(x or "", "abstained") for x in a_first]
        if one_order
        else [outcome(x, y) for x, y in zip(a_first, b_first, strict=True)]
    )
    verdicts = ["tie" if o == "inconsistent" and inconsistent_as == "tie" else o for o in outcomes]
    decided = [(y, v) for y, v in zip(labels, verdicts, strict=True) if v in ("a", "b", "tie")]
    right = sum(y == v for y, v in decided)
    # asked in one order, no pair shows whether its two orders agree
    consistent = 0 if one_order else sum(o in ("a", "b", "tie") for o in outcomes)
    inconsistent = outcomes.count("inconsistent")
    first_won = sum(
        1
        for o, x, y in zip(outcomes, a_first, b_first, strict=True)
        if o == "inconsistent" and x == "first" and y == "first"
    )
    second_won = sum(
        1
        for o, x, y in zip(outcomes, a_first, b_first, strict=True)
        if o == "inconsistent" and x == "second" and y == "second"
    )
    sided = first_won + second_won
    p = float(binomtest(first_won, sided, 0.5).pvalue) if sided else 1.0
    answered = consistent + inconsistent
    return PairwiseFigures(
        n=len(labels),
        abstained=outcomes.count("abstained"),
        consistent=consistent,
        inconsistent=inconsistent,
        decided=len(decided),
        right=right,
        accuracy=right / len(decided) if decided else NAN,
        accuracy_interval=wilson(right, len(decided)),
        consistency=consistent / answered if answered else NAN,
        consistency_interval=clopper_pearson(consistent, answered),
        first_won=first_won,
        second_won=second_won,
        first_share=first_won / sided if sided else NAN,
        first_share_interval=clopper_pearson(first_won, sided),
        position_p=p,
        answered=answered,
        first_decided_interval=clopper_pearson(first_won, answered),
        second_decided_interval=clopper_pearson(second_won, answered),
    )
