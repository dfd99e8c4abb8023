"""Where the next labels go when examples are drawn from a pool by the judge's verdict (`judgekit
label --next`): Neyman allocation, greedily, a label at a time, to shrink the variance of the rate
that decides the gate (judgekit.stats.design weights what is drawn).

>>> allocate({"pass": Stratum(900, 0), "fail": Stratum(100, 0)}, 10, "tnr", 0.8)
{'pass': 8, 'fail': 2}
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass

from judgekit.stats.design import MIN_PER_STRATUM, PRIOR, RATES


@dataclass(frozen=True)
class Stratum:
    """One stratum of a pool, for allocation: its size, the examples already labelled from it, and
    how many of those fell in each cell (tp, fp, tn, fn) for the judge as it is."""

    size: int
    labelled: int
    cells: tuple[int, int, int, int] = (0, 0, 0, 0)


def allocate(
    strata: Mapping[str, Stratum],
    n: int,
    rate: str,
    current: float | None = None,
    fresh: int = 0,
) -> dict[str, int]:
    """How many of the next `n` labels each stratum gets, to shrink the variance of `rate` (tpr or
    tnr) most: `fresh` new ones in each stratum with replies left first (a planned round after
    the first: what the estimate over rounds rests on, judgekit.stats.unbiased; the caller checks
    that `n` holds them), at least MIN_PER_STRATUM in each stratum, then one label at a time where
    it lowers N_h^2 S_h^2 / n_h most (S_h^2: the variance of the rate's linearised value in the
    stratum, from its labels so far, each cell's share smoothed by half a count). `current` is the
    rate as estimated now (0.8 when unknown)."""
    numerator, denominator = RATES[rate]
    r = 0.8 if current is None or math.isnan(current) else min(max(current, 0.05), 0.95)
    spread = {}
    for name, s in strata.items():
        shares = [(k + PRIOR) / (sum(s.cells) + 4 * PRIOR) for k in s.cells]
        z = [
            (1.0 if i in numerator else 0.0) - r * (1.0 if i in denominator else 0.0)
            for i in range(4)
        ]
        mean = sum(p * v for p, v in zip(shares, z, strict=True))
        spread[name] = s.size * math.sqrt(
            max(sum(p * v * v for p, v in zip(shares, z, strict=True)) - mean * mean, 1e-12)
        )
    taken = {name: 0 for name in strata}
    room = {name: s.size - s.labelled for name, s in strata.items()}
    left = n
    for name in sorted(strata):
        taken[name] = min(fresh, room[name], left)
        left -= taken[name]
    for least in range(1, MIN_PER_STRATUM + 1):  # one in every stratum before a second in any
        for name, s in sorted(strata.items()):
            first = min(max(least - s.labelled - taken[name], 0), room[name] - taken[name], left)
            taken[name] += first
            left -= first

    def gain(name: str) -> float:
        have = strata[name].labelled + taken[name]
        return spread[name] ** 2 * (1 / have - 1 / (have + 1)) if have else math.inf

    queue = [(-gain(name), name) for name in strata if room[name] > taken[name]]
    heapq.heapify(queue)
    while left > 0 and queue:
        _, name = heapq.heappop(queue)
        taken[name] += 1
        left -= 1
        if room[name] > taken[name]:
            heapq.heappush(queue, (-gain(name), name))
    return taken
