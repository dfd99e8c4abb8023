"""Accepting a changed judge only on held-out evidence (`judgekit improve`). Pure functions.

The current judge and a candidate judge the same held-out (test-split) examples. The candidate is
accepted when it is right on significantly more of them (one-sided exact McNemar on the examples
where exactly one of the two is right; an abstention counts as wrong) at the look's alpha, and
neither its TPR's nor its TNR's 95% lower bound falls more than `tolerance` below the current
judge's. Every look at a test split spends part of its alpha budget (`look_alpha`: alpha / 2,
alpha / 4, ... over at most `MAX_LOOKS` looks), so that however many changes are tried against
it, the chance of accepting one that is not better stays within the budget.
`benchmarks/improve.py` measures both by simulation, the search's selection on dev included.

>>> a = accept([True] * 50 + [False] * 50, [True] * 30 + [False] * 20 + [False] * 50,
...            [True] * 48 + [False] * 2 + [False] * 50, alpha=0.025)
>>> a.accepted, a.candidate_better, a.current_better, round(a.p_value, 6)
(True, 18, 0, 4e-06)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from judgekit.stats.metrics import wilson

MAX_LOOKS = (
    4  # looks at one test split before fresh examples are needed (the 5th would get alpha / 32)
)


def look_alpha(alpha: float, look: int) -> float | None:
    """The alpha the `look`-th look (from 1) at a test split may spend: alpha / 2**look, so that
    all looks together spend less than alpha; None past MAX_LOOKS (the budget is spent).

    >>> look_alpha(0.05, 1), look_alpha(0.05, 4), look_alpha(0.05, 5)
    (0.025, 0.003125, None)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha}: give a share between 0 and 1, e.g. 0.05")
    if look < 1:
        raise ValueError(f"look={look}: looks count from 1")
    return alpha / 2**look if look <= MAX_LOOKS else None


def better_p(current_better: int, candidate_better: int) -> float:
    """One-sided exact McNemar p-value that the candidate is right more often: P(X >= c) for
    X ~ Bin(b + c, 1/2), b and c the examples only the current / only the candidate gets right.

    >>> better_p(0, 5), better_p(5, 5)
    (0.03125, 0.623046875)
    """
    from scipy.stats import binom

    total = current_better + candidate_better
    return 1.0 if total == 0 else float(binom.sf(candidate_better - 1, total, 0.5))


@dataclass(frozen=True)
class Acceptance:
    """The acceptance test of one candidate against the current judge on held-out examples."""

    accepted: bool
    p_value: float
    alpha: float
    current_better: int  # examples only the current judge gets right
    candidate_better: int
    n: int
    current_right: int
    candidate_right: int
    # tpr / tnr: (current, candidate) 95% lower bounds
    lower_bounds: dict[str, tuple[float | None, float | None]]
    reasons: tuple[str, ...]


def _lower(labels: Sequence[bool], verdicts: Sequence[bool | None], cls: bool) -> float | None:
    mine = [v for y, v in zip(labels, verdicts, strict=True) if y == cls]
    return wilson(sum(1 for v in mine if v is cls), len(mine))[0] if mine else None


def accept(
    labels: Sequence[bool],
    current: Sequence[bool | None],
    candidate: Sequence[bool | None],
    alpha: float,
    tolerance: float = 0.02,
) -> Acceptance:
    """Whether `candidate` is shown better than `current` on labelled examples (see the module)."""
    if not len(labels) == len(current) == len(candidate):
        raise ValueError(
            f"{len(labels)} labels, {len(current)} and {len(candidate)} verdicts: "
            "one of each per example"
        )
    was = [v is not None and v == y for y, v in zip(labels, current, strict=True)]
    now = [v is not None and v == y for y, v in zip(labels, candidate, strict=True)]
    b = sum(1 for x, y in zip(was, now, strict=True) if x and not y)
    c = sum(1 for x, y in zip(was, now, strict=True) if y and not x)
    p = better_p(b, c)
    reasons = []
    if p > alpha:
        reasons.append(
            f"not significantly better on {len(labels)} held-out examples: "
            f"right on {sum(now)} against "
            f"{sum(was)} ({c} only the candidate, {b} only the current judge; "
            "one-sided exact McNemar "
            f"p = {p:.3g} > alpha {alpha:.3g})"
        )
    bounds = {}
    for name, cls in (("tpr", True), ("tnr", False)):
        old, new = _lower(labels, current, cls), _lower(labels, candidate, cls)
        bounds[name] = (old, new)
        if old is not None and new is not None and new < old - tolerance:
            reasons.append(
                f"its {name.upper()} 95% lower bound {new:.2f} is below the current judge's "
                f"{old:.2f} by "
                f"more than the tolerance {tolerance:g}"
            )
    return Acceptance(
        not reasons, p, alpha, b, c, len(labels), sum(was), sum(now), bounds, tuple(reasons)
    )
