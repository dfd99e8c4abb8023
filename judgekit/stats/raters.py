"""Agreement among several raters — annotators of a calibration set, or a judge's repeated
trials: Fleiss' kappa, Krippendorff's alpha (nominal), per-item stability. Pure functions.

Items are rows and raters columns; a missing rating is None.

>>> round(fleiss_kappa([[True, True, True], [False, False, True], [False, False, False]]), 3)
0.55
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence

NAN = float("nan")


def fleiss_kappa(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """Fleiss' kappa. It needs the same number (>= 2) of ratings for every item, not the same
    raters: each item may be rated by its own k of N raters (a missing rating is None, left out).

    >>> round(fleiss_kappa([[1, 1, None], [None, 0, 0], [1, None, 0]]), 3)
    0.333
    """
    rows = [[x for x in r if x is not None] for r in ratings]
    if not rows:
        return NAN
    m = len(rows[0])
    if m < 2 or any(len(r) != m for r in rows):
        raise ValueError(
            "Fleiss' kappa needs the same number (at least 2) of ratings for every item"
        )
    counts = [Counter(r) for r in rows]
    n = len(rows)
    agreement = sum((sum(c * c for c in row.values()) - m) / (m * (m - 1)) for row in counts) / n
    totals: Counter[Hashable] = Counter()
    for row in counts:
        totals.update(row)
    expected = sum((v / (n * m)) ** 2 for v in totals.values())
    return NAN if expected >= 1 else (agreement - expected) / (1 - expected)


def krippendorff_alpha(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha for nominal data; items with fewer than two ratings are left out."""
    units = [[x for x in row if x is not None] for row in ratings]
    units = [u for u in units if len(u) >= 2]
    coincidences: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in units:
        m = len(unit)
        for i, a in enumerate(unit):
            for j, b in enumerate(unit):
                if i != j:
                    coincidences[(a, b)] += 1 / (m - 1)
    totals: defaultdict[Hashable, float] = defaultdict(float)
    for (a, _), value in coincidences.items():
        totals[a] += value
    n = sum(totals.values())
    if n <= 1:
        return NAN
    observed = sum(v for (a, b), v in coincidences.items() if a != b)
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b) / (n - 1)
    return NAN if expected == 0 else 1 - observed / expected


def item_stability(ratings: Sequence[Sequence[Hashable | None]]) -> list[float]:
    """Per item, the share of its ratings that agree with its most common one (1.0 = stable)."""
    out = []
    for row in ratings:
        given = [x for x in row if x is not None]
        out.append(Counter(given).most_common(1)[0][1] / len(given) if given else NAN)
    return out


def flip_rate(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """The share of items whose ratings (None left out) are not all the same: a judge's trials
    that flip. NaN when there are no items.

    >>> flip_rate([[True, True], [True, False], [None, False]])
    0.3333333333333333
    """
    if not ratings:
        return NAN
    return sum(1 for row in ratings if len({x for x in row if x is not None}) > 1) / len(ratings)
