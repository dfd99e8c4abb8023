"""Agreement between a judge's verdicts and human labels: pure functions, no I/O.

The positive class is *pass*. Abstentions (verdict None) are counted, and left out of the
confusion matrix. A metric whose denominator is zero is NaN (null in JSON), never 0.

>>> m = calibration([True, True, False, False], [True, None, False, True])
>>> (m.confusion.tp, m.confusion.fn, m.confusion.tn, m.confusion.fp, m.abstained)
(1, 0, 1, 1, 1)
>>> m.metrics["tpr"], m.metrics["tnr"]
(1.0, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported inside the functions that need it, not with the module
    import numpy as np
    from numpy.typing import NDArray

NAN = float("nan")
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Confusion:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    @property
    def decided(self) -> int:
        return self.tp + self.fp + self.tn + self.fn


def confusion(labels: Sequence[bool], verdicts: Sequence[bool | None]) -> tuple[Confusion, int]:
    """Count the confusion cells over decided examples, and the abstentions."""
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(labels)} labels but {len(verdicts)} verdicts")
    tp = fp = tn = fn = abstained = 0
    for label, verdict in zip(labels, verdicts, strict=True):
        if verdict is None:
            abstained += 1
        elif verdict:
            tp, fp = (tp + 1, fp) if label else (tp, fp + 1)
        else:
            fn, tn = (fn + 1, tn) if label else (fn, tn + 1)
    return Confusion(tp, fp, tn, fn), abstained


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else NAN


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a proportion; (NaN, NaN) when there are no trials."""
    if trials == 0:
        return (NAN, NAN)
    z = _z(confidence)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return (max(0.0, centre - half), min(1.0, centre + half))


def clopper_pearson(
    successes: int, trials: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a proportion: each side errs at most (1 -
    confidence) / 2 of the time whatever the true proportion, so a gate on either bound errs no
    more; (NaN, NaN) when there are no trials.

    >>> clopper_pearson(0, 10)[0], round(clopper_pearson(10, 10)[0], 3)
    (0.0, 0.692)
    """
    from scipy.stats import beta

    if trials == 0:
        return (NAN, NAN)
    tail = (1 - confidence) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, trials - successes + 1))
    high = (
        1.0 if successes == trials else float(beta.ppf(1 - tail, successes + 1, trials - successes))
    )
    return (low, high)


def kappa_from_counts(tp: float, fp: float, tn: float, fn: float) -> float:
    """Cohen's kappa of a 2x2 table; NaN when chance agreement is total (both sides constant)."""
    n = tp + fp + tn + fn
    if n == 0:
        return NAN
    observed = (tp + tn) / n
    expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
    return NAN if expected >= 1 else (observed - expected) / (1 - expected)


def mcc_from_counts(tp: float, fp: float, tn: float, fn: float) -> float:
    """Matthews correlation; NaN when a row or column of the table is empty."""
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return NAN if denominator == 0 else (tp * tn - fp * fn) / math.sqrt(denominator)


def kappa_of_cells(cells: NDArray[Any]) -> NDArray[np.float64]:
    """Cohen's kappa of many 2x2 tables at once; `cells` has columns tp, fp, tn, fn."""
    import numpy as np

    tp, fp, tn, fn = (cells[..., i].astype(float) for i in range(4))
    n = tp + fp + tn + fn
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (tp + tn) / n
        expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
        return np.where(expected >= 1, np.nan, (observed - expected) / (1 - expected))


def kappa_interval(
    labels: Sequence[bool],
    verdicts: Sequence[bool],
    seed: int = 0,
    draws: int = 9999,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """Equal-tailed interval for Cohen's kappa over decided examples: Jeffreys posterior, seeded.

    The four cells of the 2x2 table get the Jeffreys prior Dirichlet(1/2, 1/2, 1/2, 1/2); kappa
    is computed on `draws` seeded draws from the posterior Dirichlet(cells + 1/2) and the
    interval is their central `confidence` share. Why not the bootstrap: at n = 30 a BCa
    bootstrap covers 97-99% (too wide) and collapses to a point under perfect agreement, while
    percentile and Wald intervals cover 91-92%; this interval covers 94-96% at n = 30 and
    n = 100 on the cells measured in `benchmarks/coverage.py`, and a perfect table still gets
    an honest lower bound.

    >>> low, high = kappa_interval([True] * 10 + [False] * 10, [True] * 10 + [False] * 10)
    >>> 0.5 < low < high <= 1.0
    True
    """
    import numpy as np

    cells = np.array(_cells(labels, verdicts), dtype=float)
    n = int(cells.sum())
    if n < 2 or math.isnan(kappa_from_counts(*cells)):
        return (NAN, NAN)
    posterior = kappa_of_cells(np.random.default_rng(seed).dirichlet(cells + 0.5, size=draws))
    posterior = posterior[np.isfinite(posterior)]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(posterior, [tail, 100 - tail])
    # At the edges (perfect or perfectly wrong agreement) the posterior lies just inside the
    # estimate; an interval is not shown beside a figure it leaves out.
    estimate = kappa_from_counts(*cells)
    return (float(min(low, estimate)), float(max(high, estimate)))


def _cells(labels: Sequence[bool], verdicts: Sequence[bool]) -> tuple[int, int, int, int]:
    c, _ = confusion(labels, verdicts)
    return c.tp, c.fp, c.tn, c.fn


@dataclass(frozen=True)
class Calibration:
    """Every agreement figure of one criterion's judge against its labels."""

    confusion: Confusion
    n: int
    abstained: int
    metrics: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)


def calibration(
    labels: Sequence[bool], verdicts: Sequence[bool | None], seed: int = 0
) -> Calibration:
    """Confusion, rates, kappa and MCC with 95% intervals (Wilson for rates, Jeffreys posterior
    for kappa)."""
    c, abstained = confusion(labels, verdicts)
    tp, fp, tn, fn = c.tp, c.fp, c.tn, c.fn
    n = c.decided
    tpr, tnr = ratio(tp, tp + fn), ratio(tn, tn + fp)
    precision = ratio(tp, tp + fp)
    metrics = {
        "tpr": tpr,
        "tnr": tnr,
        "precision": precision,
        "npv": ratio(tn, tn + fn),
        "accuracy": ratio(tp + tn, n),
        "balanced_accuracy": (tpr + tnr) / 2,
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
        # the negative class's F1: finding the bad replies
        "f1_fail": ratio(2 * tn, 2 * tn + fn + fp),
        "macro_f1": (ratio(2 * tp, 2 * tp + fp + fn) + ratio(2 * tn, 2 * tn + fn + fp)) / 2,
        "cohen_kappa": kappa_from_counts(tp, fp, tn, fn),
        "mcc": mcc_from_counts(tp, fp, tn, fn),
        # of the set, abstentions included
        "prevalence": ratio(sum(1 for label in labels if label), len(labels)),
    }
    decided = [
        (label, verdict)
        for label, verdict in zip(labels, verdicts, strict=True)
        if verdict is not None
    ]
    intervals = {
        "tpr": wilson(tp, tp + fn),
        "tnr": wilson(tn, tn + fp),
        "precision": wilson(tp, tp + fp),
        "accuracy": wilson(tp + tn, n),
        "cohen_kappa": kappa_interval(
            [d[0] for d in decided], [bool(d[1]) for d in decided], seed=seed
        ),
    }
    return Calibration(c, len(labels), abstained, metrics, intervals)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters over any categories (not only pass / fail)."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} ratings against {len(b)}")
    n = len(a)
    if n == 0:
        return NAN
    from collections import Counter

    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[c] * count_b[c] for c in count_a) / (n * n)
    return NAN if expected >= 1 else (observed - expected) / (1 - expected)


def pairwise_kappa(ratings: Mapping[str, Mapping[str, Hashable]]) -> dict[str, float]:
    """Cohen's kappa for every pair of raters, over the items both rated: `{"ana~ben": 0.8}`.

    `ratings` maps a rater to `{item id: rating}`.
    """
    names = sorted(ratings)
    out = {}
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            shared = [item for item in ratings[first] if item in ratings[second]]
            out[f"{first}~{second}"] = cohen_kappa(
                [ratings[first][k] for k in shared], [ratings[second][k] for k in shared]
            )
    return out


def examples_for(
    rate: float, threshold: float, confidence: float = CONFIDENCE, limit: int = 100_000
) -> int | None:
    """The fewest examples from which on a judge with this `rate` would show (Wilson lower bound)
    that it clears `threshold`, at that size and at every larger one up to `limit`; None if it
    cannot (rate <= threshold) or not within `limit`. The bound jitters with the rounding of
    rate * n, so the first n that reaches the threshold can fall below it again: the answer is
    the size that reaches it and stays (equal, on every rate and threshold 0.01 apart, to a scan
    of every size to 100,000: benchmarks/label_budget.py).

    >>> examples_for(1.0, 0.8), examples_for(0.9, 0.8)
    (16, 68)
    """
    if rate <= threshold:
        return None
    z = _z(confidence)

    def worst(m: int) -> float:
        """The bound at m with the least favourable rounding of rate * m: it rises with m, and
        where it reaches the threshold every rounding does."""
        p = max(0.0, rate * m - 0.5) / m
        d = 1 + z * z / m
        return (p + z * z / (2 * m)) / d - z / d * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m))

    n = 1
    while worst(n) < threshold:
        n = n * 2 if n < 64 else n + max(1, n // 8)
        if n > limit:
            return None
    low = max(1, n // 2)
    while low < n:  # the first size from which on the worst rounding reaches it
        middle = (low + n) // 2
        if worst(middle) >= threshold:
            n = middle
        else:
            low = middle + 1
    # below it, the sizes that still reach it with their own rounding, down to one that does not
    while n > 1 and wilson(round(rate * (n - 1)), n - 1, confidence)[0] >= threshold:
        n -= 1
    return n
