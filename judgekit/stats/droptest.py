"""Has a window's pass rate dropped below its baseline's by more than `max_drop`? A one-sided
test of H0: window rate >= baseline rate - max_drop, whose false-alarm rate is at most `alpha`
whatever the two rates.

The Farrington-Manning score test (`drop_p_value`) is asymptotic and alarms too often on small
windows: 1.21% at alpha 1% for a drop of exactly `max_drop` from a baseline of 0.90 (window 200,
baseline 1,400). Where its p-value is below `EXACT_BELOW` x alpha, `drop_test` decides on an
exact unconditional p-value on the same ordering instead, computed so that it is never below
the true one:

- Outcomes are ordered by the score statistic made monotone: each takes the least statistic of
  the outcomes with as many or more window passes and as few or fewer baseline passes. The
  chance of an outcome at least as extreme then falls as the window's rate rises and grows with
  the baseline's, so over H0 it is largest on its boundary (window = baseline - max_drop), and
  over a cell [a, b] of baseline rates it is at most its value at window a - max_drop, baseline b.
- The baseline rate is unknown: the p-value is the largest chance over a Clopper-Pearson
  interval for it at level `alpha / 50`, plus `alpha / 50` (Berger and Boos, 1994). Cells of
  the interval are halved until the bound decides at `alpha`.
- Outcomes too unlikely to enumerate (beyond 1e-10 in either tail) count as extreme, except
  those whose baseline count is so low that the window's rate + max_drop is above the baseline's
  (their statistic is positive, and the p-value is only asked of negative ones).

- Before the grid, a box of outcomes where the statistic provably stays above the observed one
  (`_box`) bounds the p-value by two binomial tails; a steep drop on a window of 200,000 verdicts
  is decided there, without enumerating its millions of outcomes.

Each bound is never below the exact p-value, so an alert on either is one on it: `P(alert) <= alpha`
under H0; benchmarks/monitor_alarms.py sums it exactly over outcomes.

>>> round(drop_p_value(150, 200, 1260, 1400, 0.05), 5)  # 0.75 against 0.90: the score test
0.00012
>>> p, alert = drop_test(150, 200, 1260, 1400, 0.05, alpha=0.01)
>>> round(p, 5), alert  # exact, and never below the true p-value
(0.00053, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

EXACT_BELOW = 10  # the exact p-value is computed where the score test's is below 10 x alpha
NUISANCE = 1 / 50  # share of alpha spent on the interval for the baseline rate
_TAIL = (
    1e-10  # outcomes beyond this tail of either count are not enumerated (they count as extreme)
)
_CELLS = 64  # cells of the baseline rate's interval at first; at most _MAX_CELLS after halving
_MAX_CELLS = 4096
# outcomes kept at most (about 32 MB); beyond, they are scored again for each p-value
_CHUNK = 1 << 22


def score_z(
    window_passed: Any, window_n: int, base_passed: Any, base_n: int, max_drop: float
) -> Any:
    """The Farrington-Manning score statistic of H0: window rate >= baseline rate - max_drop,
    for arrays of counts: the difference of the rates over its standard error at the restricted
    maximum-likelihood rates (the closed form of Miettinen and Nurminen, 1985); -inf / +inf
    where that error is zero."""
    import numpy as np

    x1, x0 = np.asarray(window_passed, dtype=float), np.asarray(base_passed, dtype=float)
    n1, n0, diff = window_n, base_n, -max_drop
    n, x = n1 + n0, x1 + x0
    if diff == 0:
        r0 = r1 = x / n
    else:
        t2 = (n1 + 2 * n0) * diff - n - x
        t1 = (n0 * diff - n - 2 * x0) * diff + x
        t0 = x0 * diff * (1 - diff)
        q = (t2 / (3 * n)) ** 3 - t1 * t2 / (6 * n**2) + t0 / (2 * n)
        root = np.copysign(np.sqrt(np.maximum(0.0, (t2 / (3 * n)) ** 2 - t1 / (3 * n))), q)
        safe = np.where(root != 0, root, 1.0)
        angle = np.where(
            root != 0, (np.pi + np.arccos(np.clip(q / safe**3, -1.0, 1.0))) / 3, np.pi / 3
        )
        r0 = 2 * root * np.cos(angle) - t2 / (3 * n)
        r1 = r0 + diff
    variance = r1 * (1 - r1) / n1 + r0 * (1 - r0) / n0
    numerator = x1 / n1 - x0 / n0 - diff
    z = numerator / np.sqrt(np.where(variance > 0, variance, 1.0))
    return np.where(variance > 0, z, np.where(numerator < 0, -np.inf, np.inf))


def drop_p_value(
    window_passed: int, window_n: int, base_passed: int, base_n: int, max_drop: float
) -> float:
    """One-sided asymptotic p-value of the score test (`score_z`); approximate on small windows."""
    from statistics import NormalDist

    return NormalDist().cdf(float(score_z(window_passed, window_n, base_passed, base_n, max_drop)))


def drop_test(
    window_passed: int, window_n: int, base_passed: int, base_n: int, max_drop: float, alpha: float
) -> tuple[float, bool]:
    """(p-value, significant at `alpha`): the exact p-value where the score test's is below
    `EXACT_BELOW` x alpha, the score test's elsewhere (never significant there)."""
    z = float(score_z(window_passed, window_n, base_passed, base_n, max_drop))
    from statistics import NormalDist

    p = NormalDist().cdf(z)
    if not p < EXACT_BELOW * alpha:
        return p, False
    box = _box(window_n, base_n, base_passed, max_drop, alpha, z)
    if box is not None and box[2] <= alpha:
        return box[2], True
    p = _exact(window_n, base_n, base_passed, max_drop, alpha).p_value(z)
    return p, p <= alpha


def _interval(n0: int, x0: int, spent: float) -> tuple[float, float]:
    """The Clopper-Pearson interval for the baseline rate at level `spent`."""
    from scipy.stats import beta

    low = 0.0 if x0 == 0 else float(beta.ppf(spent / 2, x0, n0 - x0 + 1))
    high = 1.0 if x0 == n0 else float(beta.ppf(1 - spent / 2, x0 + 1, n0 - x0))
    return low, high


def _box(
    n1: int, n0: int, x0: int, drop: float, alpha: float, z: float
) -> tuple[int, int, float] | None:
    """(a1, b0, an upper bound of the exact p-value) from two binomial tails, with no outcome
    enumerated: a steep drop on a large window is decided here in a millisecond, not on a grid of
    millions of outcomes. None where no box is found.

    For window counts >= a1 and baseline counts <= b0, the box B, the statistic is above `z`:
    where the numerator N = x1/n1 - x0/n0 + max_drop is >= 0 it is >= 0 > z, and elsewhere
    N >= N_min = a1/n1 - b0/n0 + max_drop and the restricted rate r0, which lies between x1/n1 +
    max_drop and x0/n0, lies in [a1/n1 + max_drop, b0/n0], where the variance, concave in r0, is
    least at an end: z >= N_min / its least standard error. B holds the outcomes the monotone
    statistic of a point of B looks at, so an outcome at least as extreme as `z` is outside B: the
    window count is below a1 (likeliest at the interval's low rate - max_drop) or the baseline
    count above b0 (likeliest at its high rate). The tails are tried from 1e-15 to 1e-6, so the
    bound is at most alpha / 50 + 2e-6, the least the grid's can be (alpha / 50) and a hair."""
    from scipy.stats import binom

    if not -math.inf < z < 0:  # the box bounds negative statistics only
        return None
    spent = alpha * NUISANCE
    low, high = _interval(n0, x0, spent)
    p1 = max(0.0, low - drop)
    for tail in (1e-15, 1e-12, 1e-9, 1e-6):
        a1, b0 = int(binom.ppf(tail, n1, p1)), int(binom.isf(tail, n0, high))
        lowest, highest = a1 / n1 + drop, b0 / n0
        if lowest > highest:  # every numerator in B is > 0
            least = math.inf
        else:
            variance = min(
                (r - drop) * (1 - r + drop) / n1 + r * (1 - r) / n0 for r in (lowest, highest)
            )
            if not variance > 0:
                continue
            least = (lowest - highest) / math.sqrt(variance)
        if least * (1 + 1e-9) > z:  # a margin for the rounding of both statistics
            return (
                a1,
                b0,
                min(1.0, float(binom.cdf(a1 - 1, n1, p1)) + float(binom.sf(b0, n0, high)) + spent),
            )
    return None


@lru_cache(maxsize=4)  # a window's baseline is shared by every outcome of the window (benchmarks)
def _exact(window_n: int, base_n: int, base_passed: int, max_drop: float, alpha: float) -> _Exact:
    return _Exact(window_n, base_n, base_passed, max_drop, alpha)


class _Exact:
    """The exact p-value for one window size and one baseline, at any observed statistic."""

    def __init__(self, n1: int, n0: int, x0: int, max_drop: float, alpha: float):
        import numpy as np
        from scipy.stats import binom

        self.n1, self.n0, self.drop, self.alpha = n1, n0, max_drop, alpha
        self.spent = alpha * NUISANCE
        low, high = _interval(n0, x0, self.spent)
        # The outcomes enumerated: window counts [L1, U1] x baseline counts [L, U], every count
        # likely under some rate of the interval.
        L1 = int(binom.ppf(_TAIL, n1, max(0.0, low - max_drop)))
        U1 = int(binom.isf(_TAIL, n1, max(0.0, high - max_drop)))
        L, U = int(binom.ppf(_TAIL, n0, low)), int(binom.isf(_TAIL, n0, high))
        # Grown so that every outcome beyond them that the monotone statistic of an enumerated one
        # looks at has window rate + max_drop >= baseline rate, hence a statistic >= 0 (below, the
        # p-value is asked only of negative statistics).
        U1 = min(n1, max(U1, math.ceil(n1 * (U / n0 - max_drop)) + 1))
        L = max(0, min(L, math.floor(n0 * (L1 / n1 + max_drop)) - 1))
        self.L1, self.U1, self.L, self.U = L1, U1, L, U
        self.rows = np.arange(L1, U1 + 1)
        small = len(self.rows) * (U - L + 1) <= _CHUNK
        self.hull = np.concatenate([h for _, h in self._hull()][::-1]) if small else None
        edges = np.linspace(low, high, _CELLS + 1)
        self.cells = (edges[:-1], edges[1:])
        self.tables = self._tables(*self.cells)

    def _hull(self) -> Iterator[tuple[slice, Any]]:
        """The monotone statistic on the enumerated outcomes where it is negative (+inf where it is
        not: the p-value is asked only of negative statistics), in chunks of rows from the top."""
        import numpy as np

        cols = np.arange(self.L, self.U + 1)
        step = max(1, min(64, _CHUNK // len(cols)))
        above = np.full(len(cols), np.inf)
        for stop in range(len(self.rows), 0, -step):
            start = max(0, stop - step)
            rows = self.rows[start:stop]
            # Left of this column, every row here has window rate + max_drop >= baseline rate:
            # z >= 0.
            first = min(
                len(cols),
                max(0, math.floor(self.n0 * (rows[0] / self.n1 + self.drop)) - 1 - self.L),
            )
            z = np.full((len(rows), len(cols)), np.inf)
            z[:, first:] = score_z(rows[:, None], self.n1, cols[None, first:], self.n0, self.drop)
            z = np.minimum.accumulate(z, axis=1)  # the least over fewer baseline passes
            # ... and more window passes
            z = np.minimum.accumulate(np.vstack([above, z[::-1]]), axis=0)[1:][::-1]
            above = z[0]
            yield slice(start, stop), z

    def _first_extreme(self, z: float) -> Any:
        """Per window count, the least baseline count whose outcome is as extreme as `z` or more."""
        import numpy as np

        if self.hull is not None:
            return self.L + (self.hull > z).sum(axis=1)
        counts = np.empty(len(self.rows), dtype=int)
        for rows, hull in self._hull():
            counts[rows] = (hull > z).sum(axis=1)
        return self.L + counts

    def _tables(self, a: Any, b: Any) -> dict[str, tuple[Any, Any, Any]]:
        """Per cell [a, b] of baseline rates: the window-count probabilities and the baseline-count
        tail probabilities at its worst corner (window a - drop, baseline b) and at its middle."""
        import numpy as np
        from scipy.stats import binom

        cols = np.arange(self.L - 1, self.U + 1)
        middle = (a + b) / 2
        out = {}
        for name, p1, p0 in (
            ("corner", np.maximum(0.0, a - self.drop), b),
            ("middle", np.maximum(0.0, middle - self.drop), middle),
        ):
            rows = binom.pmf(self.rows[None, :], self.n1, p1[:, None])
            # column j: P(baseline > L - 1 + j)
            tails = binom.sf(cols[None, :], self.n0, p0[:, None])
            beyond = binom.cdf(self.L1 - 1, self.n1, p1) + binom.sf(self.U1, self.n1, p1)
            out[name] = (rows, tails, beyond)
        return out

    def _bounds(self, tables: dict[str, tuple[Any, Any, Any]], first: Any) -> tuple[Any, Any]:
        """Per cell: an upper bound of the chance of an outcome at least as extreme (anywhere in the
        cell, outcomes not enumerated counted as extreme) and a lower bound (at its middle)."""
        import numpy as np

        rows, tails, beyond = tables["corner"]
        at = np.broadcast_to(first - self.L, rows.shape)
        upper = (rows * np.take_along_axis(tails, at, axis=1)).sum(axis=1) + beyond
        rows, tails, _ = tables["middle"]
        lower = (rows * (np.take_along_axis(tails, at, axis=1) - tails[:, -1:])).sum(axis=1)
        return upper, lower

    def p_value(self, z: float, rounds: int = 30) -> float:
        """An upper bound of the exact p-value of an outcome whose score statistic is `z`; the cells
        that could hold the largest chance are halved until the bound decides at alpha (or, rarely,
        until there are too many: the bound, above alpha, then stands)."""
        import numpy as np

        if not z < 0:
            return 1.0
        first = self._first_extreme(z)
        a, b = self.cells
        upper, lower = self._bounds(self.tables, first)
        for _ in range(rounds):
            if upper.max() + self.spent <= self.alpha or lower.max() + self.spent > self.alpha:
                break
            split = upper + self.spent > self.alpha
            # undecided: no alert (the bound stays above alpha)
            if len(a) + split.sum() > _MAX_CELLS:
                break
            middle = (a[split] + b[split]) / 2
            new_a, new_b = np.concatenate([a[split], middle]), np.concatenate([middle, b[split]])
            new_upper, new_lower = self._bounds(self._tables(new_a, new_b), first)
            a, b = np.concatenate([a[~split], new_a]), np.concatenate([b[~split], new_b])
            upper, lower = (
                np.concatenate([upper[~split], new_upper]),
                np.concatenate([lower[~split], new_lower]),
            )
        return min(1.0, float(upper.max()) + self.spent)
