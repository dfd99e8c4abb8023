"""A pool's TPR and TNR estimated without bias from labels drawn by the judge's verdict, in rounds
(`judgekit label --next`): pure functions, exact rational arithmetic, no I/O.

The weighted rates of judgekit.stats.design are ratios of unbiased counts, and a ratio of unbiased
counts is not unbiased: with the judge's few false passes hidden in its large pass stratum, the
weighted TNR comes out too high (+0.01 to +0.04 at 60 labels, more when the second round is
allocated from the first; benchmarks/README.md). Here the ratio itself is estimated:

- In a stratum of N replies, B of them of the counted kind (known-bad in a stratum of the judge's
  passes, known-good in one of its fails), a simple random sample of n holding b of them gives
  C(b, k) N^(k) / n^(k), unbiased for C(B, k) (a^(k) the falling factorial a (a-1) ... (a-k+1)).
  Labelled in rounds, each round a simple random sample of what the earlier ones left, the
  round's size chosen from what they found, the products over rounds stay unbiased for the
  multinomial share of C(B, j) (each round's expectation given the earlier ones cancels its own
  size), so `coefficients` weighs the splits of j over the rounds by weights fixed before the
  first draw (each round's planned size: `label --next --rounds`), each later round's part
  bounded by LEAST labels, which every stratum with replies left must get in every round after
  the first: weights or bounds taken from the sizes drawn would bias it.
- Over strata the coefficients convolve: unbiased for C(Y, j), Y the pool's total.
- 1 - TNR = Y / (N_F - W + Y), Y the false passes, W the false fails, N_F the judge's fails in the
  pool; its Newton series in C(Y, j) C(W, k) is exact (`series`), so the estimate is unbiased up
  to the terms past what the labels can say (a stratum's order j is known up to its first
  round's labels plus LEAST a later round): 1e-9 or less where the counted replies of a stratum
  are few beside that, 0.0015 measured where they are not (240 passes, 60 of them bad, rounds of
  20). TPR likewise, the two swapped.

Exact fractions, because the series alternates. judgekit.stats.design applies it to a pool all
of whose labels `label --next` drew, in one round or in the rounds of its plan
(benchmarks/README.md, "The bias of label --next's TNR", has the measurements).

>>> from fractions import Fraction
>>> series([Fraction(1), Fraction(2), Fraction(1)], [Fraction(1)], 10)  # C(Y, j) of Y = 2, W = 0
Fraction(1, 6)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

LEAST = 2  # labels every stratum with replies left gets in each round after the first
# counted replies (false passes and false fails labelled) past which the exact series takes seconds
# (25 s at 400 a side): there the weighted ratio stands (judgekit.stats.design)
SERIES_CAP = 200


@dataclass(frozen=True)
class StratumDraws:
    """One stratum of a pool, all of whose replies the judge `passes` (or fails): its size, and per
    round the replies labelled and how many of them were of the counted kind (known-bad in a pass
    stratum, known-good in a fail stratum)."""

    size: int
    passes: bool
    rounds: tuple[tuple[int, int], ...]


def _falling(a: int, k: int) -> int:
    return math.prod(range(a - k + 1, a + 1))


def _convolve(a: Sequence[Fraction], b: Sequence[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def coefficients(
    size: int, rounds: Sequence[tuple[int, int]], weights: Sequence[Fraction] | None = None
) -> list[Fraction]:
    """e_j, unbiased for C(B, j) (B the stratum's count of the counted kind), from its rounds'
    (labelled, counted) pairs, j = 0 .. what the rounds can say; `weights` the rounds' (fixed
    before the first draw, summing to 1; None: equal)."""
    bounds = [n if r == 0 else min(LEAST, n) for r, (n, _) in enumerate(rounds)]
    if weights is None:
        weights = [Fraction(1, len(rounds))] * len(rounds) if rounds else []
    top = sum(min(b, bound) for (_, b), bound in zip(rounds, bounds, strict=True))
    numerator, norm = [Fraction(1)], [Fraction(1)]
    for (n, b), bound, weight in zip(rounds, bounds, weights, strict=True):
        numerator = _convolve(
            numerator,
            [weight**i * math.comb(b, i) / _falling(n, i) for i in range(min(b, bound) + 1)],
        )
        norm = _convolve(norm, [weight**i / math.factorial(i) for i in range(min(bound, top) + 1)])
    return [
        numerator[j] * _falling(size, j) / (norm[j] * math.factorial(j)) for j in range(top + 1)
    ]


def pooled(
    strata: Sequence[StratumDraws], weights: Sequence[Fraction] | None = None
) -> list[Fraction]:
    """e_j, unbiased for C(total, j), the total over `strata` of their counted kind."""
    out = [Fraction(1)]
    for stratum in strata:
        out = _convolve(out, coefficients(stratum.size, stratum.rounds, weights))
    return out


def series(counted: Sequence[Fraction], other: Sequence[Fraction], total: int) -> Fraction:
    """The estimate of Y / (total - W + Y) from e_j of C(Y, j) (`counted`) and e_k of C(W, k)
    (`other`): the Newton series of the ratio at (0, 0), whose coefficient of C(Y, j) C(W, k) is
    (-1)^(j+1) j (j+k-1)! / ((total-k+1) ... (total+j))."""
    estimate = Fraction(0)
    for j in range(1, len(counted)):
        if not counted[j]:
            continue
        for k, e_k in enumerate(other):
            if e_k:
                span = math.prod(range(total - k + 1, total + j + 1))
                sign = 1 if j % 2 else -1
                coefficient = Fraction(sign * j * math.factorial(j + k - 1), span)
                estimate += coefficient * counted[j] * e_k
    return estimate


def rates(strata: Sequence[StratumDraws], plan: Sequence[int] | None = None) -> tuple[float, float]:
    """(TPR, TNR) of the pool the strata make up, its rounds weighed by their sizes in the `plan`
    fixed before the first draw (None: one round, or equal weights). A rate none of whose class
    was labelled says nothing: the caller shows it as undefined."""
    weights = None
    if plan is not None:
        if any(len(s.rounds) != len(plan) for s in strata) or min(plan, default=0) < 1:
            raise ValueError(f"the strata's rounds do not follow the plan {list(plan)}")
        weights = [Fraction(n, sum(plan)) for n in plan]
    passes = [s for s in strata if s.passes]
    fails = [s for s in strata if not s.passes]
    false_passes, false_fails = pooled(passes, weights), pooled(fails, weights)
    out = []
    for counted, other, total in (
        (false_fails, false_passes, sum(s.size for s in passes)),  # 1 - TPR = W / (N_P - Y + W)
        (false_passes, false_fails, sum(s.size for s in fails)),  # 1 - TNR = Y / (N_F - W + Y)
    ):
        out.append(1 - float(series(counted, other, total)))
    return out[0], out[1]
