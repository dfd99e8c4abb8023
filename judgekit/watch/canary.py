"""How large `judgekit recheck`'s canary must be to see a drift: the power of the re-check's own
decision (judgekit.watch.drift: the flip test against the judge's own noise, and exact McNemar on
agreement with the labels, sharing alpha) against a drop in TPR or TNR, computed exactly.

The model: the canary holds half known-good and half known-bad examples (`CalibrationSet.canary`);
a drop of `drop` in a class's rate turns each of its examples the judge got right into a wrong one
with chance drop / rate (the rest unchanged: no flip elsewhere, which only the drift can cause), so
the flips are Binomial(right, drop / rate). The re-check finds the drift when either test rejects
at alpha / 2. `benchmarks/canary.py` checks the figures against the real `compare` by simulation.

>>> canary_size(1.0, 1.0, alpha=0.05, max_flip_rate=0.02)
54
>>> detectable_drop(10, 1.0, 1.0, alpha=0.05, max_flip_rate=0.02)
0.5
"""

from __future__ import annotations

import math

from judgekit.stats.paired import mcnemar_exact
from judgekit.watch.drift import flip_excess

POWER = 0.8  # the chance the default canary finds a drop of DROP in TPR or TNR
DROP = 0.2
LARGEST = 400  # the largest canary the default grows to


def power(size: int, rate: float, drop: float, alpha: float, max_flip_rate: float) -> float:
    """The chance the re-check finds a drop of `drop` in one class's rate (`rate` before), on a
    canary of `size` examples (half of them of that class)."""
    if drop <= 0:
        return 0.0
    of_class = size // 2
    right = round(of_class * rate)
    turn = min(1.0, drop / rate) if rate > 0 else 0.0
    level = alpha / 2  # the two tests share alpha, as `compare` splits it for an unchanged judge
    found = 0.0
    for flips in range(right + 1):
        if flip_excess(flips, size, max_flip_rate) < level or mcnemar_exact(flips, 0) < level:
            found += math.comb(right, flips) * turn**flips * (1 - turn) ** (right - flips)
    return found


def canary_size(
    tpr: float | None,
    tnr: float | None,
    alpha: float,
    max_flip_rate: float,
    drop: float = DROP,
    target: float = POWER,
) -> int:
    """The smallest even canary (at most LARGEST) whose re-check finds a drop of `drop` in TPR and
    in TNR, each with chance `target`, at the calibrated rates (1.0 where one is unknown)."""
    rates = _rates(tpr, tnr)
    for size in range(2, LARGEST + 1, 2):
        if all(power(size, r, drop, alpha, max_flip_rate) >= target for r in rates):
            return size
    return LARGEST


def detectable_drop(
    size: int,
    tpr: float | None,
    tnr: float | None,
    alpha: float,
    max_flip_rate: float,
    target: float = POWER,
) -> float | None:
    """The smallest drop (in steps of 0.01) in TPR and in TNR that a canary of `size` finds with
    chance `target`; None when even a fall to 0 is not found that often."""
    rates = _rates(tpr, tnr)
    worst = 0.0
    for rate in rates:
        steps = [d / 100 for d in range(1, round(rate * 100) + 1)]
        found = next(
            (d for d in steps if power(size, rate, d, alpha, max_flip_rate) >= target), None
        )
        if found is None:
            return None
        worst = max(worst, found)
    return worst


def _rates(tpr: float | None, tnr: float | None) -> list[float]:
    """The rates the canary is sized at, read from a history that anyone may have written: one
    that is unknown or is no rate (above 1 it would shrink the canary) counts as 1.0."""
    return [r if r is not None and 0 < r <= 1 else 1.0 for r in (tpr, tnr)]


def canary_words(
    size: int, tpr: float | None, tnr: float | None, alpha: float, flips: float
) -> str:
    """What a canary of `size` can see, in one clause."""
    drop = detectable_drop(size, tpr, tnr, alpha, flips)
    if drop is None:
        return (
            f"a canary of {size} examples cannot find even a fall to 0 in TPR or TNR "
            f"{POWER:.0%} of the time; give --size {canary_size(tpr, tnr, alpha, flips)}"
        )
    return (
        f"a canary of {size} examples finds a drop of {drop:.2f} in TPR or TNR "
        f"{POWER:.0%} of the time"
    )
