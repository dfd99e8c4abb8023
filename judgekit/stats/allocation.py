"""Where the next labels go when examples are drawn from a pool by the judge's verdict (`judgekit
label --next`): Neyman allocation, greedily, a label at a time, to shrink the variance of the rate
that decides the gate (judgekit.stats.design weights what is drawn).

>>> allocate({"pass": Stratum(900, 0), "fail": Stratum(100, 0)}, 10, "tnr", 0.8)
{'pass': 8, 'fail': 2}
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judgekit.stats.design import MIN_PER_STRATUM, PRIOR, RATES, weights
from judgekit.stats.drawn import DesignError, Drawn
from judgekit.stats.unbiased import LEAST

ABSTAINED = "abstained"  # the stratum of the replies the judge abstained on


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


def state_of(
    sizes: Mapping[str, int], labelled: Sequence[tuple[str, bool, bool | None]]
) -> dict[str, Stratum]:
    """Each stratum of a pool as its labelled replies, (stratum, label, the judge's verdict), leave
    it: `label --next` allocates from it, and calibrate and the gate derive that again, so both
    count the cells here (a verdict of None counts in no cell)."""
    count = Counter(stratum for stratum, _, _ in labelled)
    cells = {stratum: [0, 0, 0, 0] for stratum in sizes}
    for stratum, label, verdict in labelled:
        if verdict is not None and stratum in cells:
            cells[stratum][(0 if label else 1) if verdict else (3 if label else 2)] += 1
    return {
        s: Stratum(size, count[s], (cells[s][0], cells[s][1], cells[s][2], cells[s][3]))
        for s, size in sizes.items()
    }


def own_rate(strata: Mapping[str, Stratum], rate: str) -> float | None:
    """`rate` (tpr or tnr) of the pool from its own labels so far: each stratum's cells weighted by
    its size over its labels (None where none of the rate's class is labelled)."""
    numerator, denominator = RATES[rate]
    cells = [0.0, 0.0, 0.0, 0.0]
    for s in strata.values():
        if s.labelled:
            for i, k in enumerate(s.cells):
                cells[i] += s.size * k / s.labelled
    below = sum(cells[i] for i in denominator)
    return sum(cells[i] for i in numerator) / below if below else None


def round_allocation(
    strata: Mapping[str, Stratum], n: int, rate: str, later: bool
) -> dict[str, int]:
    """How many of a round's `n` labels each stratum gets, from what the file of labels holds alone
    (so that the gate can derive it again: judgekit.stats.design): the first round one for the
    judge's abstentions and the rest by the strata's sizes (with no label of the pool yet, every
    stratum's spread is the prior's, whatever the rate); a `later` round LEAST new labels in every
    stratum with replies left, then `allocate` at the pool's own estimate of `rate`."""
    wanted: dict[str, int] = {}
    gone = strata.get(ABSTAINED)
    if gone is not None and gone.size and not gone.labelled and n:
        wanted[ABSTAINED] = 1
    current = own_rate(strata, rate) if later else None
    wanted.update(
        allocate(
            {s: st for s, st in strata.items() if st.size and s != ABSTAINED},
            n - sum(wanted.values()),
            rate,
            current,
            LEAST if later else 0,
        )
    )
    return wanted


def _verdict_of(stratum: str) -> bool | None:
    """The judge's verdict on a stratum's replies, by its name (judgekit.judging.selection)."""
    return None if stratum == ABSTAINED else stratum.startswith("pass")


def verify_design(
    labels: Sequence[bool], verdicts: Sequence[bool | None], drawn: Sequence[Drawn | None]
) -> None:
    """The checks of a set's selection records (DesignError), which calibrate and the gate run on
    the set they read: `weights`' (the places, the rounds, the plan), and for each pool drawn in
    the rounds of its plan by the judge whose verdicts these are, `_replay`'s (each round's sizes
    are the ones label --next allocates)."""
    weights(drawn)
    for pool in sorted({d.pool for d in drawn if d is not None}):
        mine = [i for i, d in enumerate(drawn) if d is not None and d.pool == pool]
        draws = [d for d in (drawn[i] for i in mine) if d is not None]
        said: dict[str, set[bool | None]] = defaultdict(set)
        for i, d in zip(mine, draws, strict=True):
            said[d.stratum].add(verdicts[i])
        # the judge that drew the pool: its verdicts on each stratum's labelled replies are the
        # stratum's (another judge's cells would not be the ones the draw allocated from)
        alike = all(v == {_verdict_of(s)} for s, v in said.items())
        if draws[0].plan is not None and alike:
            _replay([labels[i] for i in mine], [verdicts[i] for i in mine], draws, draws[0].plan)


def _replay(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    draws: Sequence[Drawn],
    plan: tuple[int, ...],
) -> None:
    """Each planned round's sizes, stratum by stratum, are what `label --next` allocates from the
    rounds before it (`round_allocation`: from the set alone). More in a stratum, or a round
    boundary moved between strata, changes which labels weigh how much; fewer is a round whose
    drawn replies the set does not hold, whose labels would choose which of them count. Both
    are refused, the first as an edit, the second until they are labelled."""
    sizes = dict(draws[0].sizes)
    last = min(max(d.round or 1 for d in draws), len(plan))
    for r in range(1, last + 1):
        mine = [d for d in draws if (d.round or 1) == r]
        rates_ = {d.rate for d in mine}
        if len(rates_) != 1 or None in rates_:
            raise DesignError(
                f"pool {draws[0].pool}: the records of round {r} do not name one rate it was "
                "drawn for (tpr or tnr); take them from the files label --next wrote"
            )
        done = [
            (d.stratum, labels[i], verdicts[i]) for i, d in enumerate(draws) if (d.round or 1) < r
        ]
        wanted = round_allocation(state_of(sizes, done), plan[r - 1], str(rates_.pop()), r > 1)
        got = Counter(d.stratum for d in mine)
        shown = [k for k in sorted(sizes) if got[k] or wanted.get(k)]
        if any(got[k] > wanted.get(k, 0) for k in shown):
            raise DesignError(
                f"pool {draws[0].pool}: round {r} holds "
                + ", ".join(f"{got[k]} '{k}'" for k in shown)
                + ", but label --next allocates it "
                + ", ".join(str(wanted.get(k, 0)) for k in shown)
                + " from the pool's sizes and the rounds before it: a record's round, stratum, "
                "sizes or plan edited? Take them from the files label --next wrote"
            )
        missing = {k: wanted.get(k, 0) - got[k] for k in shown if got[k] < wanted.get(k, 0)}
        if missing:
            raise DesignError(
                f"pool {draws[0].pool}: round {r} drew "
                + ", ".join(f"{n} '{k}'" for k, n in missing.items())
                + " more repl"
                + ("y" if sum(missing.values()) == 1 else "ies")
                + " that the set does not hold: a round counts once it is whole (which of its "
                "replies were labelled would otherwise choose the figures); label them "
                "(`judgekit label --next` offers them first) and merge them"
            )
